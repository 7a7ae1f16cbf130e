-- Whether the stay's ZONE_DWELL_EXCEEDED has been raised (0 or 1), so that an evaluator that
-- restarts raises none again for the same stay.
ALTER TABLE collisions ADD COLUMN dwell_reported INTEGER NOT NULL DEFAULT 0;

-- When each device last reported, to within a minute (or a quarter of DeviceOfflineSeconds),
-- and whether it is reported offline (0 or 1): an evaluator that restarts goes on reporting its
-- silence and its return.
CREATE TABLE device_presence (
    mac          TEXT PRIMARY KEY,
    last_seen_us INTEGER NOT NULL,
    offline      INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Where each zone with an occupancy limit stands ('within', 'above', 'below'); `generation`
-- counts its changes, and `published` (0 or 1) says whether the event of the last one is stored
-- in the event journal.
CREATE TABLE zone_occupancy (
    zone_id       TEXT PRIMARY KEY REFERENCES zones (id) ON DELETE CASCADE,
    state         TEXT NOT NULL,
    count         INTEGER NOT NULL,
    generation    INTEGER NOT NULL,
    changed_at_us INTEGER NOT NULL,
    published     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- A device's own DeviceOfflineSeconds (null: the site's).
ALTER TABLE devices ADD COLUMN offline_seconds INTEGER;

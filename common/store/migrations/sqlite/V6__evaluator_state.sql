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

-- Whether the stay's ZONE_DWELL_EXCEEDED has been raised, so that an evaluator that restarts or
-- takes the device's partition over raises none again for the same stay.
ALTER TABLE collisions ADD COLUMN dwell_reported BOOLEAN NOT NULL DEFAULT false;

-- When each device last reported, to within a minute (or a quarter of DeviceOfflineSeconds),
-- and whether it is reported offline: an evaluator that restarts, or takes the device's
-- partition over, goes on reporting its silence and its return.
CREATE TABLE device_presence (
    mac       TEXT PRIMARY KEY,
    last_seen TIMESTAMPTZ NOT NULL,
    offline   BOOLEAN NOT NULL
);

-- Where each zone with an occupancy limit stands ('within', 'above', 'below'), counted over the
-- collisions of every evaluator; `generation` counts its changes, and `published` says whether
-- the event of the last one is stored in the event journal (an evaluator that stopped before
-- storing it stores it after).
CREATE TABLE zone_occupancy (
    zone_id    UUID PRIMARY KEY REFERENCES zones (id) ON DELETE CASCADE,
    state      TEXT NOT NULL,
    count      BIGINT NOT NULL,
    generation BIGINT NOT NULL,
    changed_at TIMESTAMPTZ NOT NULL,
    published  BOOLEAN NOT NULL
);

-- A device's own DeviceOfflineSeconds (null: the site's).
ALTER TABLE devices ADD COLUMN offline_seconds BIGINT;

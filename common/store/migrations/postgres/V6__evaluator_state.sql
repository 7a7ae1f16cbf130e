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

-- Whether the stay's ZONE_DWELL_EXCEEDED has been raised, so that an evaluator that restarts or
-- takes the device's partition over raises none again for the same stay.
ALTER TABLE collisions ADD COLUMN dwell_reported BOOLEAN NOT NULL DEFAULT false;

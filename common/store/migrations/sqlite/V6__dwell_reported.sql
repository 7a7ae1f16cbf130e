-- Whether the stay's ZONE_DWELL_EXCEEDED has been raised (0 or 1), so that an evaluator that
-- restarts raises none again for the same stay.
ALTER TABLE collisions ADD COLUMN dwell_reported INTEGER NOT NULL DEFAULT 0;

-- Every zone write is conditional on the version the writer read, and raises it by one, so that
-- concurrent read-modify-writes cannot overwrite each other (the loser sees a conflict and
-- retries from a fresh read). The API shows the version as the zone's ETag.
ALTER TABLE zones ADD COLUMN version INTEGER NOT NULL DEFAULT 0;

-- One alarm per condition. `open_key` names what an alarm is about (its type, device and zone)
-- while it is not resolved, and is NULL once it is (and on the alarms of earlier releases, one
-- per event), so that at most one unresolved alarm counts the events of each condition.
-- `alarm_events` lists the events each alarm counted, keyed by EventID so that a copy counts
-- nothing; `alarm_clears` keeps when each condition last cleared, so that an alarm raised by an
-- event older than the clearing (the two read in either order) is recorded as cleared.
ALTER TABLE alarms ADD COLUMN open_key TEXT;
ALTER TABLE alarms ADD COLUMN raise_count BIGINT NOT NULL DEFAULT 1;
ALTER TABLE alarms ADD COLUMN last_raised_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE alarms ADD COLUMN last_event_id UUID;
ALTER TABLE alarms ADD COLUMN active BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE alarms ADD COLUMN cleared_us BIGINT;
UPDATE alarms SET last_raised_us = raised_us, last_event_id = alarm_id;
ALTER TABLE alarms ALTER COLUMN last_event_id SET NOT NULL;
CREATE UNIQUE INDEX alarms_open_key ON alarms (open_key);

CREATE TABLE alarm_events (
    event_id UUID PRIMARY KEY,
    alarm_id UUID NOT NULL REFERENCES alarms (alarm_id) ON DELETE CASCADE
);

CREATE TABLE alarm_clears (
    open_key   TEXT PRIMARY KEY,
    cleared_us BIGINT NOT NULL
);

-- Shelving: while a zone or a device is shelved (`target` is `zone:<ZoneID>` or
-- `device:<MAC>`), the events of its conditions open no alarm and count on none.
CREATE TABLE shelves (
    target     TEXT PRIMARY KEY,
    shelved_us BIGINT NOT NULL,
    until_us   BIGINT NOT NULL,
    shelved_by TEXT NOT NULL,
    note       TEXT
);

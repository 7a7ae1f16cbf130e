-- Alarms a person can acknowledge: one row per alarm event (SITE_ALARM, DEVICE_ALARM,
-- ZONE_DWELL_EXCEEDED, DEVICE_OFFLINE), keyed by the event's EventID so that a copy of the event
-- inserts nothing. `state` moves open → acknowledged → resolved (or open → resolved) by
-- conditional updates. Times are microseconds since the epoch, as the listing's cursor names
-- them; the event is kept whole as JSON text.
CREATE TABLE alarms (
    alarm_id          UUID PRIMARY KEY,
    type              TEXT NOT NULL,
    mac               TEXT,
    zone_id           UUID,
    zone_name         TEXT,
    collision_id      UUID,
    raised_us         BIGINT NOT NULL,
    event             TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('open', 'acknowledged', 'resolved')),
    acknowledged_by   TEXT,
    acknowledged_us   BIGINT,
    acknowledged_note TEXT,
    resolved_by       TEXT,
    resolved_us       BIGINT,
    resolved_note     TEXT
);

-- The listing: newest first, then by AlarmID.
CREATE INDEX alarms_raised ON alarms (raised_us DESC, alarm_id DESC);
CREATE INDEX alarms_state_raised ON alarms (state, raised_us DESC, alarm_id DESC);

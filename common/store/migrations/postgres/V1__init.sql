-- zonecast schema, version 1 (PostgreSQL).
-- Zones and connections are kept as the JSON of their validated model type; the columns beside
-- the JSON are the ones the database must index or enforce (identity, listing order, references).

CREATE TABLE zones (
    id   UUID PRIMARY KEY,
    seq  BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    name TEXT NOT NULL,
    spec JSONB NOT NULL
);

-- Devices inside a zone now; written by the evaluator, read for CollidingDevices.
CREATE TABLE collisions (
    zone_id      UUID NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
    mac          TEXT NOT NULL,
    collision_id UUID NOT NULL,
    entry_time   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (zone_id, mac)
);

-- Only written settings are stored; the others take their defaults.
CREATE TABLE settings (
    name   TEXT PRIMARY KEY,
    value  DOUBLE PRECISION NOT NULL,
    active BOOLEAN NOT NULL
);

CREATE TABLE device_radii (
    mac    TEXT PRIMARY KEY,
    radius DOUBLE PRECISION NOT NULL
);

-- `sealed` is encrypted by the caller; the store never sees the plain bundle.
CREATE TABLE certificate_profiles (
    id     UUID PRIMARY KEY,
    seq    BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    name   TEXT NOT NULL,
    sealed BYTEA NOT NULL
);

CREATE TABLE mqtt_connections (
    id                     UUID PRIMARY KEY,
    seq                    BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    certificate_profile_id UUID REFERENCES certificate_profiles (id) ON DELETE RESTRICT,
    spec                   JSONB NOT NULL,
    password_sealed        BYTEA
);

CREATE INDEX mqtt_connections_certificate_profile_id ON mqtt_connections (certificate_profile_id);

-- Forwarder health, one row per connection and forwarder replica.
CREATE TABLE connection_status (
    connection_id UUID NOT NULL REFERENCES mqtt_connections (id) ON DELETE CASCADE,
    replica       TEXT NOT NULL,
    connected     BOOLEAN NOT NULL,
    last_error    TEXT,
    forwarded     BIGINT NOT NULL,
    dropped       BIGINT NOT NULL,
    queued        BIGINT NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (connection_id, replica)
);

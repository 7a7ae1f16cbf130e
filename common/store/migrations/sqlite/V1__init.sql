-- zonecast schema, version 1 (SQLite). Same tables as the PostgreSQL schema; UUIDs are
-- lower-case hyphenated text, times are microseconds since the Unix epoch, booleans 0/1.

CREATE TABLE zones (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    id   TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    spec TEXT NOT NULL
) STRICT;

CREATE TABLE collisions (
    zone_id       TEXT NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
    mac           TEXT NOT NULL,
    collision_id  TEXT NOT NULL,
    entry_time_us INTEGER NOT NULL,
    PRIMARY KEY (zone_id, mac)
) STRICT, WITHOUT ROWID;

CREATE TABLE settings (
    name   TEXT PRIMARY KEY,
    value  REAL NOT NULL,
    active INTEGER NOT NULL
) STRICT;

CREATE TABLE device_radii (
    mac    TEXT PRIMARY KEY,
    radius REAL NOT NULL
) STRICT;

CREATE TABLE certificate_profiles (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    id     TEXT NOT NULL UNIQUE,
    name   TEXT NOT NULL,
    sealed BLOB NOT NULL
) STRICT;

CREATE TABLE mqtt_connections (
    seq                    INTEGER PRIMARY KEY AUTOINCREMENT,
    id                     TEXT NOT NULL UNIQUE,
    certificate_profile_id TEXT REFERENCES certificate_profiles (id) ON DELETE RESTRICT,
    spec                   TEXT NOT NULL,
    password_sealed        BLOB
) STRICT;

CREATE INDEX mqtt_connections_certificate_profile_id ON mqtt_connections (certificate_profile_id);

CREATE TABLE connection_status (
    connection_id TEXT NOT NULL REFERENCES mqtt_connections (id) ON DELETE CASCADE,
    replica       TEXT NOT NULL,
    connected     INTEGER NOT NULL,
    last_error    TEXT,
    forwarded     INTEGER NOT NULL,
    dropped       INTEGER NOT NULL,
    queued        INTEGER NOT NULL,
    updated_at_us INTEGER NOT NULL,
    PRIMARY KEY (connection_id, replica)
) STRICT, WITHOUT ROWID;

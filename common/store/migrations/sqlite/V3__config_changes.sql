-- The configuration change log. Every configuration write is logged after it commits under the
-- next revision; services that have applied revision n read the entries after n, so a missed
-- announcement or a restart costs them nothing. Appends take the write lock, so revisions are
-- written in order and the log has no holes. The newest entries are kept (older ones pruned on
-- append); a service further behind reads everything.
CREATE TABLE config_revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL
);
INSERT INTO config_revision (id, revision) VALUES (1, 0);
CREATE TABLE config_changes (
    revision INTEGER PRIMARY KEY,
    change TEXT NOT NULL,
    logged_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);

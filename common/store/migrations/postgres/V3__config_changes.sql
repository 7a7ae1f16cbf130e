-- The configuration change log. Every configuration write is logged after it commits under the
-- next revision; services that have applied revision n read the entries after n, so a missed
-- announcement or a restart costs them nothing. The single counter row is locked by each append
-- until it commits, so revisions become visible in order and the log has no holes. The newest
-- entries are kept (older ones pruned on append); a service further behind reads everything.
CREATE TABLE config_revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision BIGINT NOT NULL
);
INSERT INTO config_revision (id, revision) VALUES (1, 0);
CREATE TABLE config_changes (
    revision BIGINT PRIMARY KEY,
    change JSONB NOT NULL,
    logged_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

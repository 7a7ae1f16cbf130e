-- Named devices: a name, a group, a kind and free properties per MAC. Tracking needs no row here.
-- The MAC orders the listing and its pages, so it sorts bytewise whatever the server's collation.
-- `name_folded` is the name in lower case as the service folds it, so that a name search finds
-- the same devices on either database. Properties are kept as JSON text: JSONB refuses some
-- strings JSON allows (`\u0000`).
CREATE TABLE devices (
    mac         TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT NOT NULL,
    name_folded TEXT NOT NULL,
    group_name  TEXT,
    kind        TEXT,
    properties  TEXT NOT NULL
);

CREATE INDEX devices_group_name ON devices (group_name, mac);

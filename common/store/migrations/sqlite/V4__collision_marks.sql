-- How far the collisions reflect what the evaluator evaluated, written in the same transaction
-- as the collisions: per position partition, the stream sequence of the last stored batch whose
-- collision changes are written ('partition:<n>'), and the time before which every collision
-- change the evaluator made is written ('through', microseconds since the Unix epoch). The
-- all-in-one, whose positions are not stored, brings its collisions up to date at start from the
-- events journaled after that time.
CREATE TABLE collision_marks (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) STRICT;

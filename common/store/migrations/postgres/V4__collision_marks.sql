-- How far the collisions reflect what the evaluators evaluated, written in the same transaction
-- as the collisions: per position partition, the stream sequence of the last stored batch whose
-- collision changes are written ('partition:<n>'), and the time before which every collision
-- change an evaluator made is written ('through', microseconds since the Unix epoch). A
-- restarted evaluator resumes each partition after its mark, so it never evaluates a position
-- twice against collisions that already reflect it, nor skips one they do not.
CREATE TABLE collision_marks (
    name  TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);

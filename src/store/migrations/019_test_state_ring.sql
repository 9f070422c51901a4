-- The model's ring of recent runs (`model.ring`: one letter per graded run, oldest first) as a
-- column of its own, computed at insert: the board shows each row's raw run counts from it, and
-- reading it out of `model` read the whole JSON state of every row in the page's granules (about
-- half of that read's time, issue 40). Parts written before this migration compute it from
-- `model` when read, until a merge writes it.
ALTER TABLE {db}.test_state
    ADD COLUMN IF NOT EXISTS ring String MATERIALIZED JSONExtractString(model, 'ring');

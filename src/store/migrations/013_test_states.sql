-- Test states (docs/data-model.md "Test states"): where each test stands — new | healthy | flaky |
-- broken | fixed — and where that began (broken: the first failing commit of its mainline; fixed:
-- the first passing one), plus its estimated flake rate (the share of its runs in which it flakes).
-- '' = not scored by this model yet (the next run of the test fills it in).
ALTER TABLE {db}.test_state
    ADD COLUMN IF NOT EXISTS state LowCardinality(String) DEFAULT '',
    ADD COLUMN IF NOT EXISTS state_commit String DEFAULT '',
    ADD COLUMN IF NOT EXISTS state_branch LowCardinality(String) DEFAULT '',
    ADD COLUMN IF NOT EXISTS state_at Nullable(DateTime64(3, 'UTC')),
    ADD COLUMN IF NOT EXISTS flake_rate Float32 DEFAULT 0;

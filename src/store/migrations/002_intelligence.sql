-- Flakiness intelligence: per-test state, quarantine overrides, identity aliases and stitches,
-- error signatures and clusters, CODEOWNERS, and the daily rollups.

-- Worker-owned latest state of each test: its score model state and what it implies.
-- One row per (project, test) and run that touched it; the latest version wins (read FINAL).
CREATE TABLE IF NOT EXISTS {db}.test_state
(
    project_id          UUID,
    test_id             UUID,
    file_path           String,
    suite               String,
    title               String,
    score               Float32,
    candidate           UInt8,
    broken              UInt8,
    samples             UInt32,
    flip_rate           Float32,
    pass_on_rerun_rate  Float32,
    trend               LowCardinality(String),
    last_flaked_at      Nullable(DateTime64(3, 'UTC')),
    reasons             String,                      -- JSON [{code, message}]
    model               String CODEC(ZSTD(3)),       -- JSON ScoreState (bounded size)
    auto_quarantined    UInt8,
    quarantine_reason   String,
    quarantined_at      Nullable(DateTime64(3, 'UTC')),
    clean_runs          UInt32,                      -- clean runs since auto-quarantine
    released_at         Nullable(DateTime64(3, 'UTC')), -- last automatic release
    last_run_id         UUID,
    last_status         LowCardinality(String),
    last_seen_at        DateTime64(3, 'UTC'),
    scored_at           DateTime64(3, 'UTC'),
    applied_lease       String,                      -- the lease whose observation is in `model`
    version             UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (project_id, test_id)
SETTINGS non_replicated_deduplication_window = 10000;

-- API-owned quarantine decisions of people. override '' = `auto` (handed back to the scorer);
-- state_after is the effective state at that moment, kept until the scorer's next run.
CREATE TABLE IF NOT EXISTS {db}.quarantine_overrides
(
    project_id   UUID,
    test_id      UUID,
    override     LowCardinality(String),
    reason       String,
    state_after  UInt8,
    decided_at   DateTime64(3, 'UTC'),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (project_id, test_id);

-- Other fingerprints that resolve to an identity (moved files, renames, manual merges).
CREATE TABLE IF NOT EXISTS {db}.identity_aliases
(
    project_id   UUID,
    fingerprint  String,
    test_id      UUID,
    created_at   DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY (project_id, fingerprint)
SETTINGS non_replicated_deduplication_window = 10000;

-- Stitch history, shown on the test page.
CREATE TABLE IF NOT EXISTS {db}.identity_stitches
(
    project_id      UUID,
    test_id         UUID,
    level           LowCardinality(String),   -- L2 (moved) | L3 (renamed) | manual
    from_file_path  String,
    from_title      String,
    to_file_path    String,
    to_title        String,
    confidence      Float32,
    created_at      DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY (project_id, test_id, created_at, from_file_path, from_title)
SETTINGS non_replicated_deduplication_window = 10000;

-- Error signatures (one per normalised error per project) and their cluster.
CREATE TABLE IF NOT EXISTS {db}.error_signatures
(
    project_id          UUID,
    signature_id        String,
    cluster_id          String,
    error_type          LowCardinality(String),
    normalized_message  String CODEC(ZSTD(3)),
    frames              Array(String) CODEC(ZSTD(3)),
    sketch              Array(UInt32) CODEC(ZSTD(1)),
    similarity          Float32,
    first_seen_at       DateTime64(3, 'UTC'),
    example_execution   UUID
)
ENGINE = ReplacingMergeTree(first_seen_at)
ORDER BY (project_id, signature_id)
SETTINGS non_replicated_deduplication_window = 10000;

-- LSH band keys of each signature: candidate search is an indexed lookup of equal keys.
CREATE TABLE IF NOT EXISTS {db}.signature_bands
(
    project_id    UUID,
    band_key      String,
    signature_id  String
)
ENGINE = ReplacingMergeTree
ORDER BY (project_id, band_key, signature_id)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE TABLE IF NOT EXISTS {db}.codeowners
(
    project_id   UUID,
    content      String CODEC(ZSTD(3)),
    updated_at   DateTime64(3, 'UTC'),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY project_id;

-- Daily rollups, maintained at insert time by materialized views over executions. The targets
-- carry the same deduplication window as executions, so a redelivered insert (same token) is
-- dropped in the views too and nothing is counted twice.
CREATE TABLE IF NOT EXISTS {db}.daily_test_stats
(
    project_id       UUID,
    day              Date,
    test_id          UUID,
    executions       UInt64,
    passed           UInt64,
    failed           UInt64,
    flaky            UInt64,
    skipped          UInt64,
    retries          UInt64,
    duration_ms_sum  UInt64,
    rerun_ms_sum     UInt64
)
ENGINE = SummingMergeTree
ORDER BY (project_id, day, test_id)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.daily_test_stats_mv TO {db}.daily_test_stats AS
SELECT project_id, day, test_id,
       count() AS executions,
       countIf(status = 'pass') AS passed,
       countIf(status = 'fail') AS failed,
       countIf(status = 'flaky' OR (status = 'pass' AND attempt > 1)) AS flaky,  -- a pass on a retry flaked
       countIf(status = 'skip') AS skipped,
       countIf(attempt > 1) AS retries,
       sum(duration_ms) AS duration_ms_sum,
       sumIf(duration_ms, attempt > 1) AS rerun_ms_sum
FROM {db}.executions
GROUP BY project_id, day, test_id;

CREATE TABLE IF NOT EXISTS {db}.suite_daily
(
    project_id       UUID,
    day              Date,
    suite            String,
    executions       UInt64,
    failed           UInt64,
    flaky            UInt64,
    duration_ms_sum  UInt64
)
ENGINE = SummingMergeTree
ORDER BY (project_id, day, suite)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.suite_daily_mv TO {db}.suite_daily AS
SELECT project_id, day, suite,
       countIf(status != 'skip') AS executions,
       countIf(status = 'fail') AS failed,
       countIf(status = 'flaky' OR (status = 'pass' AND attempt > 1)) AS flaky,
       sumIf(duration_ms, status != 'skip') AS duration_ms_sum
FROM {db}.executions
GROUP BY project_id, day, suite;

CREATE TABLE IF NOT EXISTS {db}.flaky_trends
(
    project_id        UUID,
    day               Date,
    executions        SimpleAggregateFunction(sum, UInt64),
    failed            SimpleAggregateFunction(sum, UInt64),
    flaky_executions  SimpleAggregateFunction(sum, UInt64),
    flaky_tests       AggregateFunction(uniq, UUID),
    failing_tests     AggregateFunction(uniq, UUID)
)
ENGINE = AggregatingMergeTree
ORDER BY (project_id, day)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.flaky_trends_mv TO {db}.flaky_trends AS
SELECT project_id, day,
       toUInt64(count()) AS executions,
       toUInt64(countIf(status = 'fail')) AS failed,
       toUInt64(countIf(status = 'flaky' OR (status = 'pass' AND attempt > 1))) AS flaky_executions,
       uniqStateIf(test_id, status = 'flaky' OR (status = 'pass' AND attempt > 1)) AS flaky_tests,
       uniqStateIf(test_id, status = 'fail') AS failing_tests
FROM {db}.executions
GROUP BY project_id, day;

-- When tests became flaky and when they stabilised: MTTR and introduced-vs-resolved come from here.
CREATE TABLE IF NOT EXISTS {db}.test_health_events
(
    project_id  UUID,
    test_id     UUID,
    kind        LowCardinality(String),   -- flaked | stabilized | quarantined | released
    at          DateTime64(3, 'UTC'),
    score       Float32
)
ENGINE = ReplacingMergeTree
ORDER BY (project_id, at, test_id, kind)
SETTINGS non_replicated_deduplication_window = 10000;

-- The recent executions of each test, for the test page. `executions` is partitioned by month, so
-- one test's rows sit in every monthly part and reading them merges a stream per part; this copy is
-- not partitioned, keeps 120 days (TTL), and is filled by a materialized view at insert time
-- (deduplicated with executions, like the rollups).
CREATE TABLE IF NOT EXISTS {db}.test_recent
(
    project_id     UUID,
    test_id        UUID,
    started_at     DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    id             UUID,
    run_id         UUID,
    commit_sha     String,
    branch         LowCardinality(String),
    status         LowCardinality(String),
    attempt        UInt16,
    duration_ms    UInt32,
    error_message  String CODEC(ZSTD(3))
)
ENGINE = MergeTree
ORDER BY (project_id, test_id, started_at)
TTL toDateTime(started_at) + INTERVAL 120 DAY
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.test_recent_mv TO {db}.test_recent AS
SELECT project_id, test_id, started_at, id, run_id, commit_sha, branch, status, attempt, duration_ms, error_message
FROM {db}.executions;

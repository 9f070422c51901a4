-- Test splitting (`flakehouse split`, POST /v1/splits; docs/api.md "Test splitting").

-- How long each test file took in each run: the sum of its executions' durations (retries
-- included: they run on the same shard), kept up to date at insert time by the view below, so a
-- plan reads a few rows per file instead of scanning `executions` (sorted by test, not by file).
-- A run that spans midnight has a row per day; readers group by (file_path, run_id).
CREATE TABLE IF NOT EXISTS {db}.file_run_durations
(
    project_id   UUID,
    file_path    String CODEC(ZSTD(1)),
    day          Date,
    run_id       UUID,
    duration_ms  SimpleAggregateFunction(sum, UInt64) CODEC(T64, ZSTD(1)),
    executions   SimpleAggregateFunction(sum, UInt64) CODEC(T64, ZSTD(1)),
    last_at      SimpleAggregateFunction(max, DateTime64(3, 'UTC')) CODEC(Delta, ZSTD(1))
)
ENGINE = AggregatingMergeTree
ORDER BY (project_id, file_path, day, run_id)
TTL day + INTERVAL 60 DAY
SETTINGS non_replicated_deduplication_window = 10000;

-- The recent history the table starts with. Migrations run before the worker starts, so nothing is
-- inserted between this backfill and the view's creation; the TRUNCATE makes a retry of a migration
-- that failed after the backfill exact instead of counting it twice.
TRUNCATE TABLE IF EXISTS {db}.file_run_durations;

INSERT INTO {db}.file_run_durations
SELECT project_id, file_path, day, run_id,
       sum(toUInt64(duration_ms)) AS duration_ms, count() AS executions, max(started_at) AS last_at
FROM {db}.executions
WHERE day >= today() - 30
GROUP BY project_id, file_path, day, run_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.file_run_durations_mv TO {db}.file_run_durations AS
SELECT project_id, file_path, day, run_id,
       sum(toUInt64(duration_ms)) AS duration_ms, count() AS executions, max(started_at) AS last_at
FROM {db}.executions
GROUP BY project_id, file_path, day, run_id;

-- The split plan of each (build, shard count, file list): the first call of a build stores one,
-- the build's other shards read it. Plain MergeTree, not Replacing: when two shards store a plan at
-- the same instant both rows stay, and every reader picks the same one (the earliest created_at,
-- then the lowest plan_id), forever, merged or not (src/store/splits.ts). created_at is the
-- store's clock at insert, one clock for every daemon writing here.
CREATE TABLE IF NOT EXISTS {db}.split_plans
(
    project_id    UUID,
    build_id      String,
    total         UInt16,
    files_hash    FixedString(64),           -- hex SHA-256 of the sorted file list (domain/split.ts)
    created_at    DateTime64(6, 'UTC') DEFAULT now64(6),
    plan_id       UUID,
    file_count    UInt32,
    shards        String CODEC(ZSTD(3)),     -- JSON string[][]: the files of each shard
    estimated_ms  Array(UInt64),             -- the expected duration of each shard
    unknown_files String CODEC(ZSTD(3)),     -- JSON string[]: files planned at the median
    default_ms    UInt64,
    timed_runs    UInt32                     -- runs of history the timings came from (all files)
)
ENGINE = MergeTree
ORDER BY (project_id, build_id, total, files_hash, created_at, plan_id)
TTL toDateTime(created_at) + INTERVAL 30 DAY;

-- Core tables. `{db}` is replaced with the configured database name.
-- Latest-state tables are ReplacingMergeTree(version): read with FINAL or argMax.

CREATE TABLE IF NOT EXISTS {db}.projects
(
    id          UUID,
    slug        String,
    name        String,
    badge_token String,
    created_at  DateTime64(3, 'UTC'),
    version     UInt64,
    deleted     UInt8 DEFAULT 0
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

CREATE TABLE IF NOT EXISTS {db}.tokens
(
    id          UUID,
    project_id  UUID,
    token_hash  String,          -- SHA-256 hex of the token; the token itself is never stored
    prefix      String,          -- first characters, to recognise a token in listings
    scopes      Array(LowCardinality(String)),
    created_at  DateTime64(3, 'UTC'),
    revoked_at  Nullable(DateTime64(3, 'UTC')),
    version     UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

-- One row per accepted batch, written by the worker when the batch is committed.
CREATE TABLE IF NOT EXISTS {db}.receipts
(
    project_id          UUID,
    receipt_id          UUID,
    idempotency_key     String,
    source              LowCardinality(String),
    run_id              UUID,
    accepted_executions UInt32,
    received_at         DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    processed_at        DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1))
)
ENGINE = ReplacingMergeTree(processed_at)
ORDER BY (project_id, receipt_id)
SETTINGS non_replicated_deduplication_window = 10000;

-- One row per run, latest version wins. A run is one accepted batch, except OTLP runs, which are
-- assembled from every request of their trace (each part writes a new merged version).
CREATE TABLE IF NOT EXISTS {db}.runs
(
    project_id      UUID,
    started_at      DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    id              UUID,
    receipt_id      UUID,
    idempotency_key String,
    source          LowCardinality(String),
    ci_provider     LowCardinality(String),
    ci_run_id       String,
    ci_job_url      String,
    repository      LowCardinality(String),
    commit_sha      String,
    branch          LowCardinality(String),
    base_branch     LowCardinality(String),
    pr_number       Nullable(UInt32),
    trigger         LowCardinality(String),
    shard_index     UInt16,
    shard_total     UInt16,
    status          LowCardinality(String),
    finished_at     Nullable(DateTime64(3, 'UTC')),
    duration_ms     UInt64,
    total           UInt32,
    passed          UInt32,
    failed          UInt32,
    skipped         UInt32,
    flaky           UInt32,
    trace_id        String,
    has_run_span    UInt8,
    status_explicit UInt8,
    ingested_at     DateTime64(3, 'UTC'),
    version         UInt64,
    INDEX idx_started started_at TYPE minmax GRANULARITY 1,
    INDEX idx_commit commit_sha TYPE bloom_filter GRANULARITY 4
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (project_id, id)
SETTINGS non_replicated_deduplication_window = 10000;

-- One row per attempt of a test. Sorted for the per-test history queries the scorer and the
-- test page make; run detail uses the run_id skip index.
CREATE TABLE IF NOT EXISTS {db}.executions
(
    project_id    UUID,
    test_id       UUID,
    started_at    DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    id            UUID,
    run_id        UUID,
    day           Date,
    status        LowCardinality(String),
    attempt       UInt16,
    retry_of      Nullable(UUID),
    duration_ms   UInt32 CODEC(T64, ZSTD(1)),
    file_path     String CODEC(ZSTD(1)),
    suite         String CODEC(ZSTD(1)),
    title         String CODEC(ZSTD(1)),
    params        String CODEC(ZSTD(1)),
    fingerprint   String,
    commit_sha    String,
    branch        LowCardinality(String),
    pr_number     Nullable(UInt32),
    ci_provider   LowCardinality(String),
    trigger       LowCardinality(String),
    error_type    LowCardinality(String),
    error_message String CODEC(ZSTD(3)),
    error_stack   String CODEC(ZSTD(3)),
    signature_id  String DEFAULT '',
    cluster_id    String DEFAULT '',
    artifacts     String CODEC(ZSTD(3)),
    attributes    String CODEC(ZSTD(3)),
    spans         String CODEC(ZSTD(3)),
    trace_id      String,
    span_id       String,
    ingested_at   DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    INDEX idx_run run_id TYPE bloom_filter GRANULARITY 4,
    INDEX idx_id id TYPE bloom_filter GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (project_id, test_id, started_at)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE TABLE IF NOT EXISTS {db}.test_identities
(
    project_id    UUID,
    id            UUID,
    fingerprint   String,
    file_path     String,
    suite         String,
    title         String,
    params        String,
    params_hash   String,
    first_seen_at DateTime64(3, 'UTC'),
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (project_id, id)
SETTINGS non_replicated_deduplication_window = 10000;

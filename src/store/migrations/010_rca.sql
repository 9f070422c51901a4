-- AI root-cause analysis: one analysis per error cluster (every failing execution of the cluster
-- reads it as its report), the tokens the providers counted per project and UTC day, and the
-- days a project's budget ran out (so `ai.budget_spent` goes out once per project and day).

-- status: pending (queued, or paused by the budget) → done | failed; `skipped` when the project
-- turned ai.rca off before it ran (queued again when the cluster fails again). Latest version wins.
CREATE TABLE IF NOT EXISTS {db}.rca_analyses
(
    project_id        UUID,
    cluster_id        String,
    id                UUID,
    signature_id      String,                    -- the signature that opened the cluster's analysis
    execution_id      UUID,                      -- the failing execution the model was shown
    test_id           UUID,
    status            LowCardinality(String),
    summary           String CODEC(ZSTD(3)),
    likely_cause      String CODEC(ZSTD(3)),
    suggested_action  String CODEC(ZSTD(3)),
    confidence        Float32,
    similar_past      String CODEC(ZSTD(3)),     -- JSON [{rcaId, executionId, summary, createdAt}]
    provider          LowCardinality(String),
    llm_model         String,
    input_tokens      UInt32,
    output_tokens     UInt32,
    calls             UInt8,
    error             String,                    -- why it failed: timeout, invalid_output: …, http 500: …
    queued_at         DateTime64(3, 'UTC'),
    completed_at      Nullable(DateTime64(3, 'UTC')),
    version           UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (project_id, cluster_id);

-- One row per model call, with the provider's own usage counts.
CREATE TABLE IF NOT EXISTS {db}.ai_token_usage
(
    project_id     UUID,
    day            Date,
    call_id        String,
    at             DateTime64(3, 'UTC'),
    cluster_id     String,
    provider       LowCardinality(String),
    llm_model      String,
    input_tokens   UInt32,
    output_tokens  UInt32
)
ENGINE = ReplacingMergeTree
ORDER BY (project_id, day, call_id);

CREATE TABLE IF NOT EXISTS {db}.ai_budget_notices
(
    project_id  UUID,
    day         Date,
    budget      UInt64,
    spent       UInt64,
    at          DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY (project_id, day);

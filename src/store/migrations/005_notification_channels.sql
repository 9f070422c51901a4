-- Per-project notification channels (docs/contract.md §9). `source` says who manages a row: 'config'
-- rows are replaced wholesale by PUT /v1/notifications/routing (service.yml, synced by the
-- reporter on each run; shown read-only), 'settings' rows belong to the dashboard. Latest state
-- per (project_id, id) wins; a removed channel is a row with deleted = 1.
CREATE TABLE IF NOT EXISTS {db}.notification_channels
(
    project_id     UUID,
    id             UUID,                          -- stable: config channels hash (project, source, kind, target)
    source         LowCardinality(String),        -- 'config' | 'settings'
    kind           LowCardinality(String),        -- slack | discord | email | webhook
    target         String,                        -- webhook URL or email address
    events         Array(LowCardinality(String)), -- notification event types; empty = every type
    signing_secret Nullable(String),              -- webhook HMAC secret (settings channels); never exported
    created_at     DateTime64(3, 'UTC'),
    updated_at     DateTime64(3, 'UTC'),
    version        UInt64,
    deleted        UInt8 DEFAULT 0
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (project_id, id);

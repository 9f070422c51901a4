-- Merged test identities (issue 39, "duplicates already stored are stitched"): a test stored under
-- two identities is merged into one, the kept `into_test_id`. Executions stay where they are (test_id
-- is in the executions' sort key and the materialized views would count copies twice); instead the
-- merged-from identity's fingerprint resolves to the kept one from then on (an identity alias and
-- this table, read by the identity processor), the board, the quarantine list and the PR gate leave
-- the merged-from test out, and the kept test's history reads both ids. `reason`:
-- `legacy_junit_twin` (src/junit-twin-merge.ts: a JUnit test stored under the pre-fix reading and
-- under the names the reporters use).
CREATE TABLE IF NOT EXISTS {db}.test_merges
(
    project_id    UUID,
    from_test_id  UUID,
    into_test_id  UUID,
    reason        LowCardinality(String),
    merged_at     DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(merged_at)
ORDER BY (project_id, from_test_id)
SETTINGS non_replicated_deduplication_window = 10000;

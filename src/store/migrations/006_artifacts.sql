-- The test page lists each execution's artifacts with download links, and reads its recent
-- executions from test_recent, so test_recent carries the refs too. Rows written before this
-- keep '' (none of them could have an uploaded object: presign did not exist yet).
ALTER TABLE {db}.test_recent ADD COLUMN IF NOT EXISTS artifacts String CODEC(ZSTD(3));

-- The view is recreated rather than altered (the form every ClickHouse version takes); migrations
-- run before this process's worker starts, so none of its inserts falls between the two.
DROP VIEW IF EXISTS {db}.test_recent_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.test_recent_mv TO {db}.test_recent AS
SELECT project_id, test_id, started_at, id, run_id, commit_sha, branch, status, attempt, duration_ms, error_message, artifacts
FROM {db}.executions;

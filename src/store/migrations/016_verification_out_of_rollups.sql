-- Attempts `flakehouse run` made itself to prove something — the re-runs of `--verify-new` and
-- `--verify-fix`, and its retries of failing tests — are evidence, not CI: the scorer reads them
-- (src/processors/scoring.ts), the daily rollups do not. Each is stored marked
-- `flakehouse.verify` (new | fix | retry) in `attributes`, numbered after the test's own attempts
-- (attempt > 1); a new test's own attempts carry the mark too, with attempt 1, and stay in.
-- Before this, ten passing verification re-runs were ten "flaky" executions, re-run time and
-- investigation cost in GET /v1/health. Rows already rolled up stay as they are (the rollups
-- outlive the executions they came from, so they are not rebuilt).
DROP VIEW IF EXISTS {db}.daily_test_stats_mv;

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
WHERE NOT (attempt > 1 AND JSONExtractString(attributes, 'flakehouse.verify') != '')
GROUP BY project_id, day, test_id;

DROP VIEW IF EXISTS {db}.suite_daily_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.suite_daily_mv TO {db}.suite_daily AS
SELECT project_id, day, suite,
       countIf(status != 'skip') AS executions,
       countIf(status = 'fail') AS failed,
       countIf(status = 'flaky' OR (status = 'pass' AND attempt > 1)) AS flaky,
       sumIf(duration_ms, status != 'skip') AS duration_ms_sum
FROM {db}.executions
WHERE NOT (attempt > 1 AND JSONExtractString(attributes, 'flakehouse.verify') != '')
GROUP BY project_id, day, suite;

DROP VIEW IF EXISTS {db}.flaky_trends_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.flaky_trends_mv TO {db}.flaky_trends AS
SELECT project_id, day,
       toUInt64(count()) AS executions,
       toUInt64(countIf(status = 'fail')) AS failed,
       toUInt64(countIf(status = 'flaky' OR (status = 'pass' AND attempt > 1))) AS flaky_executions,
       uniqStateIf(test_id, status = 'flaky' OR (status = 'pass' AND attempt > 1)) AS flaky_tests,
       uniqStateIf(test_id, status = 'fail') AS failing_tests
FROM {db}.executions
WHERE NOT (attempt > 1 AND JSONExtractString(attributes, 'flakehouse.verify') != '')
GROUP BY project_id, day;

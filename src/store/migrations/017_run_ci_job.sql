-- The CI job a run belongs to (issue 39, defect 3): its name (GITHUB_JOB, CI_JOB_NAME, … or OTLP's
-- `cicd.pipeline.task.name`) and its matrix values as canonical JSON (keys sorted, values text;
-- src/domain/ci-job.ts). A re-run is the same job on the same code again: two jobs of one commit
-- (a Vitest job and a Jest job) are not. '' = not given: runs stored before this migration and
-- older clients, which keep the old re-run key among themselves.
ALTER TABLE {db}.runs ADD COLUMN IF NOT EXISTS ci_job_name LowCardinality(String) DEFAULT '';
ALTER TABLE {db}.runs ADD COLUMN IF NOT EXISTS ci_job_matrix LowCardinality(String) DEFAULT '';

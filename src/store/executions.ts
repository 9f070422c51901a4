// One execution as its dashboard page shows it: the error and stack, every attempt of the same
// test in the same run, and its stored artifact refs (signed by the caller).
import type { TestStatus } from '../../client/src/contract/batch.js';
import { toIso } from '../../client/src/contract/time.js';
import { parseStoredArtifacts } from '../artifacts/links.js';
import type { Store } from './client.js';
import { toNumber } from './numbers.js';

export interface ExecutionAttempt {
  id: string;
  attempt: number;
  status: TestStatus;
  durationMs: number;
  startedAt: string;
  errorMessage: string | null;
}

/** Which test an execution ran and how that attempt ended: what a run's page and an execution's page both show. */
export interface ExecutedTest {
  testIdentityId: string;
  filePath: string;
  suite: string;
  title: string;
  status: TestStatus;
  attempt: number;
  durationMs: number;
}

/** The `executions` columns ExecutedTest is read from. */
export interface ExecutedTestRow {
  test_id: string;
  file_path: string;
  suite: string;
  title: string;
  status: TestStatus;
  attempt: number | string;
  duration_ms: number | string;
}

export function toExecutedTest(r: ExecutedTestRow): ExecutedTest {
  return {
    testIdentityId: r.test_id,
    filePath: r.file_path,
    suite: r.suite,
    title: r.title,
    status: r.status,
    attempt: toNumber(r.attempt),
    durationMs: toNumber(r.duration_ms),
  };
}

export interface ExecutionRecordView extends ExecutedTest {
  id: string;
  runId: string;
  startedAt: string;
  commitSha: string;
  branch: string;
  prNumber: number | null;
  errorType: string | null;
  errorMessage: string | null;
  errorStack: string | null;
  clusterId: string | null;
  artifacts: unknown[];
  attempts: ExecutionAttempt[];
}

interface Row extends ExecutedTestRow {
  id: string;
  run_id: string;
  started_ms: number | string;
  commit_sha: string;
  branch: string;
  pr_number: number | string | null;
  error_type: string;
  error_message: string;
  error_stack: string;
  cluster_id: string;
  artifacts: string;
}

const orNull = (s: string): string | null => (s === '' ? null : s);

export class ExecutionRepo {
  constructor(private readonly store: Store) {}

  async get(projectId: string, executionId: string): Promise<ExecutionRecordView | null> {
    // The `id` bloom filter skips the granules of other executions within the project's range.
    const [r] = await this.store.query<Row>(
      `SELECT id, run_id, test_id, file_path, suite, title, status, attempt, duration_ms, toUnixTimestamp64Milli(started_at) AS started_ms,
              commit_sha, branch, pr_number, error_type, error_message, error_stack, cluster_id, artifacts
       FROM ${this.store.table('executions')} WHERE project_id = {projectId:UUID} AND id = {executionId:UUID} LIMIT 1`,
      { projectId, executionId },
    );
    if (!r) return null;
    const attempts = await this.store.query<Pick<Row, 'id' | 'attempt' | 'status' | 'duration_ms' | 'started_ms' | 'error_message'>>(
      `SELECT id, attempt, status, duration_ms, toUnixTimestamp64Milli(started_at) AS started_ms, error_message
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID} AND run_id = {runId:UUID}
       ORDER BY attempt, started_at, id`,
      { projectId, testId: r.test_id, runId: r.run_id },
    );
    return {
      id: r.id,
      runId: r.run_id,
      ...toExecutedTest(r),
      startedAt: toIso(toNumber(r.started_ms)),
      commitSha: r.commit_sha,
      branch: r.branch,
      prNumber: r.pr_number === null ? null : toNumber(r.pr_number),
      errorType: orNull(r.error_type),
      errorMessage: orNull(r.error_message),
      errorStack: orNull(r.error_stack),
      clusterId: orNull(r.cluster_id),
      artifacts: parseStoredArtifacts(r.artifacts),
      attempts: attempts.map((a) => ({
        id: a.id,
        attempt: toNumber(a.attempt),
        status: a.status,
        durationMs: toNumber(a.duration_ms),
        startedAt: toIso(toNumber(a.started_ms)),
        errorMessage: orNull(a.error_message),
      })),
    };
  }
}

// Rows in and out of the runs / executions / test_identities / receipts tables.
import type { ExecutionRecord, IdentityRecord, RunRecord, RunState } from '../domain/records.js';
import type { TestFinal } from '../domain/run-parts.js';
import { runVerifyMarks } from './run-verify.js';
import type { VerifyKind } from '../../client/src/contract/verify.js';
import type { CiProvider, RunStatus, TestStatus, Trigger } from '../../client/src/contract/batch.js';
import { toIso } from '../../client/src/contract/time.js';
import { githubCommitUrl } from '../domain/commit-url.js';
import { jobMatrixText, parseJobMatrixText, type JobMatrix } from '../../client/src/contract/ci-job.js';
import type { Store } from './client.js';
import { requestRead } from './request-read.js';
import { toNumber } from './numbers.js';
import { executionsWithReport } from './rca.js';
import { chTime } from './time.js';
import type { TsvColumns } from './tsv.js';
import { toExecutedTest, type ExecutedTest, type ExecutedTestRow } from './executions.js';

const MAX_MESSAGE = 4000;

let lastDay = -1;
let lastDayText = '';
/** YYYY-MM-DD (UTC); executions of one batch share a day, so the last one is memoised. */
function dayOf(ms: number): string {
  const d = Math.floor(ms / 86_400_000);
  if (d !== lastDay) {
    lastDay = d;
    lastDayText = new Date(d * 86_400_000).toISOString().slice(0, 10);
  }
  return lastDayText;
}
const MAX_STACK = 32_000;

const RUN_COLUMN_NAMES = [
  'project_id', 'started_at', 'id', 'receipt_id', 'idempotency_key', 'source', 'ci_provider', 'ci_run_id', 'ci_job_url',
  'repository', 'commit_sha', 'branch', 'base_branch', 'merge_base', 'pr_number', 'trigger', 'shard_index', 'shard_total',
  'status', 'finished_at', 'duration_ms', 'total', 'passed', 'failed', 'skipped', 'flaky', 'trace_id', 'has_run_span',
  'status_explicit', 'ingested_at', 'version', 'ci_job_name', 'ci_job_matrix',
] as const;

const EXECUTION_COLUMN_NAMES = [
  'project_id', 'test_id', 'started_at', 'id', 'run_id', 'day', 'status', 'attempt', 'retry_of', 'duration_ms', 'file_path',
  'suite', 'title', 'params', 'fingerprint', 'commit_sha', 'branch', 'pr_number', 'ci_provider', 'trigger', 'error_type',
  'error_message', 'error_stack', 'signature_id', 'cluster_id', 'artifacts', 'attributes', 'spans', 'trace_id', 'span_id', 'ingested_at',
] as const;

/** Columns written as TabSeparated; `plain` ones hold only ids, enums, numbers and times. */
export const RUN_COLUMNS_IN: TsvColumns = {
  names: RUN_COLUMN_NAMES,
  plain: new Set([
    'project_id', 'started_at', 'id', 'receipt_id', 'source', 'ci_provider', 'pr_number', 'trigger', 'shard_index', 'shard_total',
    'status', 'finished_at', 'duration_ms', 'total', 'passed', 'failed', 'skipped', 'flaky', 'has_run_span', 'status_explicit',
    'ingested_at', 'version',
    'merge_base', // lowercase hex or '' (every receiver checks it)
  ]),
};

export const EXECUTION_COLUMNS_IN: TsvColumns = {
  names: EXECUTION_COLUMN_NAMES,
  plain: new Set([
    'project_id', 'test_id', 'started_at', 'id', 'run_id', 'day', 'status', 'attempt', 'retry_of', 'duration_ms', 'fingerprint',
    'pr_number', 'ci_provider', 'trigger', 'signature_id', 'cluster_id', 'ingested_at',
  ]),
};

export function runRow(r: RunRecord): Record<string, unknown> {
  return {
    project_id: r.projectId,
    started_at: chTime(r.startedAt),
    id: r.id,
    receipt_id: r.receiptId,
    idempotency_key: r.idempotencyKey,
    source: r.source,
    ci_provider: r.resource.ciProvider,
    ci_run_id: r.resource.ciRunId ?? '',
    ci_job_url: r.resource.ciJobUrl ?? '',
    repository: r.resource.repository ?? '',
    commit_sha: r.resource.commitSha,
    branch: r.resource.branch,
    base_branch: r.resource.baseBranch ?? '',
    merge_base: r.resource.mergeBase ?? '',
    pr_number: r.resource.prNumber ?? null,
    trigger: r.resource.trigger,
    shard_index: r.resource.shardIndex ?? 0,
    shard_total: r.resource.shardTotal ?? 0,
    status: r.status,
    finished_at: r.finishedAt === null ? null : chTime(r.finishedAt),
    duration_ms: r.durationMs,
    total: r.counts.total,
    passed: r.counts.passed,
    failed: r.counts.failed,
    skipped: r.counts.skipped,
    flaky: r.counts.flaky,
    trace_id: r.traceId,
    has_run_span: r.hasRunSpan ? 1 : 0,
    status_explicit: r.statusExplicit ? 1 : 0,
    ingested_at: chTime(r.receivedAt),
    version: r.version,
    ci_job_name: r.resource.ciJobName ?? '',
    ci_job_matrix: jobMatrixText(r.resource.ciJobMatrix),
  };
}

export function executionRow(e: ExecutionRecord, run: RunRecord): Record<string, unknown> {
  const x = e.input;
  return {
    project_id: e.projectId,
    test_id: e.testId,
    started_at: chTime(x.startedAt),
    id: e.id,
    run_id: e.runId,
    day: dayOf(x.startedAt),
    status: x.status,
    attempt: x.attempt,
    retry_of: e.retryOf,
    duration_ms: Math.min(x.durationMs, 4_294_967_295),
    file_path: x.filePath,
    suite: x.suite,
    title: x.title,
    params: x.params ? JSON.stringify(x.params) : '',
    fingerprint: e.fingerprint,
    commit_sha: run.resource.commitSha,
    branch: run.resource.branch,
    pr_number: run.resource.prNumber ?? null,
    ci_provider: run.resource.ciProvider,
    trigger: run.resource.trigger,
    error_type: x.error?.type ?? '',
    error_message: x.error?.message.slice(0, MAX_MESSAGE) ?? '',
    error_stack: x.error?.stack?.slice(0, MAX_STACK) ?? '',
    signature_id: e.signatureId ?? '',
    cluster_id: e.clusterId ?? '',
    artifacts: x.artifacts && x.artifacts.length > 0 ? JSON.stringify(x.artifacts) : '',
    attributes: x.attributes ? JSON.stringify(x.attributes) : '',
    spans: x.spans && x.spans.length > 0 ? JSON.stringify(x.spans) : '',
    trace_id: x.traceId ?? '',
    span_id: x.spanId ?? '',
    ingested_at: chTime(run.receivedAt),
  };
}

export function identityRow(i: IdentityRecord): Record<string, unknown> {
  return {
    project_id: i.projectId,
    id: i.id,
    fingerprint: i.fingerprint,
    file_path: i.filePath,
    suite: i.suite,
    title: i.title,
    params: i.params,
    params_hash: i.paramsHash,
    first_seen_at: i.firstSeenAt,
    version: i.version,
    stitched: i.stitched ? 1 : 0,
  };
}

export function receiptRow(r: RunRecord, processedAt: number, acceptedExecutions: number): Record<string, unknown> {
  return {
    project_id: r.projectId,
    receipt_id: r.receiptId,
    idempotency_key: r.idempotencyKey,
    source: r.source,
    run_id: r.id,
    accepted_executions: acceptedExecutions,
    received_at: r.receivedAt,
    processed_at: processedAt,
  };
}

/** Test ids per read of RunRepo.testFinals: ~200 KB of URL parameters on a server. */
const TEST_FINALS_SLICE = 5_000;

export interface RunCountsOut {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
  flaky: number;
}

export interface RunListItem {
  id: string;
  branch: string;
  commitSha: string;
  prNumber: number | null;
  ciProvider: string;
  status: RunStatus;
  startedAt: string;
  durationMs: number;
  counts: RunCountsOut;
  /** The CI job (GITHUB_JOB, CI_JOB_NAME, …, OTLP's cicd.pipeline.task.name); null when the sender did not say. */
  ciJobName: string | null;
  /** The job's matrix values; null when none were given. */
  ciJobMatrix: JobMatrix | null;
}

export interface RunExecutionItem extends ExecutedTest {
  id: string;
  errorMessage: string | null;
  hasRca: boolean;
  artifacts: unknown[];
  /** A failure muted by quarantine under `flakehouse run` (attribute flakehouse.quarantined). */
  quarantined: boolean;
}

export interface RunDetail extends RunListItem {
  trigger: string;
  finishedAt: string | null;
  /** Where the PR's branch forked from its base branch; null when the sender did not know. */
  mergeBase: string | null;
  /** The CI job's page, when the sender knew it. */
  ciJobUrl: string | null;
  /** The repository as `owner/name`, when the sender knew it. */
  repository: string | null;
  /** The commit's page on GitHub, when the repository is known to be there (src/domain/commit-url.ts). */
  commitUrl: string | null;
  executions: RunExecutionItem[];
}

interface RunDbRow {
  id: string;
  branch: string;
  commit_sha: string;
  pr_number: number | null;
  ci_provider: string;
  status: RunStatus;
  started_ms: number | string;
  duration_ms: number | string;
  total: number;
  passed: number;
  failed: number;
  skipped: number;
  flaky: number;
  trigger: string;
  finished_ms: number | string | null;
  ci_job_name: string;
  ci_job_matrix: string;
}

const RUN_COLUMNS = `id, branch, commit_sha, pr_number, ci_provider, status, toUnixTimestamp64Milli(started_at) AS started_ms,
  duration_ms, total, passed, failed, skipped, flaky, trigger, toUnixTimestamp64Milli(finished_at) AS finished_ms, ci_job_name, ci_job_matrix`;

function toListItem(r: RunDbRow): RunListItem {
  return {
    id: r.id,
    branch: r.branch,
    commitSha: r.commit_sha,
    prNumber: r.pr_number === null ? null : toNumber(r.pr_number),
    ciProvider: r.ci_provider,
    status: r.status,
    startedAt: toIso(toNumber(r.started_ms)),
    durationMs: toNumber(r.duration_ms),
    counts: {
      total: toNumber(r.total),
      passed: toNumber(r.passed),
      failed: toNumber(r.failed),
      skipped: toNumber(r.skipped),
      flaky: toNumber(r.flaky),
    },
    ciJobName: r.ci_job_name === '' ? null : r.ci_job_name,
    ciJobMatrix: parseJobMatrixText(r.ci_job_matrix),
  };
}

export interface RunListFilter {
  branch?: string;
  /** Runs whose commit sha starts with this (lower case hex). */
  commitSha?: string;
  prNumber?: number;
  status?: RunStatus;
  since?: number;
  until?: number;
  /** Keyset cursor: strictly older than (startedAt, id). */
  before?: { startedAt: number; id: string };
  limit: number;
}

export class RunRepo {
  constructor(private readonly store: Store) {}

  /** A read for a request (the runs list, a run's page): beside the pipeline's queries (Store.readQuery). */
  private read<T>(sql: string, params: Record<string, unknown>): Promise<T[]> {
    return requestRead<T>(this.store, sql, params);
  }

  /** Which attempts of a run `flakehouse run` made itself (src/store/run-verify.ts). */
  verifyMarks(projectId: string, runId: string): Promise<Map<string, VerifyKind>> {
    return runVerifyMarks(this.store, projectId, runId);
  }

  /** The repository (`owner/name`) the project's newest run that named one reported, or null. */
  async latestRepository(projectId: string): Promise<string | null> {
    const rows = await this.store.query<{ repository: string }>(
      `SELECT repository FROM ${this.store.table('runs')} WHERE project_id = {projectId:UUID} AND repository != '' ORDER BY started_at DESC LIMIT 1`,
      { projectId },
    );
    return rows[0]?.repository ?? null;
  }

  async list(projectId: string, f: RunListFilter): Promise<{ items: RunListItem[]; last: { startedAt: number; id: string } | null; more: boolean }> {
    const where = ['project_id = {projectId:UUID}'];
    const params: Record<string, unknown> = { projectId, limit: f.limit + 1 };
    if (f.branch !== undefined) {
      where.push('branch = {branch:String}');
      params.branch = f.branch;
    }
    if (f.commitSha !== undefined) {
      where.push('startsWith(commit_sha, {commitSha:String})');
      params.commitSha = f.commitSha;
    }
    if (f.prNumber !== undefined) {
      where.push('pr_number = {prNumber:UInt32}');
      params.prNumber = f.prNumber;
    }
    if (f.status !== undefined) {
      where.push('status = {status:String}');
      params.status = f.status;
    }
    if (f.since !== undefined) {
      where.push('started_at >= fromUnixTimestamp64Milli({since:Int64})');
      params.since = f.since;
    }
    if (f.until !== undefined) {
      where.push('started_at < fromUnixTimestamp64Milli({until:Int64})');
      params.until = f.until;
    }
    if (f.before) {
      where.push('(started_at, id) < (fromUnixTimestamp64Milli({bStarted:Int64}), {bId:UUID})');
      params.bStarted = f.before.startedAt;
      params.bId = f.before.id;
    }
    const rows = await this.read<RunDbRow>(
      `SELECT ${RUN_COLUMNS} FROM ${this.store.table('runs')} FINAL WHERE ${where.join(' AND ')}
       ORDER BY started_at DESC, id DESC LIMIT {limit:UInt32}`,
      params,
    );
    const more = rows.length > f.limit;
    const page = rows.slice(0, f.limit);
    const lastRow = page[page.length - 1];
    return {
      items: page.map(toListItem),
      last: lastRow ? { startedAt: toNumber(lastRow.started_ms), id: lastRow.id } : null,
      more,
    };
  }

  async get(projectId: string, runId: string): Promise<RunDetail | null> {
    const rows = await this.read<RunDbRow & { merge_base: string; ci_job_url: string; repository: string }>(
      `SELECT ${RUN_COLUMNS}, merge_base, ci_job_url, repository FROM ${this.store.table('runs')} FINAL WHERE project_id = {projectId:UUID} AND id = {runId:UUID} LIMIT 1`,
      { projectId, runId },
    );
    const r = rows[0];
    if (!r) return null;
    // The run_id bloom filter skips the granules of other runs.
    // `quarantined`: a failure `flakehouse run` muted (the execution attribute flakehouse.quarantined, client/src/contract/mute.ts).
    const execs = await this.read<ExecutedTestRow & { id: string; error_message: string; artifacts: string; quarantined: number | string }>(
      `SELECT id, test_id, file_path, suite, title, status, attempt, duration_ms, error_message, artifacts,
         JSONExtractBool(attributes, 'flakehouse.quarantined') AS quarantined
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND run_id = {runId:UUID}
       ORDER BY started_at, attempt, id`,
      { projectId, runId },
    );
    const withRca = await executionsWithReport(this.store, projectId, execs.filter((e) => e.status === 'fail' || e.status === 'flaky').map((e) => e.id));
    return {
      ...toListItem(r),
      trigger: r.trigger,
      finishedAt: r.finished_ms === null ? null : toIso(toNumber(r.finished_ms)),
      mergeBase: r.merge_base === '' ? null : r.merge_base,
      ciJobUrl: /^https?:\/\//i.test(r.ci_job_url) ? r.ci_job_url : null,
      repository: r.repository === '' ? null : r.repository,
      commitUrl: githubCommitUrl({ repository: r.repository, ciProvider: r.ci_provider, ciJobUrl: r.ci_job_url }, r.commit_sha),
      executions: execs.map((e) => ({
        id: e.id,
        ...toExecutedTest(e),
        errorMessage: e.error_message === '' ? null : e.error_message,
        hasRca: withRca.has(e.id),
        artifacts: e.artifacts === '' ? [] : (JSON.parse(e.artifacts) as unknown[]),
        quarantined: toNumber(e.quarantined) === 1,
      })),
    };
  }

  /** The stored state of a run, for merging the next part of its trace. */
  async runState(projectId: string, runId: string): Promise<RunState | null> {
    const rows = await this.store.query<{
      started_ms: number | string;
      finished_ms: number | string | null;
      status: RunStatus;
      has_run_span: number;
      status_explicit: number;
      version: number | string;
      ci_provider: CiProvider;
      ci_run_id: string;
      ci_job_url: string;
      repository: string;
      commit_sha: string;
      branch: string;
      base_branch: string;
      merge_base: string;
      pr_number: number | null;
      trigger: Trigger;
      shard_index: number;
      shard_total: number;
      ci_job_name: string;
      ci_job_matrix: string;
    }>(
      `SELECT toUnixTimestamp64Milli(started_at) AS started_ms, toUnixTimestamp64Milli(finished_at) AS finished_ms, status,
              has_run_span, status_explicit, version, ci_provider, ci_run_id, ci_job_url, repository, commit_sha, branch,
              base_branch, merge_base, pr_number, trigger, shard_index, shard_total, ci_job_name, ci_job_matrix
       FROM ${this.store.table('runs')} FINAL WHERE project_id = {projectId:UUID} AND id = {runId:UUID} LIMIT 1`,
      { projectId, runId },
    );
    const r = rows[0];
    if (!r) return null;
    const opt = <T>(v: T | '' | 0 | null): T | undefined => (v === '' || v === 0 || v === null ? undefined : v);
    return {
      startedAt: toNumber(r.started_ms),
      finishedAt: r.finished_ms === null ? null : toNumber(r.finished_ms),
      status: r.status,
      hasRunSpan: toNumber(r.has_run_span) === 1,
      statusExplicit: toNumber(r.status_explicit) === 1,
      version: toNumber(r.version),
      resource: {
        ciProvider: r.ci_provider,
        ciRunId: opt(r.ci_run_id),
        ciJobUrl: opt(r.ci_job_url),
        repository: opt(r.repository),
        commitSha: r.commit_sha,
        branch: r.branch,
        baseBranch: opt(r.base_branch),
        mergeBase: opt(r.merge_base),
        prNumber: r.pr_number === null ? undefined : toNumber(r.pr_number),
        trigger: r.trigger,
        shardIndex: opt(toNumber(r.shard_index)),
        shardTotal: opt(toNumber(r.shard_total)),
        ciJobName: opt(r.ci_job_name),
        ciJobMatrix: parseJobMatrixText(r.ci_job_matrix) ?? undefined,
      },
    };
  }

  /** Test counts of a run over its stored executions: per test the last attempt decides; pass after a fail is flaky. */
  async countsForRun(projectId: string, runId: string): Promise<RunCountsOut> {
    const rows = await this.store.query<Record<keyof RunCountsOut, number | string>>(
      `SELECT count() AS total,
              countIf(s = 'pass' AND NOT f) AS passed,
              countIf(s = 'fail') AS failed,
              countIf(s = 'skip') AS skipped,
              countIf(s = 'flaky' OR (s = 'pass' AND f)) AS flaky
       FROM (
         SELECT test_id, argMax(status, (attempt, started_at)) AS s, max(status = 'fail') AS f
         FROM ${this.store.table('executions')}
         WHERE project_id = {projectId:UUID} AND run_id = {runId:UUID}
         GROUP BY test_id
       )`,
      { projectId, runId },
    );
    const r = rows[0];
    return {
      total: toNumber(r?.total),
      passed: toNumber(r?.passed),
      failed: toNumber(r?.failed),
      skipped: toNumber(r?.skipped),
      flaky: toNumber(r?.flaky),
    };
  }

  /**
   * Where each of `testIds` stands in the run over its stored executions (src/domain/run-parts.ts);
   * tests without any are left out. Read by the primary key, in slices, so that no request carries
   * more than `slice` ids (a server takes parameters in the URL).
   */
  async testFinals(projectId: string, runId: string, testIds: readonly string[], slice = TEST_FINALS_SLICE): Promise<Map<string, TestFinal>> {
    const out = new Map<string, TestFinal>();
    for (let i = 0; i < testIds.length; i += slice) {
      // No alias is a column name (id, status, attempt): ClickHouse would read the alias there instead.
      const rows = await this.store.query<{ tid: string; last_status: TestStatus; last_attempt: number | string; started_ms: number | string; any_failed: number | string }>(
        `SELECT toString(test_id) AS tid,
                argMax(toString(status), (attempt, started_at)) AS last_status,
                max(attempt) AS last_attempt,
                argMax(toUnixTimestamp64Milli(started_at), (attempt, started_at)) AS started_ms,
                max(status = 'fail') AS any_failed
         FROM ${this.store.table('executions')}
         WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)} AND run_id = {runId:UUID}
         GROUP BY test_id`,
        { projectId, runId, ids: testIds.slice(i, i + slice) },
      );
      for (const r of rows) out.set(r.tid, { status: r.last_status, attempt: toNumber(r.last_attempt), startedAt: toNumber(r.started_ms), failed: toNumber(r.any_failed) === 1 });
    }
    return out;
  }
}

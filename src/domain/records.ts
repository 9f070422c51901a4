// Rows as the worker writes them, built from a queued batch by pure functions. Every id is derived
// from the receipt id, so processing the same job twice produces identical rows.
import { PLACEHOLDER_BRANCH, PLACEHOLDER_COMMIT, type BatchResource, type ExecutionInput, type IngestBatch, type IngestSource, type RunStatus, type TestStatus } from '../../client/src/contract/batch.js';
import { stableUuid } from '../../client/src/contract/ids.js';
import { createHash } from 'node:crypto';
import { canonicalJson, fingerprint, paramsHash, testIdentityId, testKey } from '../../client/src/contract/identity.js';

export interface RunCounts {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
  flaky: number;
}

export interface RunRecord {
  id: string;
  projectId: string;
  receiptId: string;
  idempotencyKey: string;
  source: IngestSource;
  resource: BatchResource;
  status: RunStatus;
  startedAt: number;
  finishedAt: number | null;
  durationMs: number;
  counts: RunCounts;
  traceId: string;
  receivedAt: number;
  /** OTLP parts: whether the run span's times / status are in this record (see BatchRun). */
  hasRunSpan: boolean;
  statusExplicit: boolean;
  /** Row version: the latest version of a run wins. */
  version: number;
}

/** What a stored run contributes when the next part of its trace arrives. */
export type RunState = Pick<RunRecord, 'startedAt' | 'finishedAt' | 'status' | 'hasRunSpan' | 'statusExplicit' | 'version' | 'resource'>;

/**
 * Merges one part of a trace into the run assembled so far. `counts` are recomputed over every
 * stored execution of the run (so a redelivered part cannot count twice). The run span, when it
 * has arrived, decides start and end; an explicit run status beats one derived from the tests.
 */
export function mergeRunPart(prev: RunState | null, part: RunRecord, counts: RunCounts): RunRecord {
  const derived: RunStatus = counts.failed > 0 ? 'failed' : 'passed';
  if (!prev) return { ...part, counts, status: part.statusExplicit ? part.status : derived };
  const startedAt = part.hasRunSpan ? part.startedAt : prev.hasRunSpan ? prev.startedAt : Math.min(prev.startedAt, part.startedAt);
  const finishedAt =
    part.hasRunSpan && part.finishedAt !== null
      ? part.finishedAt
      : prev.hasRunSpan
        ? prev.finishedAt
        : maxOrNull(prev.finishedAt, part.finishedAt);
  const status = part.statusExplicit ? part.status : prev.statusExplicit ? prev.status : derived;
  // The run span's context wins; otherwise the newest part's. A placeholder never hides a known value.
  const resource = prev.hasRunSpan && !part.hasRunSpan ? mergeResource(prev.resource, part.resource) : mergeResource(part.resource, prev.resource);
  return {
    ...part,
    resource,
    startedAt,
    finishedAt,
    durationMs: finishedAt !== null ? Math.max(0, finishedAt - startedAt) : 0,
    status,
    counts,
    hasRunSpan: part.hasRunSpan || prev.hasRunSpan,
    statusExplicit: part.statusExplicit || prev.statusExplicit,
    version: Math.max(prev.version + 1, part.version),
  };
}

function mergeResource(primary: BatchResource, fallback: BatchResource): BatchResource {
  const out: BatchResource = { ...fallback, ...primary };
  if (primary.commitSha === PLACEHOLDER_COMMIT) out.commitSha = fallback.commitSha;
  if (primary.branch === PLACEHOLDER_BRANCH) out.branch = fallback.branch;
  if (primary.ciProvider === 'other') out.ciProvider = fallback.ciProvider;
  if (primary.trigger === 'other') out.trigger = fallback.trigger;
  for (const key of ['ciRunId', 'prNumber', 'shardIndex', 'shardTotal', 'repository', 'baseBranch', 'mergeBase', 'ciJobUrl', 'ciJobName', 'ciJobMatrix'] as const) {
    if (primary[key] === undefined || primary[key] === '') (out as unknown as Record<string, unknown>)[key] = fallback[key];
  }
  return out;
}

function maxOrNull(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

export interface ExecutionRecord {
  id: string;
  projectId: string;
  runId: string;
  testId: string;
  fingerprint: string;
  input: ExecutionInput;
  retryOf: string | null;
  /** Error signature and cluster (clustering processor); unset for executions without an error. */
  signatureId?: string;
  clusterId?: string;
}

export interface IdentityRecord {
  id: string;
  projectId: string;
  fingerprint: string;
  filePath: string;
  suite: string;
  title: string;
  params: string;
  paramsHash: string;
  firstSeenAt: number;
  /** Row version: the newest row of an identity is its current name (after a move or rename). */
  version: number;
  /** Ever moved or renamed (it has aliases and stitches). */
  stitched?: boolean;
}

export function runIdFor(projectId: string, receiptId: string): string {
  return stableUuid('run', projectId, receiptId);
}

/** An OTLP run is its trace: every part of the trace lands in the same run. */
export function traceRunIdFor(projectId: string, traceId: string): string {
  return stableUuid('run', projectId, 'trace', traceId);
}

/** A JUnit report split in parts is one run, named by the report's idempotency key. */
export function reportRunIdFor(projectId: string, reportKey: string): string {
  return stableUuid('run', projectId, 'report', reportKey);
}

/**
 * Whether a batch is one part of a run assembled from several jobs: OTLP traces (several
 * requests), JUnit reports split in parts (one request, several jobs).
 */
export function isTracePart(source: IngestSource, batch: IngestBatch): boolean {
  if (source === 'junit') return batch.run.reportPart !== undefined;
  return source === 'otlp' && batch.run.traceId !== undefined && batch.run.traceId !== '';
}

/**
 * Execution ids: one hash per receipt, the index mixed into its last 4 bytes. Unique within a
 * receipt, as unlikely to collide across receipts as any 122-bit id, and 100x cheaper than a
 * hash per execution.
 */
export function executionIdsFor(receiptId: string, count: number): string[] {
  const base = createHash('sha256').update('execution\u0000').update(receiptId).digest().subarray(0, 16);
  base[6] = (base[6]! & 0x0f) | 0x80;
  base[8] = (base[8]! & 0x3f) | 0x80;
  const head = base.subarray(0, 12).toString('hex');
  const tail = base.readUInt32BE(12);
  const prefix = `${head.slice(0, 8)}-${head.slice(8, 12)}-${head.slice(12, 16)}-${head.slice(16, 20)}-${head.slice(20, 24)}`;
  const ids = new Array<string>(count);
  for (let i = 0; i < count; i++) ids[i] = prefix + ((tail ^ i) >>> 0).toString(16).padStart(8, '0');
  return ids;
}

export function executionIdFor(receiptId: string, index: number): string {
  return executionIdsFor(receiptId, index + 1)[index]!;
}

/**
 * Memo of test key → (fingerprint, test id): tests recur in every run, hashes need not. Kept per
 * project, so the key held per test is the test key alone, one flat string.
 */
export class IdentityCache {
  private readonly byProject = new Map<string, Map<string, { fingerprint: string; testId: string }>>();
  private size = 0;
  constructor(private readonly max = 200_000) {}

  resolve(projectId: string, input: ExecutionInput): { fingerprint: string; testId: string } {
    const key = testKey(input);
    let tests = this.byProject.get(projectId);
    let hit = tests?.get(key);
    if (!hit) {
      const fp = fingerprint(input);
      hit = { fingerprint: fp, testId: testIdentityId(projectId, fp) };
      if (this.size >= this.max) {
        this.byProject.clear();
        this.size = 0;
        tests = undefined;
      }
      if (!tests) {
        tests = new Map();
        this.byProject.set(projectId, tests);
      }
      tests.set(key, hit);
      this.size++;
    }
    return hit;
  }
}

/**
 * Counts count tests, not attempts: for each test the last attempt decides, and a failure
 * followed by a passing attempt is one flaky test (not a failure and a pass).
 */
export function countFinalStatuses(executions: readonly ExecutionInput[]): RunCounts {
  const tests = new Map<string, { status: TestStatus; attempt: number; failedBefore: boolean }>();
  executions.forEach((e, i) => {
    const key = testKeyOf(executions[rootIndex(executions, i)]!);
    const prev = tests.get(key);
    if (!prev) {
      tests.set(key, { status: e.status, attempt: e.attempt, failedBefore: e.status === 'fail' });
      return;
    }
    const failedBefore = prev.failedBefore || e.status === 'fail';
    if (e.attempt >= prev.attempt) tests.set(key, { status: e.status, attempt: e.attempt, failedBefore });
    else prev.failedBefore = failedBefore;
  });
  const counts: RunCounts = { total: 0, passed: 0, failed: 0, skipped: 0, flaky: 0 };
  for (const t of tests.values()) {
    const s: TestStatus = t.status === 'pass' && t.failedBefore ? 'flaky' : t.status;
    counts.total++;
    if (s === 'pass') counts.passed++;
    else if (s === 'fail') counts.failed++;
    else if (s === 'skip') counts.skipped++;
    else counts.flaky++;
  }
  return counts;
}

/** The same key as the test identity, so counts agree with test ids (`./src\\A.ts` is `src/a.ts`). */
function testKeyOf(e: ExecutionInput): string {
  return testKey(e);
}

/** Index of the first attempt a retryOfIndex chain leads back to (cycles and bad indexes stop it). */
function rootIndex(executions: readonly ExecutionInput[], index: number): number {
  // Most executions are first attempts: no chain to walk, nothing to allocate.
  if (executions[index]!.retryOfIndex === undefined) return index;
  let i = index;
  const seen = new Set<number>([i]);
  for (;;) {
    const next = executions[i]!.retryOfIndex;
    if (next === undefined || next < 0 || next >= executions.length || seen.has(next)) return i;
    seen.add(next);
    i = next;
  }
}

function runIdOf(projectId: string, receiptId: string, source: IngestSource, batch: IngestBatch): string {
  if (!isTracePart(source, batch)) return runIdFor(projectId, receiptId);
  const part = batch.run.reportPart;
  return part ? reportRunIdFor(projectId, part.key) : traceRunIdFor(projectId, batch.run.traceId!);
}

export function buildRun(args: {
  projectId: string;
  receiptId: string;
  source: IngestSource;
  batch: IngestBatch;
  receivedAt: number;
}): RunRecord {
  const { batch } = args;
  const counts = countFinalStatuses(batch.executions);
  const endOfTests = batch.executions.reduce((m, e) => Math.max(m, e.startedAt + e.durationMs), batch.run.startedAt);
  const finishedAt = batch.run.finishedAt ?? (batch.executions.length > 0 ? endOfTests : null);
  return {
    id: runIdOf(args.projectId, args.receiptId, args.source, batch),
    projectId: args.projectId,
    receiptId: args.receiptId,
    idempotencyKey: batch.idempotencyKey,
    source: args.source,
    resource: batch.resource,
    status: batch.run.status,
    startedAt: batch.run.startedAt,
    finishedAt,
    durationMs: finishedAt !== null ? Math.max(0, finishedAt - batch.run.startedAt) : 0,
    counts,
    traceId: batch.run.traceId ?? '',
    receivedAt: args.receivedAt,
    hasRunSpan: batch.run.hasRunSpan === true,
    statusExplicit: batch.run.statusExplicit === true,
    version: args.receivedAt,
  };
}

export function buildExecutions(run: RunRecord, batch: IngestBatch, cache = new IdentityCache()): ExecutionRecord[] {
  const ids = executionIdsFor(run.receiptId, batch.executions.length);
  return batch.executions.map((input, i) => {
    const { fingerprint: fp, testId } = cache.resolve(run.projectId, input);
    const retryIdx = input.retryOfIndex;
    return {
      id: ids[i]!,
      projectId: run.projectId,
      runId: run.id,
      testId,
      fingerprint: fp,
      input,
      retryOf: retryIdx !== undefined && retryIdx >= 0 && retryIdx < ids.length && retryIdx !== i ? ids[retryIdx]! : null,
    };
  });
}

export function buildIdentity(e: ExecutionRecord): IdentityRecord {
  return {
    id: e.testId,
    projectId: e.projectId,
    fingerprint: e.fingerprint,
    filePath: e.input.filePath,
    suite: e.input.suite,
    title: e.input.title,
    params: e.input.params ? canonicalJson(e.input.params) : '',
    paramsHash: paramsHash(e.input.params),
    firstSeenAt: e.input.startedAt,
    version: e.input.startedAt,
  };
}

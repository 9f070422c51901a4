// Rows as the worker writes them, built from a queued batch by pure functions. Every id is derived
// from the receipt id, so processing the same job twice produces identical rows.
import type { BatchResource, ExecutionInput, IngestBatch, IngestSource, RunStatus, TestStatus } from './batch.js';
import { stableUuid } from './ids.js';
import { canonicalJson, fingerprint, paramsHash, testIdentityId } from './identity.js';

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
}

export interface ExecutionRecord {
  id: string;
  projectId: string;
  runId: string;
  testId: string;
  fingerprint: string;
  input: ExecutionInput;
  retryOf: string | null;
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
}

export function runIdFor(projectId: string, receiptId: string): string {
  return stableUuid('run', projectId, receiptId);
}

export function executionIdFor(receiptId: string, index: number): string {
  return stableUuid('execution', receiptId, String(index));
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

function testKeyOf(e: ExecutionInput): string {
  return `${e.filePath}\u0000${e.suite}\u0000${e.title}\u0000${paramsHash(e.params)}`;
}

/** Index of the first attempt a retryOfIndex chain leads back to (cycles and bad indexes stop it). */
function rootIndex(executions: readonly ExecutionInput[], index: number): number {
  let i = index;
  const seen = new Set<number>([i]);
  for (;;) {
    const next = executions[i]!.retryOfIndex;
    if (next === undefined || next < 0 || next >= executions.length || seen.has(next)) return i;
    seen.add(next);
    i = next;
  }
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
    id: runIdFor(args.projectId, args.receiptId),
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
  };
}

export function buildExecutions(run: RunRecord, batch: IngestBatch): ExecutionRecord[] {
  const ids = batch.executions.map((_, i) => executionIdFor(run.receiptId, i));
  return batch.executions.map((input, i) => {
    const fp = fingerprint(input);
    const retryIdx = input.retryOfIndex;
    return {
      id: ids[i]!,
      projectId: run.projectId,
      runId: run.id,
      testId: testIdentityId(run.projectId, fp),
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
  };
}

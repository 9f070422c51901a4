// What the run page adds to a run's stored row (src/store/runs.ts RunRepo.get): which attempts
// `flakehouse run` made itself (the execution attribute flakehouse.verify: `new`, `fix`, `retry`,
// src/domain/verify.ts), and when the run's last attempt ended (a run stored before `flakehouse run`
// counted its re-runs in its duration ended with its reporters, minutes before its re-runs did).
import { VERIFY_KINDS, type VerifyKind } from '../domain/verify.js';
import type { Store } from './client.js';
import { toNumber } from './numbers.js';

export interface RunAttemptMarks {
  /** Execution id → the verification its attempt belongs to (only marked attempts). */
  verify: Map<string, VerifyKind>;
  /** The end of the run's last attempt (ms): its start plus its duration; null without executions. */
  lastEndMs: number | null;
}

export async function runAttemptMarks(store: Store, projectId: string, runId: string): Promise<RunAttemptMarks> {
  // The run_id bloom filter skips the granules of other runs (as RunRepo.get's own read).
  const rows = await store.query<{ id: string; kind: string; end_ms: number | string }>(
    `SELECT id, JSONExtractString(attributes, 'flakehouse.verify') AS kind,
            toUnixTimestamp64Milli(started_at) + duration_ms AS end_ms
     FROM ${store.table('executions')}
     WHERE project_id = {projectId:UUID} AND run_id = {runId:UUID}`,
    { projectId, runId },
  );
  const verify = new Map<string, VerifyKind>();
  let lastEndMs: number | null = null;
  for (const r of rows) {
    if ((VERIFY_KINDS as readonly string[]).includes(r.kind)) verify.set(r.id, r.kind as VerifyKind);
    const end = toNumber(r.end_ms);
    if (lastEndMs === null || end > lastEndMs) lastEndMs = end;
  }
  return { verify, lastEndMs };
}

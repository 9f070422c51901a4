// Which attempts of a run `flakehouse run` made itself: the execution attribute flakehouse.verify
// (`new`, `fix`, `retry`, client/src/contract/verify.ts), for the run page (src/api/routes/runs.ts getRun).
import { VERIFY_KINDS, type VerifyKind } from '../../client/src/contract/verify.js';
import type { Store } from './client.js';

/** Execution id → the verification its attempt belongs to (only marked attempts). */
export async function runVerifyMarks(store: Store, projectId: string, runId: string): Promise<Map<string, VerifyKind>> {
  // The run_id bloom filter skips the granules of other runs (as RunRepo.get's own read).
  const rows = await store.query<{ id: string; kind: string }>(
    `SELECT id, JSONExtractString(attributes, 'flakehouse.verify') AS kind
     FROM ${store.table('executions')}
     WHERE project_id = {projectId:UUID} AND run_id = {runId:UUID} AND kind != ''`,
    { projectId, runId },
  );
  const verify = new Map<string, VerifyKind>();
  for (const r of rows) if ((VERIFY_KINDS as readonly string[]).includes(r.kind)) verify.set(r.id, r.kind as VerifyKind);
  return verify;
}

// A JUnit report's parts as the JUnit receiver queues them: one run (keyed by the report), one job
// per part, for tests that drive processors and exporters with leases of their own.
import { randomBytes, randomUUID } from 'node:crypto';
import { CURRENT_CONTRACT_VERSION, type ExecutionInput, type IngestBatch } from '../../client/src/contract/batch.js';
import { reportPartKey } from '../../client/src/contract/report-parts.js';
import type { Job } from '../../src/queue/types.js';

export function reportJobs(
  projectId: string,
  parts: ExecutionInput[][],
  opts: { startedAt: number; commitSha?: string; key?: string; receivedAt?: (index: number) => number },
): Job[] {
  const key = opts.key ?? `report-${randomUUID()}`;
  const commitSha = opts.commitSha ?? randomBytes(20).toString('hex');
  return parts.map((executions, index): Job => {
    const batch: IngestBatch = {
      contractVersion: CURRENT_CONTRACT_VERSION,
      idempotencyKey: reportPartKey(key, index, parts.length),
      resource: { ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push' },
      run: { status: 'passed', startedAt: opts.startedAt, reportPart: { key, index, count: parts.length } },
      executions,
    };
    const receivedAt = opts.receivedAt?.(index) ?? opts.startedAt;
    return { id: randomUUID(), receiptId: randomUUID(), receivedAt, attempts: 0, projectId, source: 'junit', batch };
  });
}

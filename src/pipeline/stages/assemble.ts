// The assembly stage: the first stage of every executions pipeline, before any processor. It turns
// a lease's jobs into the WorkBatch the processors enrich: each job's batch checked and cleaned
// (sanitizeBatch) and its run record built (buildRun), the lease's deterministic "now". What it
// fills in is the `runs` slot: `ASSEMBLED`, which the graph's order check (src/pipeline/slots.ts
// `RECEIVED`) takes as filled in before the first processor.
import type { Slot } from '../component.js';
import { buildRun } from '../../domain/records.js';
import { sanitizeBatch } from '../../../client/src/contract/storable.js';
import type { Job, Lease } from '../../queue/types.js';
import { WorkBatch, type WorkItem } from '../work-batch.js';

/** The slots the assembly stage fills in for every executions pipeline (what receivers hand over). */
export const ASSEMBLED: readonly Slot[] = ['runs'];

/** Sets a job that cannot be read or stored aside, alone (the runtime: `queue.failJob`). */
export type SetAside = (job: Job, err: unknown) => Promise<void>;

/**
 * The lease as a WorkBatch. A job that cannot be read or stored is set aside alone and the rest go
 * on; in a lease frozen by an earlier delivery (`lease.plan`) it throws instead, since a frozen
 * lease keeps its composition (its plan and writes were made with every job).
 */
export async function assembleLease(lease: Lease, setAside: SetAside): Promise<WorkBatch> {
  const items: WorkItem[] = [];
  for (const job of lease.jobs) {
    let item: WorkItem;
    try {
      item = assembleJob(job);
    } catch (err) {
      if (lease.plan) throw err;
      await setAside(job, err);
      continue;
    }
    items.push(item);
  }
  return new WorkBatch({ leaseId: lease.id, items, now: leaseNow(items) });
}

/**
 * One job as a work item. The door's check again, for jobs queued before it existed: a value the
 * processors or ClickHouse would reject fails here, alone and before the plan is frozen, not in the
 * exporters, where its lease could only be retried and dead-lettered whole. (Lone surrogates are
 * replaced in place, as the door does.)
 */
export function assembleJob(job: Job): WorkItem {
  sanitizeBatch(job.batch);
  const run = buildRun({ projectId: job.projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt });
  return { job, run, executions: [] };
}

/**
 * The lease's "now": the start of its newest run, capped at when its newest job arrived (the clock
 * when it has no job). Backfilled history is scored and quarantined in its own time, and a
 * redelivery computes the same.
 */
export function leaseNow(items: readonly WorkItem[], clock: () => number = Date.now): number {
  const received = items.reduce((m, i) => Math.max(m, i.job.receivedAt), 0) || clock();
  return Math.min(received, items.reduce((m, i) => Math.max(m, i.job.batch.run.startedAt), 0) || received);
}

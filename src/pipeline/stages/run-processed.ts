// The plan stage: what a lease will emit, decided once, after the processors and before the first
// write, and saved with the lease (queue.savePlan): a redelivered frozen lease emits exactly this,
// once, when it is acked. The events the processors emitted on the WorkBatch, and one
// `run.processed` per job (the `events` connector's side of an executions pipeline).
import type { DomainEvent } from '../../domain/events.js';
import { stableUuid } from '../../../client/src/contract/ids.js';
import { isTracePart } from '../../domain/records.js';
import type { LeasePlan } from '../../queue/types.js';
import type { WorkBatch, WorkItem } from '../work-batch.js';

/**
 * The lease's plan: the events of each batch of the lease whose pipeline passes them on (lists the
 * `events` connector), in order: the batch the queue fed, then the routed ones
 * (src/pipeline/lease-tree.ts). A run routed to two such pipelines is one event, not two: an
 * event's id is stable per run (or per fact), and the first copy stands.
 */
export function leasePlan(batches: readonly { batch: WorkBatch; emitsEvents: boolean }[]): LeasePlan {
  const seen = new Set<string>();
  const events: DomainEvent[] = [];
  for (const { batch, emitsEvents } of batches) {
    if (!emitsEvents) continue;
    for (const e of planEvents(batch)) {
      if (seen.has(e.id)) continue;
      seen.add(e.id);
      events.push(e);
    }
  }
  return { events };
}

/**
 * The events processors emitted, each project's just before the `run.processed` of its first job
 * (the order the outbox has always had), and one `run.processed` per job.
 */
export function planEvents(batch: WorkBatch): DomainEvent[] {
  const out: DomainEvent[] = [];
  const pending = new Set(batch.emittingProjects());
  for (const item of batch.items) {
    if (pending.delete(item.job.projectId)) out.push(...batch.emitted(item.job.projectId));
    out.push(runProcessed(item));
  }
  // Events of a project without a job in the lease (none today): still delivered, never dropped.
  for (const projectId of pending) out.push(...batch.emitted(projectId));
  return out;
}

/**
 * One event per accepted batch, its id stable per receipt (a subscriber deduplicates on it). An OTLP
 * trace arriving in parts emits one per part (`partial`); its counts are the part's own, the run's
 * totals are at GET /v1/runs/:runId.
 */
export function runProcessed(item: WorkItem): DomainEvent {
  const { run, job } = item;
  return {
    id: stableUuid('run.processed', run.projectId, run.receiptId),
    type: 'run.processed',
    projectId: run.projectId,
    occurredAt: job.receivedAt,
    data: {
      runId: run.id,
      receiptId: run.receiptId,
      source: run.source,
      status: run.status,
      commitSha: run.resource.commitSha,
      branch: run.resource.branch,
      prNumber: run.resource.prNumber ?? null,
      counts: run.counts,
      partial: isTracePart(job.source, job.batch),
    },
  };
}

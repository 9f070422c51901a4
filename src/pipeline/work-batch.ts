// The work batch: one lease as the executions processors enrich it. Processors put typed results
// in its fields and `emit` domain events; only the clickhouse exporter maps them to table rows
// (src/store/processor-rows.ts), and only the runtime turns the events into the lease's plan.
import type { DomainEvent } from '../domain/events.js';
import type { ErrorSignatureRecord, HealthEvent, IdentityAlias, IdentityStitch } from '../domain/processor-outputs.js';
import type { ExecutionRecord, IdentityRecord, RunRecord } from '../domain/records.js';
import type { Job } from '../queue/types.js';
import type { TestStateRecord } from '../store/tests.js';

/** One job of a lease, as processors enrich it. */
export interface WorkItem {
  job: Job;
  run: RunRecord;
  executions: ExecutionRecord[];
}

/** A test's new state plus what this lease observed of it (not stored). */
export interface TestUpdate {
  record: TestStateRecord;
  /** The state before this lease (null for a test never scored). */
  previous: TestStateRecord | null;
  /** Per run the test ran in this lease, oldest first: whether every attempt passed. */
  outcome: { runs: boolean[] };
  /** True when the stored state already holds this lease (a redelivery): nothing to recompute. */
  alreadyApplied: boolean;
  /** Write the state now. Clean passes that move nothing are kept in memory and written later
   * (write-behind); anything a reader or the next restart must see is written with the lease. */
  persist: boolean;
  /** A state written only to flush what was written behind: the lease did not score the test. */
  flushed?: true;
}

export class WorkBatch {
  readonly leaseId: string;
  readonly items: WorkItem[];
  /** "Now" for the lease: the start of its newest run, capped at its arrival (deterministic). */
  readonly now: number;
  /** Tests whose state this lease updates, keyed `${projectId}:${testId}` (scoring, quarantine). */
  readonly testStates = new Map<string, TestUpdate>();
  /** Identities first seen in this lease, and new rows (current names) of stitched ones. */
  readonly identities: IdentityRecord[] = [];
  readonly aliases: IdentityAlias[] = [];
  readonly stitches: IdentityStitch[] = [];
  /** Signatures this lease creates (known ones are only referenced by the executions). */
  readonly signatures: ErrorSignatureRecord[] = [];
  /** flaked / broke / fixed (scoring), quarantined / released (quarantine). */
  readonly healthEvents: HealthEvent[] = [];
  private readonly events = new Map<string, DomainEvent[]>();

  constructor(init: { leaseId: string; items: WorkItem[]; now: number }) {
    this.leaseId = init.leaseId;
    this.items = init.items;
    this.now = init.now;
  }

  /** A domain event of the lease; it goes out with the lease's plan, once per job (src/pipeline/runtime.ts). */
  emit(projectId: string, event: DomainEvent): void {
    const list = this.events.get(projectId);
    if (list) list.push(event);
    else this.events.set(projectId, [event]);
  }

  /** The events emitted for a project, in emission order. */
  emitted(projectId: string): readonly DomainEvent[] {
    return this.events.get(projectId) ?? [];
  }

  /** Projects with emitted events, in the order of their first event. */
  emittingProjects(): string[] {
    return [...this.events.keys()];
  }
}

// The queue between receivers and the worker. A job is one accepted batch. The contract every
// backend must keep (test/integration/queue-contract.ts checks it):
//  - enqueue resolves only once the job is durable; the same (project, idempotencyKey) enqueued
//    again returns the first receipt with deduplicated=true, also after a restart;
//  - dequeue hands out a lease on a batch of jobs, invisible to others for `visibilityMs`;
//    a lease that is neither acked nor nacked in time is redelivered;
//  - a lease whose plan was saved is frozen: it is always redelivered with the same id and the same
//    jobs, so the writes keyed by that id deduplicate (exactly-once in effect);
//  - nack of an unfrozen lease of several jobs splits it: each half goes back to the front of the
//    queue as a lease of its own, and no job is charged an attempt; only a job that fails alone is
//    retried with exponential backoff and finally parked as dead (counted, never dropped silently);
//  - a frozen lease keeps its composition: it is retried whole and dies whole, and its dead jobs
//    are requeued together as that same lease (same id and plan), so its writes still deduplicate;
//  - an out-of-space failure is the machine's, not the job's: retried with backoff, whole, never
//    charged an attempt, split or dead-lettered;
//  - a dead job's idempotency key is not a duplicate: enqueue says `dead` (the door answers 409)
//    until the job is requeued or dropped (dropping releases the key);
//  - ack removes the jobs and appends the lease's events to the outbox in one atomic step.
import type { IngestBatch, IngestSource } from '../../client/src/contract/batch.js';
import type { DomainEvent } from '../domain/events.js';

export interface NewJob {
  projectId: string;
  source: IngestSource;
  batch: IngestBatch;
}

export interface Job extends NewJob {
  id: string;
  receiptId: string;
  receivedAt: number;
  attempts: number;
}

export interface EnqueueResult {
  receiptId: string;
  acceptedExecutions: number;
  deduplicated: boolean;
  /** The key's job is parked as dead: nothing was queued, and the batch is not stored (see `DeadJob`). */
  dead?: true;
}

export interface LeasePlan {
  /** Events to emit when the lease is acked; decided once, before the first write. */
  events: DomainEvent[];
}

export interface Lease {
  id: string;
  jobs: Job[];
  /** 1 on first delivery. */
  attempt: number;
  /** Present when a previous delivery froze this lease. */
  plan?: LeasePlan;
}

/** A lease whose job payloads are still the stored JSON bytes of `StoredJob` (see EmbeddedQueue.dequeueRaw). */
export interface RawLease {
  id: string;
  jobs: RawLeaseJob[];
  attempt: number;
  plan?: LeasePlan;
}

export interface RawLeaseJob {
  attempts: number;
  /** UTF-8 JSON of `StoredJob`. */
  json: Uint8Array;
  /** The job's id when `json` does not carry it (the NATS queue passes its messages as published). */
  id?: string;
}

/** A job as the embedded queue stores it (and as a raw lease carries it to the pipeline thread). */
export interface StoredJob {
  id: string;
  /** The receipt the door answered, when it is not the job id (the NATS queue's jobs). */
  receiptId?: string;
  projectId: string;
  source: IngestSource;
  batch: IngestBatch;
  receivedAt: number;
}

export interface QueueStats {
  pending: number;
  inflight: number;
  dead: number;
  delayed: number;
}

export interface DequeueOptions {
  maxJobs: number;
  /** Stop adding jobs once this many executions are in the lease (at least one job is always taken). */
  maxExecutions: number;
}

export interface DeadJob {
  job: Job;
  /** The last failure. */
  error: string;
  /** The first failure charged to the job (the same as `error` when it failed once; absent in records from before it was kept). */
  firstError?: string;
  diedAt: number;
  /** Size of the stored job (JSON bytes; absent in records from before it was kept). */
  sizeBytes?: number;
  /**
   * Set when the job died in a frozen lease: its rows may be partly written under that lease id,
   * so it is requeued (and dropped) only together with its lease-mates, as that same lease.
   */
  frozenLeaseId?: string;
}

export interface NackOptions {
  /** The storage is out of space: retry the lease whole after a backoff; no attempt is charged. */
  outOfSpace?: boolean;
  /**
   * The lease was frozen in this delivery and wrote nothing under its id: drop the plan, so it
   * fails (and splits) as an unfrozen lease would.
   */
  unfreeze?: boolean;
}

/** What requeueing or dropping a dead job touched: the job, or its whole frozen lease. */
export interface DeadJobAction {
  jobIds: string[];
  frozenLeaseId?: string;
}

// Reads that cross the network on a remote backend (NATS) may answer with a promise; the embedded
// queue answers synchronously. stats() and depth() stay synchronous everywhere (the door's
// backpressure check runs before any await): a remote backend answers from counters it refreshes.
export interface Queue {
  enqueue(job: NewJob): Promise<EnqueueResult>;
  /**
   * What enqueue would answer for a key already stored (deduplicated: true, `dead` when parked),
   * read without writing; undefined for a key not (yet) stored. The door answers replays with it
   * while storage is full, when a new batch would be refused.
   */
  accepted(projectId: string, idempotencyKey: string): EnqueueResult | undefined | Promise<EnqueueResult | undefined>;
  dequeue(opts: DequeueOptions): Promise<Lease | null>;
  /** Freezes the lease's composition and records its plan durably. */
  savePlan(leaseId: string, plan: LeasePlan): Promise<void>;
  ack(leaseId: string): Promise<void>;
  /** Returns one job of an unfrozen lease to the queue (retry with backoff, or dead), keeping the others leased. */
  failJob(leaseId: string, jobId: string, error: string): Promise<void>;
  /** Hands a failed lease back: split, retried, or dead (see the contract above). */
  nack(leaseId: string, error: string, opts?: NackOptions): Promise<void>;
  /** Resolves when work may be available, or after `timeoutMs` (the idle poll interval). */
  waitForWork(timeoutMs: number): Promise<void>;
  stats(): QueueStats;
  /** Pending + in-flight: what backpressure compares with the max depth. */
  depth(): number;
  /** Dead jobs in receipt order, after the job id `after` when given. */
  deadJobs(limit?: number, after?: string): DeadJob[] | Promise<DeadJob[]>;
  deadJob(id: string): DeadJob | undefined | Promise<DeadJob | undefined>;
  /** Back to the queue (with its frozen lease-mates); null for an unknown id. */
  requeueDead(id: string): Promise<DeadJobAction | null>;
  /** Gone for good (with its frozen lease-mates), idempotency keys released; null for an unknown id. */
  dropDead(id: string): Promise<DeadJobAction | null>;
  /** Outbox of events from acked leases, read by the event dispatcher (local and synchronous in the embedded queue, a stream on NATS). */
  readonly outbox: OutboxReader;
  close(): Promise<void>;
}

export interface OutboxEntry {
  seq: number;
  event: DomainEvent;
}

/** The outbox as the dispatcher sees it: local (synchronous reads) or across threads. */
export interface OutboxReader {
  /** Events that happen outside a lease (a person's quarantine decision): appended durably. */
  append(events: readonly DomainEvent[]): Promise<void>;
  /** Entries after `afterSeq`, oldest first. */
  read(afterSeq: number, limit: number): OutboxEntry[] | Promise<OutboxEntry[]>;
  /** Durable per-subscriber cursor. */
  cursor(subscriber: string): number | Promise<number>;
  setCursor(subscriber: string, seq: number): Promise<void>;
  /** Drops entries every subscriber in `subscribers` has passed. */
  trim(subscribers: readonly string[]): Promise<void>;
  /** Resolves when new entries are appended (or after `timeoutMs`). */
  waitForEntries(timeoutMs: number): Promise<void>;
  /**
   * Whether this process delivers the outbox's events now. Absent: always (one process owns the
   * queue). With several workers on one NATS queue only one dispatches at a time, or every
   * notification would go out once per worker.
   */
  dispatchesHere?(): boolean | Promise<boolean>;
}

/**
 * A queue whose leases can cross to the pipeline thread as bytes (src/pipeline/thread): the jobs of
 * a lease as UTF-8 JSON of `StoredJob`, each in its own transferable buffer.
 */
export interface RawLeaseSource {
  dequeueRaw(opts: DequeueOptions): Promise<RawLease | null>;
}

/**
 * What the pipeline runtime uses of a queue: leases and the outbox, which may be across a thread
 * boundary (pipeline/thread/remote.ts). Ingest, stats and dead jobs stay with the queue's owner.
 */
export type WorkerQueue = Pick<Queue, 'dequeue' | 'savePlan' | 'ack' | 'failJob' | 'nack' | 'waitForWork'> & { readonly outbox: OutboxReader };

export interface Outbox extends OutboxReader {
  read(afterSeq: number, limit: number): OutboxEntry[];
  cursor(subscriber: string): number;
}

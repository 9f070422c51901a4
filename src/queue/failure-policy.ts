// The queue's failure policy, written once for every backend (embedded LMDB, NATS): what becomes of
// a lease that fails (nack), of one job of a lease that fails (failJob), how long a retry waits,
// and which dead jobs are requeued or dropped together. A backend supplies the storage of attempts,
// plans and dead jobs and its in-memory sets (`FailureSink`); it decides nothing itself. The
// contract this implements is at the top of ./types.ts; test/integration/queue-contract.ts checks
// it against every backend.
import type { Logger } from 'pino';
import type { DeadJobAction, NackOptions } from './types.js';

export interface FailureLimits {
  /** Attempts charged to a job before it is parked as dead. */
  maxAttempts: number;
  /** First retry delay; doubles per attempt up to `maxBackoffMs`. */
  baseBackoffMs: number;
  maxBackoffMs: number;
}

/** A frozen lease (by id) or a group of jobs leased together, waiting out a backoff. `K` is the backend's job key. */
export type Delayed<K> = { availableAt: number } & ({ frozen: true; id: string } | { frozen: false; jobs: K[] });

/** A lease as the policy sees it: its jobs by the backend's key, and whether its plan froze it. */
export interface FailedLease<K> {
  id: string;
  jobs: readonly K[];
  frozen: boolean;
}

/** What a backend does when the policy has decided. */
export interface FailureSink<K> {
  /** Attempts charged to a job so far (0 when none is recorded). */
  attempts(job: K): number;
  /** Takes back the attempt charged when these jobs were leased. */
  refund(jobs: readonly K[]): Promise<void>;
  /** Records `error` as the first failure of each job that has none recorded. */
  noteFirstErrors(jobs: readonly K[], error: string): Promise<void>;
  /** Drops a frozen lease's plan (it wrote nothing under its id): its jobs fail as an unfrozen lease's. */
  unfreeze(leaseId: string): Promise<void>;
  /** Parks jobs as dead; with `frozenLeaseId`, together with that lease's plan, to be requeued as that lease. */
  bury(jobs: readonly K[], error: string, frozenLeaseId?: string): Promise<void>;
  /** Puts groups of jobs at the front of the queue, each to be leased as it is, in this order. */
  toFront(groups: K[][]): void;
  /** Holds back a frozen lease or a group of jobs until its `availableAt`. */
  delay(d: Delayed<K>): void;
  /** Tells waiting workers that jobs are ready. */
  wake(): void;
}

export class FailurePolicy {
  /** Consecutive out-of-space failures: the backoff grows with them, a committed lease resets it. */
  private spaceFailures = 0;

  constructor(
    private readonly limits: FailureLimits,
    private readonly logger?: Logger,
  ) {}

  /** Exponential in the attempts, capped, with jitter that spreads retries of jobs that failed together. */
  backoff(attempts: number): number {
    const { baseBackoffMs, maxBackoffMs } = this.limits;
    const exp = Math.min(maxBackoffMs, baseBackoffMs * 2 ** Math.max(0, attempts - 1));
    return Math.round(exp * (0.75 + Math.random() * 0.5));
  }

  /** A lease was committed: the storage is writable again. */
  committed(): void {
    this.spaceFailures = 0;
  }

  /**
   * A failed lease, taken off its holder:
   *  - out of space: the machine's condition, not the jobs'; the same lease again after a backoff
   *    that grows with consecutive such failures, nothing charged, nothing split or buried;
   *  - frozen: retried whole after a backoff, or dead whole after `maxAttempts` (its writes are
   *    keyed by its id, so it keeps its composition); `unfreeze` first drops a plan under which
   *    nothing was written;
   *  - several jobs: which one is at fault is not known, so none is charged: split in halves, each
   *    back at the front as a lease of its own;
   *  - one job: charged; retried alone after a backoff, or dead after `maxAttempts`.
   */
  async nack<K>(lease: FailedLease<K>, error: string, opts: NackOptions, sink: FailureSink<K>): Promise<void> {
    const jobs = [...lease.jobs];
    if (opts.outOfSpace) {
      await sink.refund(jobs);
      const availableAt = Date.now() + this.backoff(++this.spaceFailures);
      if (lease.frozen) sink.delay({ frozen: true, id: lease.id, availableAt });
      else if (jobs.length > 0) sink.delay({ frozen: false, jobs, availableAt });
      this.logger?.warn({ leaseId: lease.id, jobs: jobs.length, error }, 'storage out of space: lease retried later, no attempt charged');
      return;
    }
    let frozen = lease.frozen;
    if (frozen && opts.unfreeze) {
      // A crash before this is durable redelivers the frozen lease, which is also correct.
      await sink.unfreeze(lease.id);
      frozen = false;
    }
    if (frozen) {
      const attempts = Math.max(1, ...jobs.map((j) => sink.attempts(j)));
      if (attempts >= this.limits.maxAttempts) {
        await sink.bury(jobs, error, lease.id);
      } else {
        await sink.noteFirstErrors(jobs, error);
        sink.delay({ frozen: true, id: lease.id, availableAt: Date.now() + this.backoff(attempts) });
      }
      return;
    }
    if (jobs.length > 1) {
      await sink.refund(jobs);
      const mid = Math.ceil(jobs.length / 2);
      sink.toFront([jobs.slice(0, mid), jobs.slice(mid)]);
      sink.wake();
      this.logger?.info({ leaseId: lease.id, jobs: jobs.length, error }, 'lease failed: split in halves to find the failing job');
      return;
    }
    await this.retryOrBury(jobs, error, sink);
  }

  /** One job of an unfrozen lease failed on its own (the others stay leased): charged, retried or dead. */
  failJob<K>(job: K, error: string, sink: FailureSink<K>): Promise<void> {
    return this.retryOrBury([job], error, sink);
  }

  private async retryOrBury<K>(jobs: readonly K[], error: string, sink: FailureSink<K>): Promise<void> {
    const toBury: K[] = [];
    const later: Delayed<K>[] = [];
    const now = Date.now();
    for (const j of jobs) {
      const attempts = Math.max(1, sink.attempts(j));
      if (attempts >= this.limits.maxAttempts) toBury.push(j);
      else later.push({ frozen: false, jobs: [j], availableAt: now + this.backoff(attempts) });
    }
    await sink.noteFirstErrors(
      later.flatMap((d) => (d.frozen ? [] : d.jobs)),
      error,
    );
    if (toBury.length > 0) await sink.bury(toBury, error);
    // Placed last, in the same turn as the release count drops: never counted twice.
    for (const d of later) sink.delay(d);
  }
}

/**
 * Jobs taken off a lease and not yet put back (delayed, split, dead): depth() counts them as in
 * flight while their writes become durable, so the queue never looks shorter than it is (the door,
 * /health and the metrics read it).
 */
export class ReleaseCount {
  private n = 0;

  get value(): number {
    return this.n;
  }

  async during<T>(jobs: number, place: () => Promise<T>): Promise<T> {
    this.n += jobs;
    try {
      return await place();
    } finally {
      this.n -= jobs;
    }
  }
}

/** Runs operations one at a time, in call order (a requeue and a drop of one dead group must not interleave). */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(op: () => Promise<T>): Promise<T> {
    const run = this.tail.then(op, op);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

/** A dead record as the policy needs it: the job's id and the frozen lease it died in, if any. */
export interface DeadRef {
  job: { id: string };
  frozenLeaseId?: string;
}

/**
 * A dead job and, when it died in a frozen lease, its dead lease-mates (named by that lease's dead
 * plan): they are requeued and dropped together, as that same lease, so its writes deduplicate.
 */
export async function deadGroupOf<D extends DeadRef, P extends { jobIds: string[] }>(
  id: string,
  find: (id: string) => D | undefined | Promise<D | undefined>,
  deadPlan: (leaseId: string) => P | undefined | Promise<P | undefined>,
): Promise<{ records: D[]; plan?: P; frozenLeaseId?: string } | null> {
  const d = await find(id);
  if (!d) return null;
  const frozenLeaseId = d.frozenLeaseId;
  if (frozenLeaseId === undefined) return { records: [d] };
  const plan = await deadPlan(frozenLeaseId);
  const records: D[] = [];
  for (const j of plan?.jobIds ?? [id]) {
    const r = await find(j);
    if (r) records.push(r);
  }
  return { records, frozenLeaseId, ...(plan ? { plan } : {}) };
}

/** What requeueing or dropping a dead group answers. */
export function deadAction(jobIds: string[], frozenLeaseId: string | undefined): DeadJobAction {
  return { jobIds, ...(frozenLeaseId !== undefined ? { frozenLeaseId } : {}) };
}

export interface DeadGroup<D, P> {
  records: D[];
  plan?: P;
  frozenLeaseId?: string;
}

/**
 * Requeueing and dropping dead jobs, for every backend: one group at a time (a requeue and a drop
 * of the same group must not interleave), the group found as `deadGroupOf` finds it, logged, and
 * answered with what it touched (null for an unknown id). The backend's `apply` does the storage
 * work: the jobs back in the queue as they were (a frozen group as that same lease), or gone with
 * their idempotency keys released.
 */
export class DeadJobOps<D extends DeadRef, P> {
  private readonly serial = new Serial();

  constructor(
    private readonly find: (id: string) => Promise<DeadGroup<D, P> | null>,
    private readonly logger?: Logger,
  ) {}

  requeue(id: string, apply: (group: DeadGroup<D, P>) => Promise<void>): Promise<DeadJobAction | null> {
    return this.run(id, apply, 'dead job requeued');
  }

  drop(id: string, apply: (group: DeadGroup<D, P>) => Promise<void>): Promise<DeadJobAction | null> {
    return this.run(id, apply, 'dead job dropped; idempotency key released');
  }

  private run(id: string, apply: (group: DeadGroup<D, P>) => Promise<void>, done: string): Promise<DeadJobAction | null> {
    return this.serial.run(async () => {
      const group = await this.find(id);
      if (!group) return null;
      await apply(group);
      const jobIds = group.records.map((d) => d.job.id);
      this.logger?.info({ jobIds, frozenLeaseId: group.frozenLeaseId }, done);
      return deadAction(jobIds, group.frozenLeaseId);
    });
  }
}

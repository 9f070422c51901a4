// The embedded, durable queue: one LMDB environment under the data dir, owned by one process
// (`flakehouse serve`). LMDB holds the truth (jobs, idempotency index, frozen plans, dead jobs,
// outbox); the ready/delayed/leased sets are rebuilt from it on open, so a kill -9 at any point
// loses nothing that was acknowledged with a 202.
import { mkdirSync, statfsSync } from 'node:fs';
import { setImmediate as turn } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { Logger } from 'pino';
import { Waiters } from './waiters.js';
import { deadAction, deadGroupOf, FailurePolicy, ReleaseCount, Serial, type FailureSink } from './failure-policy.js';
import { ReadySets } from './ready-sets.js';
import { uuidv7 } from '../domain/ids.js';
import { isOutOfSpace } from '../domain/storage-errors.js';
import type { DomainEvent } from '../domain/events.js';
import type {
  DeadJob,
  DeadJobAction,
  DequeueOptions,
  EnqueueResult,
  Job,
  Lease,
  LeasePlan,
  NackOptions,
  NewJob,
  Outbox,
  OutboxEntry,
  Queue,
  QueueStats,
  RawLease,
  RawLeaseJob,
  RawLeaseSource,
  StoredJob,
} from './types.js';

export interface EmbeddedQueueOptions {
  path: string;
  visibilityMs: number;
  maxAttempts: number;
  /** First retry delay; doubles per attempt up to `maxBackoffMs`. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Bytes stored jobs (queued and dead) may take before enqueue refuses as out of space; 0 or unset: no cap. */
  maxBytes?: number;
  logger?: Logger;
}

type JobRecord = StoredJob;

/** How often the queue's size is read from LMDB's page counts (in between, enqueued bytes are added). */
const USAGE_REFRESH_MS = 250;

interface IdemRecord {
  receiptId: string;
  acceptedExecutions: number;
  receivedAt: number;
}

interface PlanRecord {
  jobIds: string[];
  plan: LeasePlan;
}

interface ActiveLease {
  id: string;
  jobIds: string[];
  deadline: number;
  frozen: boolean;
}

interface TakenLease {
  id: string;
  jobIds: string[];
  attempt: number;
  /** Attempt count per job, in `jobIds` order. */
  attempts: number[];
  plan?: LeasePlan;
}

export class EmbeddedQueue implements Queue, RawLeaseSource {
  private readonly root: RootDatabase;
  /** Job records as JSON bytes: payloads vary in shape, which makes LMDB's shared-structure msgpack slow. */
  private readonly jobs: Database<Buffer, string>;
  private readonly idem: Database<IdemRecord, string>;
  private readonly attempts: Database<number, string>;
  private readonly plans: Database<PlanRecord, string>;
  private readonly dead: Database<DeadJob, string>;
  /** Plans of frozen leases that died, kept so their jobs can be requeued as that same lease. */
  private readonly deadPlans: Database<PlanRecord, string>;
  /** The first failure charged to a job that is still queued (for its dead record). */
  private readonly firstErrors: Database<string, string>;
  private readonly outboxDb: Database<DomainEvent, number>;
  private readonly meta: Database<number, string>;

  /**
   * Job ids ready, in groups, frozen and delayed: the queue is one partition (./ready-sets.ts). In
   * memory only: recover() re-forms them from LMDB (groups and backoffs become plain ready jobs).
   */
  private readonly sets = new ReadySets<string>(byId);
  /** Dead-job operations run one at a time (a requeue and a drop of the same group must not interleave). */
  private readonly deadOps = new Serial();
  private readonly leases = new Map<string, ActiveLease>();
  /** Jobs taken off a lease and not yet put back: depth() counts them as in flight. */
  private readonly releasing = new ReleaseCount();
  private readonly policy: FailurePolicy;
  /** How the failure policy's decisions are carried out on this queue's storage and sets. */
  private readonly failures: FailureSink<string>;
  private readonly frozenJobCount = new Map<string, number>();
  private readonly enqueuing = new Map<string, Promise<EnqueueResult>>();
  /** Executions per ready job, so leases are sized without decoding payloads. */
  private readonly execCounts = new Map<string, number>();
  private readonly workWaiters = new Waiters();
  private readonly outboxWaiters = new Waiters();
  private deadCount = 0;
  /** Millisecond and per-millisecond counter of the last job id (ids must sort in receipt order). */
  private lastIdMs = 0;
  private idSeq = 0;
  private closed = false;
  private readonly visibilityMs: number;
  private readonly logger: Logger | undefined;
  private readonly maxBytes: number;
  private readonly path: string;
  /** Bytes of the jobs and dead databases at `usageAt`, plus what was enqueued since. */
  private usage = 0;
  private usageAt = Number.NEGATIVE_INFINITY;
  /** Payload bytes of enqueues not yet committed: counted against the cap, so concurrent ones cannot all pass it. */
  private writingBytes = 0;
  /** Size of the last batch the cap refused (until one is accepted): what "room again" is measured by. */
  private refusedBytes: number | undefined;
  readonly outbox: Outbox;

  private constructor(opts: EmbeddedQueueOptions) {
    mkdirSync(opts.path, { recursive: true });
    // overlappingSync stays on (fast group commits); enqueue awaits `flushed` before it resolves.
    // JSON values: LMDB's default msgpack with shared structures is slow for records of varying shape.
    this.root = open({ path: opts.path, maxDbs: 16, mapSize: 64 * 1024 * 1024 * 1024 });
    observeCommitFailures();
    this.jobs = this.root.openDB<Buffer, string>({ name: 'jobs', encoding: 'binary' });
    this.idem = this.root.openDB<IdemRecord, string>({ name: 'idempotency', encoding: 'json' });
    this.attempts = this.root.openDB<number, string>({ name: 'attempts', encoding: 'json' });
    this.plans = this.root.openDB<PlanRecord, string>({ name: 'plans', encoding: 'json' });
    this.dead = this.root.openDB<DeadJob, string>({ name: 'dead', encoding: 'json' });
    this.deadPlans = this.root.openDB<PlanRecord, string>({ name: 'dead-plans', encoding: 'json' });
    this.firstErrors = this.root.openDB<string, string>({ name: 'first-errors', encoding: 'json' });
    this.outboxDb = this.root.openDB<DomainEvent, number>({ name: 'outbox', keyEncoding: 'uint32', encoding: 'json' });
    this.meta = this.root.openDB<number, string>({ name: 'meta', encoding: 'json' });
    this.visibilityMs = opts.visibilityMs;
    this.logger = opts.logger;
    this.policy = new FailurePolicy({ maxAttempts: opts.maxAttempts, baseBackoffMs: opts.baseBackoffMs ?? 1000, maxBackoffMs: opts.maxBackoffMs ?? 60_000 }, opts.logger);
    this.failures = this.makeFailureSink();
    this.maxBytes = opts.maxBytes ?? 0;
    this.path = opts.path;
    this.outbox = this.makeOutbox();
  }

  static open(opts: EmbeddedQueueOptions): EmbeddedQueue {
    const q = new EmbeddedQueue(opts);
    q.recover();
    return q;
  }

  /** Rebuilds the in-memory sets: frozen plans are redelivered whole, everything else is ready. */
  private recover(): void {
    const frozenJobs = new Set<string>();
    for (const { key, value } of this.plans.getRange()) {
      this.sets.frozenReady(key);
      this.frozenJobCount.set(key, value.jobIds.length);
      for (const id of value.jobIds) frozenJobs.add(id);
    }
    for (const id of this.jobs.getKeys()) {
      if (!frozenJobs.has(id)) this.sets.putReady([id]);
    }
    this.deadCount = this.dead.getCount();
    for (const last of this.jobs.getKeys({ reverse: true, limit: 1 })) {
      this.lastIdMs = parseInt(last.slice(0, 8) + last.slice(9, 13), 16);
      this.idSeq = parseInt(last.slice(15, 18), 16);
    }
  }

  /**
   * A UUIDv7 whose 12 `rand_a` bits count within the millisecond (RFC 9562 method 1): recovery
   * rebuilds the ready list in key order, so ids must sort in the order jobs were received, also
   * for several jobs received in the same millisecond.
   */
  private nextJobId(now: number): string {
    if (now > this.lastIdMs) {
      this.lastIdMs = now;
      this.idSeq = 0;
    } else if (++this.idSeq > 0xfff) {
      this.lastIdMs++;
      this.idSeq = 0;
    }
    const id = uuidv7(this.lastIdMs);
    return `${id.slice(0, 15)}${this.idSeq.toString(16).padStart(3, '0')}${id.slice(18)}`;
  }

  accepted(projectId: string, idempotencyKey: string): EnqueueResult | undefined {
    this.assertOpen();
    const existing = this.idem.get(`${projectId}\u0000${idempotencyKey}`);
    if (!existing) return undefined;
    // A parked job stored nothing: answering "deduplicated" would tell the sender it is safe.
    const dead = this.dead.doesExist(existing.receiptId);
    return { receiptId: existing.receiptId, acceptedExecutions: existing.acceptedExecutions, deduplicated: true, ...(dead ? { dead: true as const } : {}) };
  }

  async enqueue(job: NewJob): Promise<EnqueueResult> {
    const existing = this.accepted(job.projectId, job.batch.idempotencyKey);
    if (existing) return existing;
    const key = `${job.projectId}\u0000${job.batch.idempotencyKey}`;
    const racing = this.enqueuing.get(key);
    if (racing) return { ...(await racing), deduplicated: true };

    const receivedAt = Date.now();
    const id = this.nextJobId(receivedAt);
    const record: JobRecord = { id, projectId: job.projectId, source: job.source, batch: job.batch, receivedAt };
    const result: EnqueueResult = { receiptId: id, acceptedExecutions: job.batch.executions.length, deduplicated: false };
    // Encoded here, in this request's own turn: lmdb runs the callbacks of every transaction
    // queued meanwhile in one synchronous burst, which must not include encoding 30 payloads.
    const payload = Buffer.from(JSON.stringify(record));
    this.checkRoom(payload.length);
    const write = (async () => {
      await this.tx(() => {
        void this.jobs.put(id, payload);
        void this.idem.put(key, { receiptId: id, acceptedExecutions: result.acceptedExecutions, receivedAt });
      });
      await this.root.flushed;
      return result;
    })();
    this.enqueuing.set(key, write);
    this.writingBytes += payload.length;
    try {
      await write;
    } catch (err) {
      throw this.explainWriteError(err, payload.length);
    } finally {
      this.enqueuing.delete(key);
      this.writingBytes -= payload.length;
    }
    this.usage += payload.length;
    this.refusedBytes = undefined;
    this.execCounts.set(id, result.acceptedExecutions);
    this.sets.putReady([id]);
    this.wake();
    return result;
  }

  /** SERVICE_QUEUE_MAX_BYTES: refuses a batch that would take the stored jobs past the cap, as out of space. */
  private checkRoom(bytes: number): void {
    if (this.maxBytes <= 0) return;
    const used = this.usedBytes();
    if (used + this.writingBytes + bytes <= this.maxBytes) return;
    this.refusedBytes = bytes;
    throw Object.assign(
      new Error(`the queue is full: it holds ${used + this.writingBytes} bytes and this batch needs ${bytes} more, over SERVICE_QUEUE_MAX_BYTES (${this.maxBytes})`),
      { code: 'QUEUE_MAX_BYTES' },
    );
  }

  /**
   * lmdb writes pages through its memory map, so a full disk surfaces as EIO about as often as
   * ENOSPC: when the disk has no room for the batch, an EIO is called what it is.
   */
  private explainWriteError(err: unknown, bytes: number): unknown {
    if (isOutOfSpace(err)) return err;
    try {
      const s = statfsSync(this.path);
      const free = s.bavail * s.bsize;
      if (free >= bytes + 1024 * 1024) return err;
      const message = err instanceof Error ? err.message : String(err);
      return Object.assign(new Error(`${message} (the disk is full: ${free} bytes free)`, { cause: err }), { code: 'ENOSPC' });
    } catch {
      return err;
    }
  }

  /** Whether the batch the cap last refused would fit now (the worker drained the queue); false when none was refused. */
  hasRoom(): boolean {
    return this.maxBytes > 0 && this.refusedBytes !== undefined && this.usedBytes() + this.writingBytes + this.refusedBytes <= this.maxBytes;
  }

  /** Pages of the jobs and dead databases (what acks and drops free), re-read every USAGE_REFRESH_MS. */
  usedBytes(now = Date.now()): number {
    if (now - this.usageAt >= USAGE_REFRESH_MS) {
      this.usageAt = now;
      this.usage = 0;
      for (const db of [this.jobs, this.dead]) {
        const s = db.getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
        this.usage += (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize;
      }
    }
    return this.usage;
  }

  /**
   * Every write transaction goes through here. A commit that fails (disk full) rejects its
   * writes with lmdb's "Commit failed" and also rejects a `commitError` promise shared by them:
   * unobserved, that one is an unhandled rejection, which kills the process. It is observed here
   * and its cause (ENOSPC, …) rethrown, so callers and isOutOfSpace see why.
   */
  private tx<T>(body: () => T): Promise<T> {
    return settleWrite(this.root.transaction(body));
  }

  async dequeue(opts: DequeueOptions): Promise<Lease | null> {
    const taken = await this.takeLease(opts);
    if (!taken) return null;
    const jobs: Job[] = [];
    let decoded = 0;
    for (const [i, id] of taken.jobIds.entries()) {
      const rec = this.getJob(id);
      if (!rec) continue;
      jobs.push(this.toJob(rec, taken.attempts[i]!));
      // Decoding payloads is synchronous: give the event loop (and the ingest acks) a turn now and then.
      decoded += rec.batch.executions.length;
      if (decoded >= 2000) {
        decoded = 0;
        await turn();
      }
    }
    return { id: taken.id, jobs, attempt: taken.attempt, ...(taken.plan ? { plan: taken.plan } : {}) };
  }

  /**
   * As `dequeue`, but each job stays the JSON bytes it was stored as: the pipeline thread decodes
   * them, so the thread that answers ingest requests never spends time parsing payloads.
   */
  async dequeueRaw(opts: DequeueOptions): Promise<RawLease | null> {
    const taken = await this.takeLease(opts);
    if (!taken) return null;
    const jobs: RawLeaseJob[] = [];
    for (const [i, id] of taken.jobIds.entries()) {
      const raw = this.jobs.getBinary(id);
      // A copy with its own ArrayBuffer, so it can be transferred to the other thread.
      if (raw) jobs.push({ attempts: taken.attempts[i]!, json: new Uint8Array(raw) });
    }
    return { id: taken.id, jobs, attempt: taken.attempt, ...(taken.plan ? { plan: taken.plan } : {}) };
  }

  private async takeLease(opts: DequeueOptions): Promise<TakenLease | null> {
    this.assertOpen();
    const now = Date.now();
    this.expireLeases(now);
    this.sets.promote(now);
    const next = this.sets.take(opts, (id) => this.executionCount(id));
    if (!next) return null;
    if (next.kind === 'frozen') {
      const rec = this.plans.get(next.id);
      if (!rec) return this.takeLease(opts);
      const jobIds = rec.jobIds.filter((id) => this.jobs.doesExist(id));
      // Leased before the await: in between, the jobs would be counted nowhere (depth 0).
      this.leases.set(next.id, { id: next.id, jobIds: rec.jobIds, deadline: now + this.visibilityMs, frozen: true });
      const attempt = await this.bumpAttempts(rec.jobIds);
      return { id: next.id, jobIds, attempt, attempts: jobIds.map(() => attempt), plan: rec.plan };
    }
    const leaseId = randomUUID();
    this.leases.set(leaseId, { id: leaseId, jobIds: next.jobs, deadline: now + this.visibilityMs, frozen: false });
    const attempt = await this.bumpAttempts(next.jobs);
    return { id: leaseId, jobIds: next.jobs, attempt, attempts: next.jobs.map((id) => this.attempts.get(id) ?? attempt) };
  }

  /** Executions in a stored job: kept from enqueue; after a restart read once from the payload. */
  private executionCount(id: string): number | undefined {
    const known = this.execCounts.get(id);
    if (known !== undefined) return known;
    const rec = this.getJob(id);
    if (!rec) return undefined;
    this.execCounts.set(id, rec.batch.executions.length);
    return rec.batch.executions.length;
  }

  async savePlan(leaseId: string, plan: LeasePlan): Promise<void> {
    const lease = this.requireLease(leaseId);
    await settleWrite(this.plans.put(leaseId, { jobIds: lease.jobIds, plan }));
    await this.root.flushed;
    lease.frozen = true;
    this.frozenJobCount.set(leaseId, lease.jobIds.length);
  }

  async ack(leaseId: string): Promise<void> {
    const lease = this.leases.get(leaseId);
    // A lease that expired and was handed out again is finished by its new holder.
    if (!lease) return;
    this.leases.delete(leaseId);
    const plan = this.plans.get(leaseId);
    await this.tx(() => {
      for (const id of lease.jobIds) {
        void this.jobs.remove(id);
        void this.attempts.remove(id);
        if (this.firstErrors.doesExist(id)) void this.firstErrors.remove(id);
      }
      if (plan) {
        void this.plans.remove(leaseId);
        let seq = this.meta.get('outbox.seq') ?? 0;
        for (const event of plan.plan.events) void this.outboxDb.put(++seq, event);
        void this.meta.put('outbox.seq', seq);
      }
    });
    this.frozenJobCount.delete(leaseId);
    this.policy.committed();
    for (const id of lease.jobIds) this.execCounts.delete(id);
    if (plan && plan.plan.events.length > 0) this.wakeOutbox();
  }

  async failJob(leaseId: string, jobId: string, error: string): Promise<void> {
    const lease = this.requireLease(leaseId);
    if (lease.frozen) throw new Error('failJob on a frozen lease: nack the whole lease');
    lease.jobIds = lease.jobIds.filter((id) => id !== jobId);
    await this.releasing.during(1, () => this.policy.failJob(jobId, error, this.failures));
  }

  async nack(leaseId: string, error: string, opts: NackOptions = {}): Promise<void> {
    const lease = this.leases.get(leaseId);
    if (!lease) return;
    this.leases.delete(leaseId);
    await this.releasing.during(lease.jobIds.length, () => this.policy.nack({ id: leaseId, jobs: lease.jobIds, frozen: lease.frozen }, error, opts, this.failures));
  }

  /** The failure policy's decisions (./failure-policy.ts) on LMDB and this queue's in-memory sets. */
  private makeFailureSink(): FailureSink<string> {
    return {
      attempts: (id) => this.attempts.get(id) ?? 0,
      refund: (ids) =>
        this.tx(() => {
          for (const id of ids) {
            const n = this.attempts.get(id) ?? 0;
            if (n <= 1) void this.attempts.remove(id);
            else void this.attempts.put(id, n - 1);
          }
        }),
      noteFirstErrors: async (ids, error) => {
        const fresh = ids.filter((id) => !this.firstErrors.doesExist(id));
        if (fresh.length === 0) return;
        await this.tx(() => {
          for (const id of fresh) void this.firstErrors.put(id, error);
        });
      },
      unfreeze: async (leaseId) => {
        await settleWrite(this.plans.remove(leaseId));
        this.frozenJobCount.delete(leaseId);
      },
      // One transaction: a plan left behind by a crash would redeliver the dead jobs' events.
      bury: (ids, error, planId) => this.bury(ids, error, planId),
      toFront: (groups) => this.sets.toFront(groups),
      delay: (d) => this.sets.delay(d),
      wake: () => this.wake(),
    };
  }

  private async bury(jobIds: readonly string[], error: string, planId?: string): Promise<void> {
    const diedAt = Date.now();
    const buried: DeadJob[] = [];
    await this.tx(() => {
      for (const id of jobIds) {
        const raw = this.jobs.get(id);
        if (!raw) continue;
        const rec = JSON.parse(raw.toString('utf8')) as JobRecord;
        const dead: DeadJob = {
          job: this.toJob(rec, this.attempts.get(id) ?? 1),
          error,
          firstError: this.firstErrors.get(id) ?? error,
          diedAt,
          sizeBytes: raw.length,
          ...(planId !== undefined ? { frozenLeaseId: planId } : {}),
        };
        void this.dead.put(id, dead);
        void this.jobs.remove(id);
        void this.attempts.remove(id);
        void this.firstErrors.remove(id);
        buried.push(dead);
      }
      if (planId !== undefined) {
        const plan = this.plans.get(planId);
        if (plan) void this.deadPlans.put(planId, plan);
        void this.plans.remove(planId);
      }
    });
    if (planId !== undefined) this.frozenJobCount.delete(planId);
    this.deadCount += buried.length;
    for (const id of jobIds) this.execCounts.delete(id);
    for (const d of buried) {
      this.logger?.error(
        { jobId: d.job.id, projectId: d.job.projectId, attempts: d.job.attempts, frozenLeaseId: d.frozenLeaseId, error },
        'job parked as dead after repeated failures',
      );
    }
  }

  private async bumpAttempts(ids: string[]): Promise<number> {
    let max = 0;
    await this.tx(() => {
      for (const id of ids) {
        const n = (this.attempts.get(id) ?? 0) + 1;
        void this.attempts.put(id, n);
        max = Math.max(max, n);
      }
    });
    return max;
  }

  private expireLeases(now: number): void {
    for (const lease of this.leases.values()) {
      if (lease.deadline > now) continue;
      this.leases.delete(lease.id);
      this.logger?.warn({ leaseId: lease.id, jobs: lease.jobIds.length }, 'lease visibility timeout: redelivering');
      if (lease.frozen) this.sets.frozenReady(lease.id);
      else this.sets.putReady(lease.jobIds);
    }
  }

  private toJob(rec: JobRecord, attempts: number): Job {
    return { ...rec, receiptId: rec.id, attempts };
  }

  private requireLease(leaseId: string): ActiveLease {
    const lease = this.leases.get(leaseId);
    if (!lease) throw new Error(`unknown or expired lease ${leaseId}`);
    return lease;
  }

  /**
   * Resolves when a job is enqueued, when a delayed job's backoff ends, or after `timeoutMs`,
   * whichever is first: a retry runs when it is due, not at the next poll.
   */
  waitForWork(timeoutMs: number): Promise<void> {
    if (this.sets.hasWork()) return Promise.resolve();
    return this.workWaiters.wait(Math.min(timeoutMs, Math.max(0, this.sets.nextDueAt() - Date.now())));
  }

  private wake(): void {
    this.workWaiters.wakeAll();
  }

  private wakeOutbox(): void {
    this.outboxWaiters.wakeAll();
  }

  stats(): QueueStats {
    let inflight = this.releasing.value;
    for (const l of this.leases.values()) inflight += l.jobIds.length;
    const frozenSize = (id: string): number => this.frozenJobCount.get(id) ?? 0;
    return { pending: this.sets.pendingJobs(frozenSize), inflight, dead: this.deadCount, delayed: this.sets.delayedJobs(frozenSize) };
  }

  depth(): number {
    const s = this.stats();
    return s.pending + s.inflight;
  }

  deadJobs(limit = 100, after?: string): DeadJob[] {
    if (after === undefined) return [...this.dead.getRange({ limit })].map((e) => e.value);
    // `start` is inclusive: read one more and skip the cursor's own entry.
    return [...this.dead.getRange({ start: after, limit: limit + 1 })]
      .filter((e) => e.key !== after)
      .slice(0, limit)
      .map((e) => e.value);
  }

  deadJob(id: string): DeadJob | undefined {
    return this.dead.get(id);
  }

  requeueDead(id: string): Promise<DeadJobAction | null> {
    return this.deadOps.run(async () => {
      const group = await this.deadGroup(id);
      if (!group) return null;
      const { records, plan, frozenLeaseId } = group;
      await this.tx(() => {
        for (const d of records) {
          const stored: StoredJob = { id: d.job.id, projectId: d.job.projectId, source: d.job.source, batch: d.job.batch, receivedAt: d.job.receivedAt };
          void this.jobs.put(d.job.id, Buffer.from(JSON.stringify(stored)));
          void this.dead.remove(d.job.id);
          void this.attempts.remove(d.job.id);
        }
        // The same lease id and plan: what it already wrote under that id is deduplicated.
        if (frozenLeaseId !== undefined && plan) {
          void this.plans.put(frozenLeaseId, plan);
          void this.deadPlans.remove(frozenLeaseId);
        }
      });
      await this.root.flushed;
      this.deadCount -= records.length;
      const jobIds = records.map((d) => d.job.id);
      for (const d of records) this.execCounts.set(d.job.id, d.job.batch.executions.length);
      if (frozenLeaseId !== undefined && plan) {
        this.sets.frozenReady(frozenLeaseId);
        this.frozenJobCount.set(frozenLeaseId, plan.jobIds.length);
      } else {
        this.sets.putReady(jobIds);
      }
      this.wake();
      this.logger?.info({ jobIds, frozenLeaseId }, 'dead job requeued');
      return deadAction(jobIds, frozenLeaseId);
    });
  }

  dropDead(id: string): Promise<DeadJobAction | null> {
    return this.deadOps.run(async () => {
      const group = await this.deadGroup(id);
      if (!group) return null;
      const { records, frozenLeaseId } = group;
      await this.tx(() => {
        for (const d of records) {
          void this.dead.remove(d.job.id);
          // Released: the same batch may be sent again and is then a new job.
          void this.idem.remove(`${d.job.projectId}\u0000${d.job.batch.idempotencyKey}`);
        }
        if (frozenLeaseId !== undefined) void this.deadPlans.remove(frozenLeaseId);
      });
      await this.root.flushed;
      this.deadCount -= records.length;
      const jobIds = records.map((d) => d.job.id);
      this.logger?.info({ jobIds, frozenLeaseId }, 'dead job dropped; idempotency key released');
      return deadAction(jobIds, frozenLeaseId);
    });
  }

  private deadGroup(id: string): Promise<{ records: DeadJob[]; plan?: PlanRecord; frozenLeaseId?: string } | null> {
    return deadGroupOf(
      id,
      (j) => this.dead.get(j),
      (leaseId) => this.deadPlans.get(leaseId),
    );
  }

  private makeOutbox(): Outbox {
    return {
      append: async (events: readonly DomainEvent[]): Promise<void> => {
        if (events.length === 0) return;
        await this.tx(() => {
          let seq = this.meta.get('outbox.seq') ?? 0;
          for (const event of events) void this.outboxDb.put(++seq, event);
          void this.meta.put('outbox.seq', seq);
        });
        await this.root.flushed;
        this.wakeOutbox();
      },
      read: (afterSeq: number, limit: number): OutboxEntry[] =>
        [...this.outboxDb.getRange({ start: afterSeq + 1, limit })].map((e) => ({ seq: e.key, event: e.value })),
      cursor: (subscriber: string): number => this.meta.get(`cursor:${subscriber}`) ?? 0,
      setCursor: async (subscriber: string, seq: number): Promise<void> => {
        await settleWrite(this.meta.put(`cursor:${subscriber}`, seq));
      },
      trim: async (subscribers: readonly string[]): Promise<void> => {
        if (subscribers.length === 0) return;
        const min = Math.min(...subscribers.map((s) => this.meta.get(`cursor:${s}`) ?? 0));
        await this.tx(() => {
          for (const key of this.outboxDb.getKeys({ end: min + 1 })) void this.outboxDb.remove(key);
        });
      },
      waitForEntries: (timeoutMs: number): Promise<void> => this.outboxWaiters.wait(timeoutMs),
    };
  }

  private getJob(id: string): JobRecord | undefined {
    const raw = this.jobs.get(id);
    return raw === undefined ? undefined : (JSON.parse(raw.toString('utf8')) as JobRecord);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('queue is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wake();
    this.wakeOutbox();
    await this.root.flushed;
    await this.root.close();
  }
}

/** Job ids are UUIDv7s that sort in receipt order (EmbeddedQueue.nextJobId). */
function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** lmdb's error for a failed commit: every write of that commit is rejected with one. */
function isCommitFailure(err: unknown): err is Error & { commitError: Promise<unknown> } {
  return err instanceof Error && (err as { commitError?: unknown }).commitError instanceof Promise;
}

let commitFailuresObserved = false;

/**
 * lmdb's event-turn batching rejects one more promise per failed commit, created inside lmdb where
 * no caller can observe it: as an unhandled rejection it would kill the process on a full disk. The
 * writes of that commit are rejected too, and the queue handles those (tx, settleWrite), so this
 * one is dropped; any other unhandled rejection is rethrown, which ends the process as before.
 */
function observeCommitFailures(): void {
  if (commitFailuresObserved) return;
  commitFailuresObserved = true;
  process.on('unhandledRejection', (reason) => {
    if (!isCommitFailure(reason)) throw reason;
    reason.commitError.catch(() => {});
  });
}

/** See EmbeddedQueue.tx: observes lmdb's shared `commitError` and rethrows its cause. */
export async function settleWrite<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (!isCommitFailure(err)) throw err;
    const commitError = err.commitError;
    // Rejected in the same lmdb callback as `write`, so settled by now; the race only guards a change in lmdb.
    const cause = await Promise.race([commitError.then(() => undefined, (e: unknown) => e), turn().then(() => undefined)]);
    if (!(cause instanceof Error)) throw err;
    throw Object.assign(new Error(`queue write failed: ${cause.message}`, { cause }), { code: (cause as { code?: unknown }).code });
  }
}

// The queue engine: one implementation of the queue contract (./types.ts) over a narrow storage
// (./storage.ts: tables read synchronously, written in atomic batches, and the outbox). The
// storage holds the truth (jobs, receipts, attempts, frozen plans, dead jobs, the outbox); the
// ready/delayed/leased sets are rebuilt from it on open, so a kill -9 at any point loses nothing
// that was acknowledged with a 202. The failure policy is ./failure-policy.ts, which lease comes
// next is ./ready-sets.ts; the engine is one partition of them. On disk the storage is LMDB
// (./embedded.ts opens it so); the contract suite also runs the engine on ./memory-storage.ts.
import { setImmediate as turn } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Waiters } from './waiters.js';
import { DeadJobOps, deadGroupOf, FailurePolicy, type FailureSink } from './failure-policy.js';
import { LeaseEngine, type LeasePartition, type TakenLease } from './lease-engine.js';
import { ReadySets } from './ready-sets.js';
import type { PlanRecord, QueueStorage } from './storage.js';
import { uuidv7 } from '../../client/src/contract/ids.js';
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

export interface QueueEngineOptions {
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

const enc = new TextEncoder();
const dec = new TextDecoder();

/** How often the queue's size is read from LMDB's page counts (in between, enqueued bytes are added). */
const USAGE_REFRESH_MS = 250;

export class QueueEngine implements Queue, RawLeaseSource {
  /**
   * Job ids ready, in groups, frozen and delayed: the queue is one partition (./ready-sets.ts). In
   * memory only: recover() re-forms them from LMDB (groups and backoffs become plain ready jobs).
   */
  private readonly sets = new ReadySets<string>(byId);
  /** Requeue and drop of dead jobs, one group at a time. */
  private readonly deadOps: DeadJobOps<DeadJob, PlanRecord>;
  /** Leases in hand and what becomes of them (./lease-engine.ts), over this queue's one partition. */
  private readonly leases: LeaseEngine<string>;
  private readonly partition: LeasePartition<string>;
  private readonly policy: FailurePolicy;
  /** How the failure policy's decisions are carried out on this queue's storage and sets. */
  private readonly failures: FailureSink<string>;
  private readonly frozenJobCount = new Map<string, number>();
  /**
   * The plans this process saved, until their lease commits (or is unfrozen or buried): the commit
   * appends a plan's events without reading it back from storage and decoding it (a lease's plan is
   * hundreds of events). After a restart a frozen lease's plan is read from storage.
   */
  private readonly savedPlans = new Map<string, LeasePlan>();
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
  private readonly logger: Logger | undefined;
  private readonly maxBytes: number;
  /** Bytes of the jobs and dead tables at `usageAt`, plus what was enqueued since. */
  private usage = 0;
  private usageAt = Number.NEGATIVE_INFINITY;
  /** Payload bytes of enqueues not yet committed: counted against the cap, so concurrent ones cannot all pass it. */
  private writingBytes = 0;
  /** Size of the last batch the cap refused (until one is accepted): what "room again" is measured by. */
  private refusedBytes: number | undefined;
  readonly outbox: Outbox;

  private constructor(
    private readonly storage: QueueStorage,
    opts: QueueEngineOptions,
  ) {
    this.logger = opts.logger;
    this.policy = new FailurePolicy({ maxAttempts: opts.maxAttempts, baseBackoffMs: opts.baseBackoffMs ?? 1000, maxBackoffMs: opts.maxBackoffMs ?? 60_000 }, opts.logger);
    this.failures = this.makeFailureSink();
    this.partition = this.makePartition();
    this.deadOps = new DeadJobOps((id) => this.deadGroup(id), opts.logger);
    this.leases = new LeaseEngine<string>({
      visibilityMs: opts.visibilityMs,
      policy: this.policy,
      partition: () => this.partition,
      ...(opts.logger ? { logger: opts.logger } : {}),
    });
    this.maxBytes = opts.maxBytes ?? 0;
    this.outbox = this.makeOutbox();
  }

  /** The engine on `storage`: its sets rebuilt from what the storage holds (a restart is an open on the same storage). */
  static open(storage: QueueStorage, opts: QueueEngineOptions): QueueEngine {
    const q = new QueueEngine(storage, opts);
    q.recover();
    return q;
  }

  /** Rebuilds the in-memory sets: frozen plans are redelivered whole, everything else is ready. */
  private recover(): void {
    const frozenJobs = new Set<string>();
    for (const [key, value] of this.storage.entries('plans')) {
      this.sets.frozenReady(key);
      this.frozenJobCount.set(key, value.jobIds.length);
      for (const id of value.jobIds) frozenJobs.add(id);
    }
    for (const id of this.storage.keys('jobs')) {
      if (!frozenJobs.has(id)) this.sets.putReady([id]);
    }
    this.deadCount = this.storage.count('dead');
    for (const last of this.storage.keys('jobs', { reverse: true, limit: 1 })) {
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
    const existing = this.storage.get('receipts', `${projectId}\u0000${idempotencyKey}`);
    if (!existing) return undefined;
    // A parked job stored nothing: answering "deduplicated" would tell the sender it is safe.
    const dead = this.storage.has('dead', existing.receiptId);
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
    const payload = enc.encode(JSON.stringify(record));
    this.checkRoom(payload.length);
    const write = (async () => {
      await this.storage.write(
        (w) => {
          w.put('jobs', id, payload);
          w.put('receipts', key, { receiptId: id, acceptedExecutions: result.acceptedExecutions, receivedAt });
        },
        // A new id and a key no other write holds (`enqueuing` above): nothing read inside.
        { durable: true, blind: true },
      );
      return result;
    })();
    this.enqueuing.set(key, write);
    this.writingBytes += payload.length;
    try {
      await write;
    } catch (err) {
      throw this.storage.explainWriteError(err, payload.length);
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
    if (this.usedBytes() + this.writingBytes + bytes <= this.maxBytes) return;
    // The count since the last read adds batches at their size before the storage compresses them:
    // refuse only on what it really holds, or the next read would open the door with nothing drained.
    const used = this.readUsage();
    if (used + this.writingBytes + bytes <= this.maxBytes) return;
    this.refusedBytes = bytes;
    throw Object.assign(
      new Error(`the queue is full: it holds ${used + this.writingBytes} bytes and this batch needs ${bytes} more, over SERVICE_QUEUE_MAX_BYTES (${this.maxBytes})`),
      { code: 'QUEUE_MAX_BYTES' },
    );
  }

  /** Whether the batch the cap last refused would fit now (the worker drained the queue); false when none was refused. */
  hasRoom(): boolean {
    return this.maxBytes > 0 && this.refusedBytes !== undefined && this.usedBytes() + this.writingBytes + this.refusedBytes <= this.maxBytes;
  }

  /** What the jobs and dead jobs take in the storage (what acks and drops free), re-read every USAGE_REFRESH_MS. */
  usedBytes(now = Date.now()): number {
    return now - this.usageAt >= USAGE_REFRESH_MS ? this.readUsage(now) : this.usage;
  }

  private readUsage(now = Date.now()): number {
    this.usageAt = now;
    this.usage = this.storage.usedBytes();
    return this.usage;
  }

  async dequeue(opts: DequeueOptions): Promise<Lease | null> {
    const taken = await this.takeLease(opts);
    if (!taken) return null;
    const jobs: Job[] = [];
    let decoded = 0;
    for (const [i, id] of taken.jobs.entries()) {
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
    for (const [i, id] of taken.jobs.entries()) {
      const raw = this.storage.get('jobs', id);
      // A copy with its own ArrayBuffer, so it can be transferred to the other thread.
      if (raw) jobs.push({ attempts: taken.attempts[i]!, json: new Uint8Array(raw) });
    }
    return { id: taken.id, jobs, attempt: taken.attempt, ...(taken.plan ? { plan: taken.plan } : {}) };
  }

  private takeLease(opts: DequeueOptions): Promise<TakenLease<string> | null> {
    this.assertOpen();
    const now = Date.now();
    this.leases.expire(now);
    this.sets.promote(now);
    return this.leases.take(this.partition, opts);
  }

  /** This queue's one partition: its sets and storage, as the lease engine uses them. */
  private makePartition(): LeasePartition<string> {
    return {
      p: 0,
      fence: 0,
      sets: this.sets,
      executions: (id) => this.executionCount(id),
      frozenLease: (leaseId) => {
        const rec = this.storage.get('plans', leaseId);
        return rec && { jobs: rec.jobIds.filter((id) => this.storage.has('jobs', id)), plan: rec.plan };
      },
      charge: async (ids) => {
        const counts = ids.map((id) => (this.storage.get('attempts', id) ?? 0) + 1);
        // One atomic batch: on a failure nothing is charged.
        await this.storage.write((w) => ids.forEach((id, i) => w.put('attempts', id, counts[i]!)));
        return counts;
      },
      savePlan: async (leaseId, ids, plan) => {
        await this.storage.write((w) => w.put('plans', leaseId, { jobIds: [...ids], plan }), { durable: true });
        this.frozenJobCount.set(leaseId, ids.length);
        this.savedPlans.set(leaseId, plan);
      },
      commit: (leaseId, ids) => this.commit(leaseId, ids),
      keyOf: (id) => (this.storage.has('jobs', id) ? id : undefined),
      failures: () => this.failures,
    };
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

  savePlan(leaseId: string, plan: LeasePlan): Promise<void> {
    return this.leases.savePlan(leaseId, plan);
  }

  ack(leaseId: string): Promise<void> {
    return this.leases.ack(leaseId);
  }

  /** One atomic batch: the lease's jobs go and its events arrive in the outbox together. */
  private async commit(leaseId: string, ids: readonly string[]): Promise<void> {
    const stored = this.storage.has('plans', leaseId);
    const events = stored ? (this.savedPlans.get(leaseId) ?? this.storage.get('plans', leaseId)?.plan)?.events : undefined;
    await this.storage.write((w) => {
      for (const id of ids) {
        w.remove('jobs', id);
        w.remove('attempts', id);
        if (this.storage.has('firstErrors', id)) w.remove('firstErrors', id);
      }
      if (stored) {
        w.remove('plans', leaseId);
        if (events) w.appendOutbox(events);
      }
    });
    this.frozenJobCount.delete(leaseId);
    this.savedPlans.delete(leaseId);
    for (const id of ids) this.execCounts.delete(id);
    if (events && events.length > 0) this.wakeOutbox();
  }

  failJob(leaseId: string, jobId: string, error: string): Promise<void> {
    return this.leases.failJob(leaseId, jobId, error);
  }

  nack(leaseId: string, error: string, opts: NackOptions = {}): Promise<void> {
    return this.leases.nack(leaseId, error, opts);
  }

  /** The failure policy's decisions (./failure-policy.ts) on the storage and this queue's in-memory sets. */
  private makeFailureSink(): FailureSink<string> {
    return {
      attempts: (id) => this.storage.get('attempts', id) ?? 0,
      refund: (ids) =>
        this.storage.write((w) => {
          for (const id of ids) {
            const n = this.storage.get('attempts', id) ?? 0;
            if (n <= 1) w.remove('attempts', id);
            else w.put('attempts', id, n - 1);
          }
        }),
      noteFirstErrors: async (ids, error) => {
        const fresh = ids.filter((id) => !this.storage.has('firstErrors', id));
        if (fresh.length === 0) return;
        await this.storage.write((w) => {
          for (const id of fresh) w.put('firstErrors', id, error);
        });
      },
      unfreeze: async (leaseId) => {
        await this.storage.write((w) => w.remove('plans', leaseId));
        this.frozenJobCount.delete(leaseId);
        this.savedPlans.delete(leaseId);
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
    await this.storage.write((w) => {
      for (const id of jobIds) {
        const raw = this.storage.get('jobs', id);
        if (!raw) continue;
        const rec = JSON.parse(dec.decode(raw)) as JobRecord;
        const dead: DeadJob = {
          job: this.toJob(rec, this.storage.get('attempts', id) ?? 1),
          error,
          firstError: this.storage.get('firstErrors', id) ?? error,
          diedAt,
          sizeBytes: raw.length,
          ...(planId !== undefined ? { frozenLeaseId: planId } : {}),
        };
        w.put('dead', id, dead);
        w.remove('jobs', id);
        w.remove('attempts', id);
        w.remove('firstErrors', id);
        buried.push(dead);
      }
      if (planId !== undefined) {
        const plan = this.storage.get('plans', planId);
        if (plan) w.put('deadPlans', planId, plan);
        w.remove('plans', planId);
      }
    });
    if (planId !== undefined) {
      this.frozenJobCount.delete(planId);
      this.savedPlans.delete(planId);
    }
    this.deadCount += buried.length;
    for (const id of jobIds) this.execCounts.delete(id);
    for (const d of buried) {
      this.logger?.error(
        { jobId: d.job.id, projectId: d.job.projectId, attempts: d.job.attempts, frozenLeaseId: d.frozenLeaseId, error },
        'job parked as dead after repeated failures',
      );
    }
  }

  private toJob(rec: JobRecord, attempts: number): Job {
    return { ...rec, receiptId: rec.id, attempts };
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
    const inflight = this.leases.inflight();
    const frozenSize = (id: string): number => this.frozenJobCount.get(id) ?? 0;
    return { pending: this.sets.pendingJobs(frozenSize), inflight, dead: this.deadCount, delayed: this.sets.delayedJobs(frozenSize) };
  }

  depth(): number {
    const s = this.stats();
    return s.pending + s.inflight;
  }

  deadJobs(limit = 100, after?: string): DeadJob[] {
    return [...this.storage.entries('dead', { limit, ...(after !== undefined ? { after } : {}) })].map(([, value]) => value);
  }

  deadJob(id: string): DeadJob | undefined {
    return this.storage.get('dead', id);
  }

  requeueDead(id: string): Promise<DeadJobAction | null> {
    return this.deadOps.requeue(id, async ({ records, plan, frozenLeaseId }) => {
      await this.storage.write(
        (w) => {
          for (const d of records) {
            const stored: StoredJob = { id: d.job.id, projectId: d.job.projectId, source: d.job.source, batch: d.job.batch, receivedAt: d.job.receivedAt };
            w.put('jobs', d.job.id, enc.encode(JSON.stringify(stored)));
            w.remove('dead', d.job.id);
            w.remove('attempts', d.job.id);
          }
          // The same lease id and plan: what it already wrote under that id is deduplicated.
          if (frozenLeaseId !== undefined && plan) {
            w.put('plans', frozenLeaseId, plan);
            w.remove('deadPlans', frozenLeaseId);
          }
        },
        { durable: true },
      );
      this.deadCount -= records.length;
      for (const d of records) this.execCounts.set(d.job.id, d.job.batch.executions.length);
      if (frozenLeaseId !== undefined && plan) {
        this.sets.frozenReady(frozenLeaseId);
        this.frozenJobCount.set(frozenLeaseId, plan.jobIds.length);
      } else {
        this.sets.putReady(records.map((d) => d.job.id));
      }
      this.wake();
    });
  }

  dropDead(id: string): Promise<DeadJobAction | null> {
    return this.deadOps.drop(id, async ({ records, frozenLeaseId }) => {
      await this.storage.write(
        (w) => {
          for (const d of records) {
            w.remove('dead', d.job.id);
            // Released: the same batch may be sent again and is then a new job.
            w.remove('receipts', `${d.job.projectId}\u0000${d.job.batch.idempotencyKey}`);
          }
          if (frozenLeaseId !== undefined) w.remove('deadPlans', frozenLeaseId);
        },
        { durable: true },
      );
      this.deadCount -= records.length;
    });
  }

  private deadGroup(id: string): Promise<{ records: DeadJob[]; plan?: PlanRecord; frozenLeaseId?: string } | null> {
    return deadGroupOf(
      id,
      (j) => this.storage.get('dead', j),
      (leaseId) => this.storage.get('deadPlans', leaseId),
    );
  }

  private makeOutbox(): Outbox {
    const cursorKey = (subscriber: string): string => `cursor:${subscriber}`;
    return {
      append: async (events: readonly DomainEvent[]): Promise<void> => {
        if (events.length === 0) return;
        await this.storage.write((w) => w.appendOutbox(events), { durable: true });
        this.wakeOutbox();
      },
      read: (afterSeq: number, limit: number): OutboxEntry[] => this.storage.readOutbox(afterSeq, limit),
      cursor: (subscriber: string): number => this.storage.get('meta', cursorKey(subscriber)) ?? 0,
      setCursor: (subscriber: string, seq: number): Promise<void> => this.storage.write((w) => w.put('meta', cursorKey(subscriber), seq)),
      trim: async (subscribers: readonly string[]): Promise<void> => {
        if (subscribers.length === 0) return;
        const min = Math.min(...subscribers.map((s) => this.storage.get('meta', cursorKey(s)) ?? 0));
        await this.storage.write((w) => w.trimOutbox(min));
      },
      waitForEntries: (timeoutMs: number): Promise<void> => this.outboxWaiters.wait(timeoutMs),
    };
  }

  private getJob(id: string): JobRecord | undefined {
    const raw = this.storage.get('jobs', id);
    return raw === undefined ? undefined : (JSON.parse(dec.decode(raw)) as JobRecord);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('queue is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wake();
    this.wakeOutbox();
    await this.storage.close();
  }
}

/** Job ids are UUIDv7s that sort in receipt order (EmbeddedQueue.nextJobId). */
function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

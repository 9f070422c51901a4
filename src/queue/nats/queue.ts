// The queue on NATS JetStream: what lets ingest processes and workers run on several machines.
// Streams and buckets (see names.ts): jobs `<P>_JOBS` (WorkQueue, one subject per partition,
// partition = hash(project) mod P), dead letters `<P>_DEAD`, the outbox `<P>_OUTBOX`, and KV
// buckets for receipts, frozen plans, charged attempts, outbox cursors and partition leases.
//
// How the contract (src/queue/types.ts) maps onto JetStream:
//  - enqueue: the receipts KV answers replays; otherwise the job is published with msgID = the key's
//    hash (a racing or retried publish inside the duplicate window answers the original seq, hence
//    the same receipt) and resolves only on the stream's PubAck. A stream at its limits refuses the
//    publish (DiscardPolicy.New): enqueue throws `errors.backpressure()` (503).
//  - workers own partitions through PartitionLeases; on acquiring one the owner recreates its
//    durable consumer, so every unacked message comes back at once, oldest first.
//  - the owner holds what it pulled (partition.ts) and heartbeats it with `working()`. Visibility
//    timeouts, splits, backoffs and frozen leases are run by the owner in memory, as the embedded
//    queue does; JetStream's AckWait only redelivers when the owner stops heartbeating (it died
//    or hung), and then the partition lease moves too.
//  - charged attempts are kept in KV (attempts.ts), frozen plans in KV (plans.ts); dead jobs go to
//    the dead stream, their receipts are marked dead.
//  - a lease holds the jobs of one partition (its fence is checked before the ack commits), so
//    receipt order holds per project, not across projects of different partitions.
//  - stats()/depth() are synchronous: exact for what this process did, plus stream counts refreshed
//    every second. Across processes they are approximate (another owner's in-flight jobs count as
//    pending here); the stream limits are the hard backpressure.
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import {
  AckPolicy,
  DeliverPolicy,
  connect,
  headers,
  nanos,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
  type Subscription,
} from 'nats';
import type { Logger } from 'pino';
import { Waiters } from '../waiters.js';
import { DeadJobOps, deadGroupOf, FailurePolicy, type DeadGroup, type FailureSink } from '../failure-policy.js';
import { LeaseEngine, type HeldLease, type LeasePartition } from '../lease-engine.js';
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
  Queue,
  QueueStats,
  RawLease,
  RawLeaseSource,
  StoredJob,
} from '../types.js';
import { Attempts } from './attempts.js';
import { DeadLetters, type StoredDead } from './dead-letters.js';
import { isNotFound, mapPublishError, mapUnavailable } from './errors.js';
import { errors } from '../../errors/catalogue.js';
import { legacyReceiptIdFromSeq, receiptIdFor } from './ids.js';
import { natsNames, type NatsNames } from './names.js';
import { NatsOutbox } from './outbox.js';
import { OwnedPartition, type HeldMsg } from './partition.js';
import { PartitionLeases, openLeaseBucket, partitionOf } from './partition-leases.js';
import { Plans, type PlanRecord } from './plans.js';
import { Receipts } from './receipts.js';
import { ensureQueueStreams, type QueueStreams } from './streams.js';

export interface NatsQueueOptions {
  /** nats:// URL(s) to connect to; or `connection`, an open connection (not closed by close()). */
  servers?: string | string[];
  connection?: NatsConnection;
  /** Names every stream and bucket of this queue. */
  prefix: string;
  /** P: the number of partitions (default 16). Every process of one queue must use the same P. */
  partitions?: number;
  visibilityMs: number;
  maxAttempts: number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Jobs stream limits; at the limit enqueue throws the 503 backpressure error. */
  maxBytes?: number;
  maxMsgs?: number;
  /** The stream's duplicate window (default 10 min). */
  duplicateWindowMs?: number;
  /** Unique per process (default hostname:pid:random). */
  ownerId?: string;
  /** Partition lease TTL (default 10 s). */
  leaseTtlMs?: number;
  /** False for an ingest-only process: enqueue, receipts and dead letters; no partitions, no consumers. */
  consume?: boolean;
  /**
   * Deliveries (charged attempts, or JetStream deliveries) after which a job that was never acked
   * nor failed (it crashed or hung its workers) is parked as dead. Default 20 × maxAttempts.
   */
  maxDeliver?: number;
  /**
   * The consumers' AckWait (default max(visibilityMs, 30 s)): JetStream redelivers a held message
   * only when its owner stopped heartbeating it for this long. Heartbeats go every third of it.
   */
  ackWaitMs?: number;
  /** Most messages one partition owner holds in memory (default 5,000). */
  maxHeld?: number;
  /** A pull that delivers nothing for this long is given up and p's consumer recreated (default 5 s). */
  pullTimeoutMs?: number;
  /** How long an ack waits for JetStream's confirmation before it is kept and retried (default 5 s). */
  ackTimeoutMs?: number;
  logger?: Logger;
}

/** A dead-letter record with its job and frozen lease at hand, as the dead-job operations use it. */
type DeadRecord = StoredDead & { job: DeadJob['job']; frozenLeaseId?: string };

/**
 * A job as published, with its id (`receiptIdFor`: the same for every publish of the key's
 * generation). `id` is absent only in messages published before ids were written at publish.
 */
type JobPayload = Omit<StoredJob, 'id'> & { id?: string };

const enc = new TextEncoder();
/** Bytes kept free in a message for its headers. */
const MESSAGE_HEADROOM = 1024;
const dec = new TextDecoder();
/** How often the stream counts behind stats() are re-read. */
const REFRESH_MS = 1_000;
/** The consumers' AckWait: redelivery only when the owner stops heartbeating (it is dead or hung). */
const MIN_ACK_WAIT_MS = 30_000;
const LEASE_HEADER = 'Fh-Lease';
/** How long an ack waits for JetStream's confirmation. */
const ACK_TIMEOUT_MS = 5_000;
/** A pull that delivers nothing for this long is given up (see pull()). */
const PULL_TIMEOUT_MS = 5_000;
/** How often a partition waiting to recreate its consumer is looked at again. */
const RESET_RETRY_MS = 250;

export class NatsQueue implements Queue, RawLeaseSource {
  readonly outbox: NatsOutbox;
  private readonly names: NatsNames;
  private readonly partitions: number;
  private readonly visibilityMs: number;
  private readonly maxDeliver: number;
  private readonly maxHeld: number;
  private readonly pullTimeoutMs: number;
  private readonly ackTimeoutMs: number;
  private readonly ackWaitMs: number;
  private readonly consume: boolean;
  private readonly logger: Logger | undefined;
  private readonly receipts: Receipts;
  private readonly plans: Plans;
  private readonly attempts: Attempts;
  private readonly dead: DeadLetters;
  private readonly parts = new Map<number, OwnedPartition>();
  /** Leases in hand and what becomes of them (../lease-engine.ts), over the partitions this process owns. */
  private readonly leases: LeaseEngine<number>;
  /** Each owned partition as the lease engine sees it. */
  private readonly leaseParts = new WeakMap<OwnedPartition, LeasePartition<number>>();
  private readonly acquiring = new Set<Promise<void>>();
  private readonly enqueuing = new Map<string, Promise<EnqueueResult>>();
  private ownership: PartitionLeases | undefined;
  private readonly subs: Subscription[] = [];
  private timers: NodeJS.Timeout[] = [];
  private readonly workWaiters = new Waiters();
  /** Requeue and drop of dead jobs, one group at a time. */
  private readonly deadOps: DeadJobOps<DeadRecord, PlanRecord>;
  private readonly policy: FailurePolicy;
  /** Stream counts at the last refresh, and what this process changed since. */
  private storedBase = 0;
  private storedDelta = 0;
  private deadBase = 0;
  private deadDelta = 0;
  /** Mutations of the stream counts in progress / started: a refresh overlapping one is discarded. */
  private mutating = 0;
  private mutGen = 0;
  private closed = false;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly streams: QueueStreams,
    opts: NatsQueueOptions,
  ) {
    this.names = natsNames(opts.prefix);
    this.partitions = opts.partitions ?? 16;
    this.visibilityMs = opts.visibilityMs;
    this.policy = new FailurePolicy({ maxAttempts: opts.maxAttempts, baseBackoffMs: opts.baseBackoffMs ?? 1000, maxBackoffMs: opts.maxBackoffMs ?? 60_000 }, opts.logger);
    this.maxDeliver = opts.maxDeliver ?? 20 * opts.maxAttempts;
    this.deadOps = new DeadJobOps((id) => this.deadGroup(id), opts.logger);
    this.leases = new LeaseEngine<number>({
      visibilityMs: opts.visibilityMs,
      policy: this.policy,
      partition: (p, fence) => this.currentPart(p, fence),
      maxDeliveries: this.maxDeliver,
      ...(opts.logger ? { logger: opts.logger } : {}),
    });
    this.maxHeld = opts.maxHeld ?? 5_000;
    this.pullTimeoutMs = opts.pullTimeoutMs ?? PULL_TIMEOUT_MS;
    this.ackTimeoutMs = opts.ackTimeoutMs ?? ACK_TIMEOUT_MS;
    this.ackWaitMs = opts.ackWaitMs ?? Math.max(opts.visibilityMs, MIN_ACK_WAIT_MS);
    this.consume = opts.consume ?? true;
    this.logger = opts.logger;
    this.receipts = new Receipts(streams.receipts);
    this.plans = new Plans(streams.plans);
    this.attempts = new Attempts(streams.attempts);
    this.dead = new DeadLetters(js, jsm, this.names);
    this.outbox = new NatsOutbox(nc, js, jsm, this.names, streams.cursors);
    // One dispatcher among the workers: the owner of partition 0 (it moves with the partition; the
    // cursor is in KV, so the next owner goes on where the last one stopped, at least once).
    this.outbox.dispatchesHere = () => this.consume && (this.ownership?.owned().has(0) ?? false);
  }

  static async open(opts: NatsQueueOptions): Promise<NatsQueue> {
    const ownsConnection = opts.connection === undefined;
    const nc = opts.connection ?? (await connect({ servers: opts.servers ?? 'nats://127.0.0.1:4222', maxReconnectAttempts: -1 }));
    try {
      const jsm = await nc.jetstreamManager();
      const js = nc.jetstream();
      const names = natsNames(opts.prefix);
      const streams = await ensureQueueStreams(js, jsm, names, {
        duplicateWindowMs: opts.duplicateWindowMs ?? 10 * 60_000,
        ...(opts.maxMsgs !== undefined ? { maxMsgs: opts.maxMsgs } : {}),
        ...(opts.maxBytes !== undefined ? { maxBytes: opts.maxBytes } : {}),
      });
      const q = new NatsQueue(nc, ownsConnection, js, jsm, streams, opts);
      await q.start(opts);
      return q;
    } catch (err) {
      if (ownsConnection) await nc.close();
      throw err;
    }
  }

  private async start(opts: NatsQueueOptions): Promise<void> {
    await this.refresh();
    const refresher = setInterval(() => void this.refresh().catch(() => undefined), REFRESH_MS);
    refresher.unref?.();
    this.timers.push(refresher);
    if (!this.consume) return;
    // Work published by any process rings the partition's doorbell (not the jobs subject itself:
    // every payload would be copied to every worker).
    this.subs.push(
      this.nc.subscribe(this.names.workWildcard, {
        callback: (_err, msg) => {
          const part = this.parts.get(Number(msg.subject.slice(msg.subject.lastIndexOf('.') + 1)));
          if (part) {
            part.arrivals++;
            part.maybeMore = true;
          }
          this.wake();
        },
      }),
    );
    this.subs.push(
      this.nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${this.names.jobsStream}.*`, {
        callback: (err, msg) => {
          if (err) return;
          void this.onMaxDeliveries(msg.data).catch((e: unknown) => this.logger?.error({ err: e }, 'nats queue: max-deliveries advisory failed'));
        },
      }),
    );
    const heartbeat = setInterval(() => this.heartbeat(), Math.max(100, Math.floor(this.ackWaitMs / 3)));
    heartbeat.unref?.();
    this.timers.push(heartbeat);
    const kv = await openLeaseBucket(this.js, this.names.leasesBucket);
    this.ownership = new PartitionLeases({
      kv,
      partitions: this.partitions,
      ownerId: opts.ownerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
      ttlMs: opts.leaseTtlMs ?? 10_000,
      onAcquire: (p, fence) => this.track(this.acquire(p, fence)),
      onLose: (p, voluntary) => this.lose(p, voluntary),
      ...(this.logger ? { logger: this.logger } : {}),
    });
    await this.ownership.start();
    await this.settleAcquisitions();
  }

  // --- partitions ---------------------------------------------------------------------------

  private track(work: Promise<void>): Promise<void> {
    this.acquiring.add(work);
    void work.finally(() => this.acquiring.delete(work)).catch(() => undefined);
    return work;
  }

  private async settleAcquisitions(): Promise<void> {
    // onAcquire runs in a microtask after the claim: one turn, then whatever is in flight.
    await new Promise((r) => setImmediate(r));
    while (this.acquiring.size > 0) await Promise.allSettled([...this.acquiring]);
  }

  /** A new owner of p: recreate its consumer (unacked messages come back, oldest first), load its plans and attempts. */
  private async acquire(p: number, fence: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.acquireOnce(p, fence);
      } catch (err) {
        if (this.closed || this.ownership?.owned().get(p) !== fence) throw err;
        if (attempt >= 5) {
          // Still ours: not left unserved. A placeholder that leases nothing; dequeue sets p up
          // again (resetIfIdle) every RESET_RETRY_MS until it works, without waiting here.
          const placeholder = new OwnedPartition(p, fence);
          placeholder.resetPending = true;
          this.parts.set(p, placeholder);
          this.logger?.warn({ err, partition: p, attempt }, 'nats queue: setting up an acquired partition failed; dequeue will retry');
          return;
        }
        this.logger?.warn({ err, partition: p, attempt }, 'nats queue: setting up an acquired partition failed; retrying');
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
  }

  private async acquireOnce(p: number, fence: number): Promise<void> {
    if (this.closed) return;
    const info = await this.recreateConsumer(p);
    const part = new OwnedPartition(p, fence);
    // A new consumer: everything unacked in p is pending on it.
    part.maybeMore = info.num_pending > 0;
    const [plans] = await Promise.all([this.plans.listLive(p), this.attempts.load(p)]);
    for (const rec of plans) part.addPlan(rec);
    // Lost (or lost and won again under a new fence) while this was set up: not ours to serve.
    if (this.closed || (this.ownership !== undefined && this.ownership.owned().get(p) !== fence)) return;
    this.parts.set(p, part);
    this.logger?.info({ partition: p, fence, frozenLeases: plans.length }, 'nats queue: partition acquired');
    this.wake();
  }

  /** Deletes and adds p's durable consumer: every unacked message of p is pending on it again, oldest first. */
  private async recreateConsumer(p: number): Promise<{ num_pending: number }> {
    const name = this.names.consumer(p);
    await this.jsm.consumers.delete(this.names.jobsStream, name).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
    return this.jsm.consumers.add(this.names.jobsStream, {
      durable_name: name,
      filter_subject: this.names.jobsSubject(p),
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(this.ackWaitMs),
      max_deliver: this.maxDeliver,
      max_ack_pending: Math.max(this.maxHeld * 2, 10_000),
    });
  }

  /**
   * A pull that failed or went unanswered (NATS restarted under it) may have lost messages the
   * consumer counts as delivered: JetStream would bring them back only after AckWait, behind the
   * jobs pulled since, out of order. So the owner stops leasing from p and, once no lease of p is
   * out, takes p over from itself as a new owner would: a recreated consumer (everything unacked
   * comes back, in seq order) and a fresh partition state (plans and attempts from KV). Nothing of
   * the old deliveries is kept: an ack through one of them could miss the new consumer.
   */
  private async resetIfIdle(part: OwnedPartition): Promise<void> {
    if (this.leases.holds(part.p, part.fence)) return;
    try {
      await this.ownership?.assertFence(part.p, part.fence);
      if (part.closed || this.parts.get(part.p) !== part) return;
      await this.acquireOnce(part.p, part.fence);
    } catch (err) {
      this.logger?.warn({ err, partition: part.p }, 'nats queue: recreating the consumer after a failed pull failed; retrying');
      return;
    }
    part.closed = true;
    this.logger?.info({ partition: part.p, fence: part.fence }, 'nats queue: consumer recreated after a failed pull');
  }

  /**
   * p is gone (handed back or lost): stop pulling; what was held comes back to the next owner. When
   * handed back for balance (not on close), leases already out are given up to visibilityMs to
   * finish first (the lease is still renewed meanwhile): their acks still count.
   */
  private async lose(p: number, voluntary: boolean): Promise<void> {
    const part = this.parts.get(p);
    if (!part) return;
    part.draining = true;
    if (voluntary && !this.closed) {
      const until = Date.now() + this.visibilityMs;
      while (Date.now() < until && this.leases.holds(p, part.fence, true)) {
        await new Promise((r) => setTimeout(r, 50));
        if (this.closed) break;
      }
    }
    if (this.parts.get(p) !== part) return;
    part.closed = true;
    this.parts.delete(p);
    this.attempts.forget(p);
    this.leases.dropPartition(p);
    this.logger?.info({ partition: p, voluntary }, 'nats queue: partition released');
  }

  private heartbeat(): void {
    for (const part of this.parts.values()) {
      for (const h of part.held.values()) h.msg.working();
      void this.retryAcks(part);
    }
  }

  // --- enqueue ------------------------------------------------------------------------------

  async accepted(projectId: string, idempotencyKey: string): Promise<EnqueueResult | undefined> {
    this.assertOpen();
    try {
      return Receipts.answer(await this.receipts.get(Receipts.key(projectId, idempotencyKey)));
    } catch (err) {
      throw mapUnavailable(err);
    }
  }

  async enqueue(job: NewJob): Promise<EnqueueResult> {
    this.assertOpen();
    const key = Receipts.key(job.projectId, job.batch.idempotencyKey);
    const racing = this.enqueuing.get(key);
    if (racing) return { ...(await racing), deduplicated: true };
    const write = this.publishJob(key, job);
    this.enqueuing.set(key, write);
    try {
      return await write;
    } catch (err) {
      // NATS away: 503 queue_unavailable (a job published before the failure is answered with its
      // receipt when the sender retries within the duplicate window).
      throw mapUnavailable(err);
    } finally {
      this.enqueuing.delete(key);
    }
  }

  /**
   * A job is one NATS message: one larger than the server's max_payload (1 MiB by default) is the
   * sender's 413 with the limit named, before anything is published, not a failed publish (500).
   */
  private assertFits(bytes: number): void {
    const max = this.nc.info?.max_payload;
    // Headers (the message id) ride in the same budget.
    if (max !== undefined && bytes + MESSAGE_HEADROOM > max) {
      throw errors.payloadTooLarge(
        `this batch is ${bytes} bytes as a queue message and the queue server takes at most ${max} (nats-server max_payload); send smaller batches, or raise max_payload (deploy/nats/nats.conf)`,
      );
    }
  }

  private async publishJob(key: string, job: NewJob): Promise<EnqueueResult> {
    const existing = await this.receipts.get(key);
    const answer = Receipts.answer(existing);
    if (answer) return answer;
    const gen = existing?.gen ?? 0;
    // The id is fixed before the publish and travels in the message: a retried publish (deduplicated
    // by msgID), a redelivery after a server restart or a new consumer all give this same id.
    const receiptId = receiptIdFor(job.projectId, job.batch.idempotencyKey, gen);
    const payload: JobPayload = { id: receiptId, projectId: job.projectId, source: job.source, batch: job.batch, receivedAt: Date.now() };
    const data = enc.encode(JSON.stringify(payload));
    this.assertFits(data.length);
    const acceptedExecutions = job.batch.executions.length;
    this.beginMutation();
    try {
      let ack;
      try {
        ack = await this.js.publish(this.names.jobsSubject(partitionOf(job.projectId, this.partitions)), data, {
          msgID: Receipts.msgId(key, gen),
          expect: { streamName: this.names.jobsStream },
        });
      } catch (err) {
        throw mapPublishError(err);
      }
      // Written after the PubAck: a crash in between leaves a stored job whose replay the duplicate
      // window still answers with the same receipt.
      await this.receipts.put(key, { receiptId, acceptedExecutions, seq: ack.seq, gen });
      if (!ack.duplicate) this.storedDelta++;
      this.ring(job.projectId);
      return { receiptId, acceptedExecutions, deduplicated: ack.duplicate };
    } finally {
      this.endMutation();
    }
  }

  /** Tells the owner of the project's partition (whichever process) that a job is there. */
  private ring(projectId: string): void {
    try {
      this.nc.publish(this.names.workSubject(partitionOf(projectId, this.partitions)));
    } catch {
      // Closed or draining: the owner's next poll finds the job.
    }
    this.wake();
  }

  // --- leases -------------------------------------------------------------------------------

  /**
   * A lease for the pipeline thread: each job as the message was published (its JSON, which the
   * thread parses), copied into a buffer of its own for the transfer, with the job id beside it
   * (the receipt id is the job id here). Not encoded again on this thread.
   */
  async dequeueRaw(opts: DequeueOptions): Promise<RawLease | null> {
    const lease = await this.dequeue(opts);
    if (!lease) return null;
    const part = this.parts.get(this.leases.partitionOf(lease.id) ?? -1);
    const jobs = lease.jobs.map((j) => {
      const seq = part?.byJob.get(j.id);
      const published = seq === undefined ? undefined : part?.held.get(seq)?.msg.data;
      if (published) return { attempts: j.attempts, id: j.id, json: new Uint8Array(published) };
      const stored: StoredJob = { id: j.id, receiptId: j.receiptId, projectId: j.projectId, source: j.source, batch: j.batch, receivedAt: j.receivedAt };
      return { attempts: j.attempts, json: enc.encode(JSON.stringify(stored)) };
    });
    return { id: lease.id, jobs, attempt: lease.attempt, ...(lease.plan ? { plan: lease.plan } : {}) };
  }

  async dequeue(opts: DequeueOptions): Promise<Lease | null> {
    this.assertOpen();
    if (!this.consume) return null;
    if (this.acquiring.size > 0) await this.settleAcquisitions();
    const owned = this.ownership?.owned() ?? new Map<number, number>();
    const candidates = [...this.parts.values()].filter((part) => owned.get(part.p) === part.fence && !part.draining);
    if (candidates.length === 0) return null;
    const now = Date.now();
    this.leases.expire(now);
    for (const x of candidates) if (x.resetPending) await this.resetIfIdle(x);
    const parts = candidates.filter((x) => !x.resetPending);
    for (const part of parts) part.sets.promote(now);
    let part = parts.find((x) => x.sets.hasFrozenOrGroup());
    if (!part) {
      await Promise.all(parts.map((x) => this.fill(x, opts.maxJobs)));
      part = parts.find((x) => !x.closed && x.sets.hasFrozenOrGroup());
      // Oldest first across partitions (one lease holds the jobs of one partition only).
      part ??= parts.filter((x) => !x.closed && x.sets.readyCount > 0).sort((a, b) => a.sets.oldestReady()! - b.sets.oldestReady()!)[0];
    }
    if (!part || part.closed) return null;
    return this.lease(part, opts);
  }

  /** Pulls from p's consumer until `want` jobs are ready (or it has no more), and while a frozen lease is incomplete. */
  private async fill(part: OwnedPartition, want: number): Promise<void> {
    if (part.filling) return part.filling;
    const run = this.pull(part, want).finally(() => {
      part.filling = undefined;
    });
    part.filling = run;
    return run;
  }

  private async pull(part: OwnedPartition, want: number): Promise<void> {
    while (!part.closed && (part.sets.readyCount < want || part.gathering.size > 0) && part.held.size < this.maxHeld) {
      const batch = Math.max(1, Math.min(500, this.maxHeld - part.held.size, part.gathering.size > 0 ? 500 : want - part.sets.readyCount));
      const arrivals = part.arrivals;
      const msgs: JsMsg[] = [];
      const it = this.js.fetch(this.names.jobsStream, this.names.consumer(part.p), { batch, no_wait: true });
      // A no_wait pull has no client-side expiry: one whose request or answer died with the server
      // (a restart) would never end, and every dequeue after it would wait on it.
      let stalled = false;
      const watchdog = setTimeout(() => {
        stalled = true;
        it.stop();
      }, this.pullTimeoutMs);
      try {
        for await (const m of it) {
          msgs.push(m);
          watchdog.refresh();
        }
      } catch (err) {
        // The consumer is being recreated (a takeover) or NATS is unreachable.
        this.logger?.warn({ err, partition: part.p }, 'nats queue: pulling jobs failed');
        stalled = true;
      } finally {
        clearTimeout(watchdog);
      }
      if (stalled) {
        // What this pull got is met again on the recreated consumer.
        this.needsReset(part, { received: msgs.length }, 'nats queue: a pull failed or went unanswered; the consumer will be recreated');
        return;
      }
      try {
        for (const m of msgs) await this.admit(part, m);
      } catch (err) {
        // A message held but neither ready nor gathered, and the rest of the batch not held: the
        // partition's state is rebuilt from the stream instead.
        this.needsReset(part, { err }, 'nats queue: admitting pulled jobs failed; the consumer will be recreated');
        return;
      }
      if (msgs.length < batch) {
        if (part.arrivals === arrivals) part.maybeMore = false;
        break;
      }
    }
  }

  private needsReset(part: OwnedPartition, details: Record<string, unknown>, msg: string): void {
    if (part.closed || this.closed) return;
    part.resetPending = true;
    this.logger?.warn({ partition: part.p, ...details }, msg);
  }

  /** A message pulled from the consumer: ready, part of a frozen lease, or (delivered too often) dead. */
  private async admit(part: OwnedPartition, m: JsMsg): Promise<void> {
    if (part.closed) return;
    const known = part.held.get(m.seq);
    if (known) {
      known.msg = m;
      return;
    }
    let payload: JobPayload;
    try {
      payload = JSON.parse(dec.decode(m.data)) as JobPayload;
    } catch (err) {
      // Not a job this queue wrote: nothing to retry or dead-letter as a job.
      this.logger?.error({ err, partition: part.p, seq: m.seq }, 'nats queue: undecodable job message terminated');
      m.term();
      return;
    }
    const job: StoredJob = {
      id: payload.id ?? legacyReceiptIdFromSeq(this.streams.jobsCreatedMs, m.seq),
      projectId: payload.projectId,
      source: payload.source,
      batch: payload.batch,
      receivedAt: payload.receivedAt,
    };
    const h: HeldMsg = { seq: m.seq, msg: m, job, bytes: m.data.length, executions: job.batch.executions.length };
    part.hold(h);
    if (this.attempts.get(part.p, m.seq).acked) {
      // Committed by an earlier delivery whose ack never landed: acked, not processed again.
      part.unacked.add(m.seq);
      void this.retryAcks(part);
      return;
    }
    const leaseId = part.seqToPlan.get(m.seq) ?? m.headers?.get(LEASE_HEADER) ?? '';
    if (leaseId !== '') {
      let rec = part.plans.get(leaseId);
      if (!rec) {
        rec = await this.plans.getLive(part.p, leaseId);
        if (rec && !part.closed) part.addPlan(rec);
      }
      if (rec && rec.jobIds.includes(job.id)) {
        const inHand = part.gathering.get(leaseId) ?? new Set<string>();
        inHand.add(job.id);
        if (inHand.size >= rec.jobIds.length) {
          part.gathering.delete(leaseId);
          part.sets.frozenReady(leaseId);
        } else {
          part.gathering.set(leaseId, inHand);
        }
        return;
      }
    }
    if (this.attempts.get(part.p, m.seq).n >= this.maxDeliver) {
      await this.leases.during(1, () => this.bury(part, [m.seq], `delivered ${this.maxDeliver} times without being acked or failed (it crashed or hung its workers)`));
      return;
    }
    part.sets.putReady([m.seq]);
  }

  private async lease(part: OwnedPartition, opts: DequeueOptions): Promise<Lease | null> {
    const taken = await this.leases.take(this.leasePart(part), opts);
    if (!taken) return null;
    const jobs: Job[] = [];
    taken.jobs.forEach((seq, i) => {
      const h = part.held.get(seq);
      if (h) jobs.push({ ...h.job, receiptId: h.job.id, attempts: taken.attempts[i]! });
    });
    return { id: taken.id, jobs, attempt: taken.attempt, ...(taken.plan ? { plan: taken.plan } : {}) };
  }

  /** The lease engine's view of an owned partition (while it is current: same number and fence). */
  private currentPart(p: number, fence: number): LeasePartition<number> | undefined {
    const part = this.parts.get(p);
    return part && part.fence === fence ? this.leasePart(part) : undefined;
  }

  /** p's storage for the lease engine: held messages, attempts and plans in KV, commit by outbox then acks. */
  private leasePart(part: OwnedPartition): LeasePartition<number> {
    const known = this.leaseParts.get(part);
    if (known) return known;
    const made: LeasePartition<number> = {
      p: part.p,
      fence: part.fence,
      sets: part.sets,
      executions: (seq) => part.held.get(seq)?.executions,
      frozenLease: (leaseId) => {
        const rec = part.plans.get(leaseId);
        return rec && { jobs: rec.jobIds.map((j) => part.byJob.get(j)).filter((s): s is number => s !== undefined), plan: rec.plan };
      },
      charge: async (seqs) => {
        const before = seqs.map((seq) => this.attempts.get(part.p, seq));
        try {
          return await Promise.all(
            seqs.map(async (seq, i) => {
              const next = { ...before[i]!, n: before[i]!.n + 1 };
              await this.attempts.set(part.p, seq, next);
              return next.n;
            }),
          );
        } catch (err) {
          seqs.forEach((seq, i) => this.attempts.restore(part.p, seq, before[i]!));
          throw err;
        }
      },
      savePlan: async (leaseId, seqs, plan) => {
        const jobIds = seqs.map((s) => part.held.get(s)?.job.id).filter((j): j is string => j !== undefined);
        const rec: PlanRecord = { leaseId, partition: part.p, jobIds, seqs: [...seqs], plan };
        await this.plans.putLive(rec);
        part.addPlan(rec);
      },
      commit: async (leaseId, seqs) => {
        this.beginMutation();
        try {
          await this.commit(part, leaseId, seqs);
        } finally {
          this.endMutation();
        }
      },
      keyOf: (jobId) => part.byJob.get(jobId),
      failures: (lease) => this.failureSink(part, lease),
    };
    this.leaseParts.set(part, made);
    return made;
  }

  savePlan(leaseId: string, plan: LeasePlan): Promise<void> {
    return this.leases.savePlan(leaseId, plan);
  }

  ack(leaseId: string): Promise<void> {
    return this.leases.ack(leaseId, async (p, fence) => {
      await this.ownership?.assertFence(p, fence);
    });
  }

  /** Appends an acked lease's events, then acks its job messages. */
  private async commit(part: OwnedPartition, leaseId: string, seqs: readonly number[]): Promise<void> {
    const plan = part.plans.get(leaseId);
    // Outbox first, with ids derived from the lease: a crash before the acks below redelivers
    // the lease, and its second ack's events are deduplicated by the stream.
    // A failed publish commits nothing: it throws, and the lease engine keeps the lease in hand
    // for the caller's nack.
    if (plan && plan.plan.events.length > 0) {
      await this.outbox.publish(
        plan.plan.events,
        plan.plan.events.map((_, i) => `${leaseId}:${i}`),
      );
    }
    // From here the lease is committed: what fails below is retried here, never handed back.
    await this.ackMessages(part, seqs);
    if (plan) {
      await this.plans.removeLive(part.p, leaseId).catch((err: unknown) => this.logger?.warn({ err, leaseId }, 'nats queue: removing a committed plan failed (its jobs are acked or marked so)'));
      part.dropPlan(leaseId);
    }
  }

  /**
   * Acks (and forgets) job messages; WorkQueue retention removes them from the stream. An ack not
   * confirmed (NATS away at that moment) must not be forgotten: released, the message would come
   * back after AckWait as a new job and be processed again. So it stays held (heartbeated), its
   * attempts record is marked `acked` (a new owner meeting it acks it without processing it), and
   * the ack is retried (retryAcks) until it lands or the message is found gone.
   */
  private async ackMessages(part: OwnedPartition, seqs: readonly number[]): Promise<void> {
    const msgs = seqs.map((s) => part.held.get(s)).filter((h): h is HeldMsg => h !== undefined);
    const oks = await Promise.all(msgs.map((h) => h.msg.ackAck({ timeout: this.ackTimeoutMs }).catch(() => false)));
    await Promise.all(msgs.filter((_, i) => oks[i]).map((h) => this.acked(part, h.seq)));
    const missing = msgs.filter((_, i) => !oks[i]).map((h) => h.seq);
    if (missing.length === 0) return;
    this.logger?.warn({ partition: part.p, seqs: missing }, 'nats queue: acks not confirmed; kept and retried');
    for (const s of missing) part.unacked.add(s);
    await Promise.all(missing.map((s) => this.attempts.set(part.p, s, { ...this.attempts.get(part.p, s), acked: true }))).catch((err: unknown) =>
      this.logger?.warn({ err, partition: part.p }, 'nats queue: marking unconfirmed acks failed'),
    );
    void this.retryAcks(part);
  }

  /** One job message gone from the stream: no longer held nor counted, its attempts record dropped. */
  private async acked(part: OwnedPartition, seq: number): Promise<void> {
    part.unacked.delete(seq);
    part.release(seq);
    this.storedDelta--;
    // Left behind in KV, it is garbage that the bucket's TTL removes.
    await this.attempts.remove(part.p, seq).catch(() => undefined);
  }

  /** Retries the acks of committed jobs (part.unacked) until each lands or its message is gone. */
  private retryAcks(part: OwnedPartition): Promise<void> {
    if (part.acking) return part.acking;
    if (part.unacked.size === 0 || part.closed) return Promise.resolve();
    const run = (async () => {
      for (const seq of [...part.unacked]) {
        const h = part.held.get(seq);
        if (part.closed) return;
        if (!h) {
          part.unacked.delete(seq);
          continue;
        }
        let done = await h.msg.ackAck({ timeout: this.ackTimeoutMs }).catch(() => false);
        // An ack that landed although its confirmation was lost: the message is gone already.
        if (!done) done = await this.jsm.streams.getMessage(this.names.jobsStream, { seq }).then(() => false, (err: unknown) => isNotFound(err));
        if (!done || part.closed) continue;
        await this.acked(part, seq);
        this.logger?.info({ partition: part.p, seq }, 'nats queue: a retried ack landed');
      }
    })()
      .catch((err: unknown) => this.logger?.warn({ err, partition: part.p }, 'nats queue: retrying acks failed'))
      .finally(() => {
        part.acking = undefined;
      });
    part.acking = run;
    return run;
  }

  failJob(leaseId: string, jobId: string, error: string): Promise<void> {
    return this.leases.failJob(leaseId, jobId, error);
  }

  nack(leaseId: string, error: string, opts: NackOptions = {}): Promise<void> {
    return this.leases.nack(leaseId, error, opts);
  }

  /** The failure policy's decisions (../failure-policy.ts) on partition p's KV records and in-memory sets; jobs are seqs. */
  private failureSink(part: OwnedPartition, lease: HeldLease<number>): FailureSink<number> {
    return {
      attempts: (s) => this.attempts.get(part.p, s).n,
      refund: async (seqs) => {
        await Promise.all(
          seqs.map((s) => {
            const rec = this.attempts.get(part.p, s);
            return rec.n <= 1 && rec.firstError === undefined ? this.attempts.remove(part.p, s) : this.attempts.set(part.p, s, { ...rec, n: Math.max(0, rec.n - 1) });
          }),
        );
      },
      noteFirstErrors: async (seqs, error) => {
        await Promise.all(
          seqs.map((s) => {
            const rec = this.attempts.get(part.p, s);
            return rec.firstError === undefined ? this.attempts.set(part.p, s, { ...rec, firstError: error }) : Promise.resolve();
          }),
        );
      },
      unfreeze: async (leaseId) => {
        await this.plans.removeLive(part.p, leaseId);
        part.dropPlan(leaseId);
        // Kept in hand on a failure below (the lease engine's nack): it is unfrozen now.
        lease.frozen = false;
      },
      bury: (seqs, error, planId) => this.bury(part, seqs, error, planId),
      toFront: (groups) => part.sets.toFront(groups),
      delay: (d) => part.sets.delay(d),
      wake: () => this.wake(),
    };
  }

  /** Parks jobs as dead: the dead record first, then the receipt, the plan, and the job message last. */
  private async bury(part: OwnedPartition, seqs: readonly number[], error: string, planId?: string): Promise<void> {
    const diedAt = Date.now();
    this.beginMutation();
    try {
      const held = seqs.map((s) => part.held.get(s)).filter((h): h is HeldMsg => h !== undefined);
      for (const h of held) {
        const rec = this.attempts.get(part.p, h.seq);
        const dead: DeadJob = {
          job: { ...h.job, receiptId: h.job.id, attempts: rec.n || 1 },
          error,
          firstError: rec.firstError ?? error,
          diedAt,
          sizeBytes: h.bytes,
          ...(planId !== undefined ? { frozenLeaseId: planId } : {}),
        };
        await this.dead.append(dead, `dead:${h.job.id}:${h.seq}`);
        await this.receipts.update(Receipts.key(h.job.projectId, h.job.batch.idempotencyKey), (r) => ({ ...r, dead: true }));
        this.logger?.error({ jobId: h.job.id, projectId: h.job.projectId, attempts: dead.job.attempts, frozenLeaseId: planId, error }, 'job parked as dead after repeated failures');
      }
      if (planId !== undefined) {
        const plan = part.plans.get(planId);
        if (plan) await this.plans.putDead(plan);
        await this.plans.removeLive(part.p, planId);
        part.dropPlan(planId);
      }
      await this.ackMessages(part, seqs);
      this.deadDelta += held.length;
    } finally {
      this.endMutation();
    }
  }

  /** JetStream gave up on a message (MaxDeliver: its owner kept dying or hanging on it): dead-letter it. */
  private async onMaxDeliveries(data: Uint8Array): Promise<void> {
    const adv = JSON.parse(dec.decode(data)) as { stream?: string; consumer?: string; stream_seq?: number };
    if (adv.stream !== this.names.jobsStream || typeof adv.stream_seq !== 'number') return;
    const seq = adv.stream_seq;
    const part = [...this.parts.values()].find((x) => this.names.consumer(x.p) === adv.consumer);
    if (!part) return;
    const h = part.held.get(seq);
    if (h) {
      if (this.leases.inHand(part.p, seq)) return; // in hand: its holder decides
      part.sets.removeReady(seq);
      await this.leases.during(1, () => this.bury(part, [seq], `JetStream delivered it ${this.maxDeliver} times without an ack`));
      return;
    }
    const stored = await this.jsm.streams.getMessage(this.names.jobsStream, { seq }).catch(() => null);
    if (!stored) return;
    const payload = JSON.parse(dec.decode(stored.data)) as JobPayload;
    const id = payload.id ?? legacyReceiptIdFromSeq(this.streams.jobsCreatedMs, seq);
    const job: StoredJob = { id, projectId: payload.projectId, source: payload.source, batch: payload.batch, receivedAt: payload.receivedAt };
    this.beginMutation();
    try {
      const error = `JetStream delivered it ${this.maxDeliver} times without an ack`;
      await this.dead.append({ job: { ...job, receiptId: id, attempts: this.maxDeliver }, error, firstError: error, diedAt: Date.now(), sizeBytes: stored.data.length }, `dead:${id}:${seq}`);
      await this.receipts.update(Receipts.key(job.projectId, job.batch.idempotencyKey), (r) => ({ ...r, dead: true }));
      await this.jsm.streams.deleteMessage(this.names.jobsStream, seq, false);
      this.storedDelta--;
      this.deadDelta++;
    } finally {
      this.endMutation();
    }
  }

  // --- waiting and counting ------------------------------------------------------------------

  waitForWork(timeoutMs: number): Promise<void> {
    const parts = [...this.parts.values()];
    if (this.consume && parts.some((x) => x.hasWork())) return Promise.resolve();
    const now = Date.now();
    let waitMs = timeoutMs;
    for (const x of parts) waitMs = Math.min(waitMs, Math.max(0, x.sets.nextDueAt() - now), x.resetPending ? RESET_RETRY_MS : waitMs);
    return this.workWaiters.wait(waitMs);
  }

  private wake(): void {
    this.workWaiters.wakeAll();
  }

  stats(): QueueStats {
    let inflight = this.leases.inflight();
    for (const x of this.parts.values()) inflight += x.unacked.size;
    let delayed = 0;
    for (const x of this.parts.values()) delayed += x.delayedJobs();
    const total = Math.max(0, this.storedBase + this.storedDelta);
    return { pending: Math.max(0, total - inflight), inflight, dead: Math.max(0, this.deadBase + this.deadDelta), delayed };
  }

  depth(): number {
    const s = this.stats();
    return s.pending + s.inflight;
  }

  private beginMutation(): void {
    this.mutating++;
    this.mutGen++;
  }

  private endMutation(): void {
    this.mutating--;
    this.mutGen++;
  }

  /** Re-reads the stream counts, unless a mutation of this process overlapped the read. */
  private async refresh(): Promise<void> {
    if (this.closed || this.mutating > 0) return;
    const gen = this.mutGen;
    const [jobs, dead] = await Promise.all([this.jsm.streams.info(this.names.jobsStream), this.jsm.streams.info(this.names.deadStream)]);
    if (this.mutating > 0 || gen !== this.mutGen) return;
    this.storedBase = jobs.state.messages;
    this.storedDelta = 0;
    this.deadBase = dead.state.messages;
    this.deadDelta = 0;
  }

  // --- dead letters ----------------------------------------------------------------------------

  async deadJobs(limit = 100, after?: string): Promise<DeadJob[]> {
    return (await this.dead.page(limit, after)).map((d) => d.dead);
  }

  async deadJob(id: string): Promise<DeadJob | undefined> {
    return (await this.dead.get(id))?.dead;
  }

  private async deadGroup(id: string): Promise<DeadGroup<DeadRecord, PlanRecord> | null> {
    const byId = new Map((await this.dead.all()).map((d) => [d.dead.job.id, d]));
    return deadGroupOf(
      id,
      (j) => {
        const d = byId.get(j);
        return d && { ...d, job: d.dead.job, ...(d.dead.frozenLeaseId !== undefined ? { frozenLeaseId: d.dead.frozenLeaseId } : {}) };
      },
      (leaseId) => this.plans.getDead(leaseId),
    );
  }

  requeueDead(id: string): Promise<DeadJobAction | null> {
    return this.deadOps.requeue(id, async ({ records, plan, frozenLeaseId }) => {
      this.beginMutation();
      try {
        if (frozenLeaseId !== undefined && plan) {
          // The plan first, under the partition its jobs go to: an owner meeting one of them (by
          // the lease header) finds the plan and holds the jobs until all of them are back.
          const p = partitionOf(records[0]!.dead.job.projectId, this.partitions);
          await this.plans.putLive({ ...plan, partition: p, seqs: [] });
        }
        for (const d of records) {
          const j = d.dead.job;
          const stored: StoredJob = { id: j.id, projectId: j.projectId, source: j.source, batch: j.batch, receivedAt: j.receivedAt };
          const h = headers();
          if (frozenLeaseId !== undefined && plan) h.set(LEASE_HEADER, frozenLeaseId);
          let ack;
          try {
            ack = await this.js.publish(this.names.jobsSubject(partitionOf(j.projectId, this.partitions)), enc.encode(JSON.stringify(stored)), {
              msgID: `requeue:${j.id}:${d.seq}`,
              headers: h,
              expect: { streamName: this.names.jobsStream },
            });
          } catch (err) {
            throw mapPublishError(err);
          }
          await this.receipts.update(Receipts.key(j.projectId, j.batch.idempotencyKey), (r) => {
            const { dead: _dead, ...rest } = r;
            return { ...rest, seq: ack.seq };
          });
          await this.dead.remove(d.seq);
          this.ring(j.projectId);
          if (!ack.duplicate) this.storedDelta++;
          this.deadDelta--;
        }
        if (frozenLeaseId !== undefined) await this.plans.removeDead(frozenLeaseId);
      } finally {
        this.endMutation();
      }
      this.wake();
    });
  }

  dropDead(id: string): Promise<DeadJobAction | null> {
    return this.deadOps.drop(id, async ({ records, frozenLeaseId }) => {
      this.beginMutation();
      try {
        for (const d of records) {
          const j = d.dead.job;
          // Released: the same batch may be sent again, as a new job under a new msgID.
          await this.receipts.update(Receipts.key(j.projectId, j.batch.idempotencyKey), (r) => {
            const { dead: _dead, ...rest } = r;
            return { ...rest, gen: r.gen + 1, released: true };
          });
          await this.dead.remove(d.seq);
          this.deadDelta--;
        }
        if (frozenLeaseId !== undefined) await this.plans.removeDead(frozenLeaseId);
      } finally {
        this.endMutation();
      }
    });
  }

  // --- lifecycle -------------------------------------------------------------------------------

  private assertOpen(): void {
    if (this.closed) throw new Error('queue is closed');
  }

  private stopLocal(): void {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const s of this.subs) s.unsubscribe();
    this.subs.length = 0;
    this.outbox.close();
    this.wake();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.stopLocal();
    // Graceful: the partitions are handed back (their unacked jobs go to the next owner).
    await this.ownership?.stop().catch((err: unknown) => this.logger?.warn({ err }, 'nats queue: releasing partitions failed'));
    this.parts.clear();
    this.leases.clear();
    if (this.ownsConnection) await this.nc.drain().catch(() => this.nc.close());
  }

  /** For tests: as if the process were killed (nothing acked or released; the connection dropped). */
  async abandon(): Promise<void> {
    if (this.closed) return;
    this.stopLocal();
    this.ownership?.abandon();
    this.parts.clear();
    this.leases.clear();
    if (this.ownsConnection) await this.nc.close();
  }
}

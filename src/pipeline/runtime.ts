// Builds the components of a validated graph, starts them, and runs the two loops:
//  - the worker: lease → assemble → processors → plan (freeze) → exporters → ack (executions
//    pipelines; the stages of its own are ./stages/);
//  - the dispatcher: outbox → events pipelines, at-least-once with a durable cursor each.
import type { Logger } from 'pino';
import type { DomainEvent } from '../domain/events.js';
import { newLagStats, recordLag, type LagStats } from '../domain/metrics.js';
import { isOutOfSpace } from '../domain/storage-errors.js';
import { countExporter, countingHost, countProcessor, executionsOf, newComponentStats, type ComponentStats, type ReceiverStats } from '../telemetry/component-stats.js';
import type { Lease, WorkerQueue } from '../queue/types.js';
import type { AdmissionCheck, AdmissionRegistry, Component, EventsExporter, EventsProcessor, ExecutionsExporter, ExecutionsProcessor, Host, JobRouter } from './component.js';
import type { WorkBatch } from './work-batch.js';
import { leaseSink, type LeaseSink, type LeaseWrites } from './lease-sink.js';
import { assembleLease } from './stages/assemble.js';
import { leasePlan } from './stages/run-processed.js';
import { processLeaseTree, type RoutablePipeline } from './lease-tree.js';
import type { PipelineGraph, PipelineSpec } from './graph.js';
import type { Store } from '../store/client.js';

/**
 * How much one lease takes by default. Under a backlog every lease is full, and its working set (its
 * records in the pipeline thread, chDB's insert of its rows) is what peaks memory. Measured on 2
 * cores with `npm run bench -- ingest` (single runs, noise about ±20 %), 20,000 / 10,000 / 5,000
 * executions a lease: saturation peak RSS 1,352 / 1,253 / 1,211 MB at about the same throughput; one
 * 100,000-case JUnit report 1,554 / 1,438 / 1,370 MB, stored in 84 / 97 / 184 s. Smaller leases cost
 * a report in parts more, because the identity stage's stitch lookup grows with the run stored so
 * far (issue 40's notes): 10,000 keeps most of the memory bound at the time a report took before.
 */
export const DEFAULT_LEASE_LIMITS = { maxJobs: 500, maxExecutions: 10_000 } as const;

/** How often the events dispatcher writes its outbox cursor while delivering a batch (dispatchLoop). */
const CURSOR_EVERY_MS = 100;

export interface RuntimeOptions {
  graph: PipelineGraph;
  host: Host;
  /**
   * Where the lease's sink writes (./lease-sink.ts): the runtime's own use of the store, which
   * components do not get (the Host has none). This thread's store; absent where no lease is
   * processed here (the receivers' runtime, an ingest process): a write then throws.
   */
  store?: Pick<Store, 'insert' | 'insertTsv'>;
  queue: WorkerQueue;
  /**
   * Where the door checks of the executions pipelines' processors are registered (the ingest
   * service), where this runtime builds receivers; the runtime's own wiring, not the components'.
   */
  admission?: AdmissionRegistry;
  /** Run the worker and dispatcher loops (false in the api-only role). */
  work: boolean;
  /**
   * Which components this runtime builds: `receivers` (the thread that serves HTTP), `processing`
   * (processors, exporters, connectors and the loops: the pipeline thread) or `all` (one thread).
   */
  role?: 'all' | 'receivers' | 'processing';
  pollIntervalMs: number;
  maxLeaseJobs?: number;
  maxLeaseExecutions?: number;
}

/** The sink's store where the runtime was given none: a lease processed there is a wiring bug. */
const NO_SINK_STORE: Pick<Store, 'insert' | 'insertTsv'> = {
  insert: () => Promise.reject(new Error('this pipeline runtime has no store (RuntimeOptions.store): it cannot write a lease')),
  insertTsv: () => Promise.reject(new Error('this pipeline runtime has no store (RuntimeOptions.store): it cannot write a lease')),
};

interface ExecutionsPipeline extends RoutablePipeline<ExecutionsPipeline> {
  spec: PipelineSpec;
  processors: ExecutionsProcessor[];
  exporters: ExecutionsExporter[];
  /** Ids of `exporters`, in order (connectors left out). */
  exporterIds: string[];
  /** Whether events leave this pipeline through the events connector. */
  emitsEvents: boolean;
  /** Fed by the queue (its receivers are receivers), not by a routing connector: it runs the work loop. */
  fedByQueue: boolean;
}

interface EventsPipeline {
  spec: PipelineSpec;
  processors: EventsProcessor[];
  exporters: EventsExporter[];
}

/** What one delivery of a lease did, for handing it back when it fails (`handBack`). */
interface Delivery {
  /** This delivery saved the lease's plan (an earlier delivery's plan: false). */
  frozenHere: boolean;
  /** Set by the lease's sink once an exporter wrote under the lease's id. */
  writes: LeaseWrites;
}

/** Executions into and out of each processor (`[id, in, out]`), and out of the last one. */
interface Processed {
  counts: [string, number, number][];
  out: number;
}

export interface WorkerStats {
  /** Milliseconds spent per stage (processor / exporter id, `plan`, `ack`), since start. */
  stageMs: Record<string, number>;
  leases: number;
  jobs: number;
  executions: number;
  failures: number;
  eventsDelivered: number;
  eventFailures: number;
  /** Processing lag: now − receivedAt of each job when its lease committed (self-telemetry). */
  lag: LagStats;
  /** Executions into and out of each processor, written or failed by each exporter (Collector-style metrics). */
  components: ComponentStats;
}

/** What the daemon exposes of a running pipeline, wherever it runs. */
export interface PipelineHandle {
  readonly stats: WorkerStats;
  /** In-process observers of delivered events (tests, later stages wired in code). */
  onEvent(listener: (e: DomainEvent) => void): () => void;
  /** Runs `f` while no lease is being processed (and none starts). */
  exclusive<T>(f: () => Promise<T>): Promise<T>;
}

const EVENT_RETRIES = 5;

export class PipelineRuntime implements PipelineHandle {
  private readonly components: Component[] = [];
  private readonly executions: ExecutionsPipeline[] = [];
  private readonly events: EventsPipeline[] = [];
  private stopping = false;
  private readonly lock = new WorkLock();
  private loops: Promise<void>[] = [];
  private readonly listeners = new Set<(e: DomainEvent) => void>();
  private readonly logger: Logger;
  /** Receiver components and their ids: each starts with a host that counts its batches. */
  private readonly receiverIds = new Map<Component, string>();
  /** Door checks of the executions pipelines' processors (memory_limiter), by id: built where receivers are. */
  private readonly admissions = new Map<string, AdmissionCheck>();
  readonly stats: WorkerStats = { stageMs: {}, leases: 0, jobs: 0, executions: 0, failures: 0, eventsDelivered: 0, eventFailures: 0, lag: newLagStats(), components: newComponentStats() };
  /** Executions accepted and refused by each receiver of this runtime, by transport (this thread's). */
  readonly receiverStats: ReceiverStats = {};

  constructor(private readonly opts: RuntimeOptions) {
    this.logger = opts.host.logger;
    this.build();
  }

  private build(): void {
    const { graph } = this.opts;
    // One instance per component id and signal, shared by the pipelines that list it.
    const instances = new Map<string, Component>();
    const instance = <T extends Component>(section: string, id: string, signal: string, make: () => T): T => {
      const key = `${section}:${id}:${signal}`;
      let c = instances.get(key) as T | undefined;
      if (!c) {
        c = make();
        instances.set(key, c);
        this.components.push(c);
      }
      return c;
    };
    const role = this.opts.role ?? 'all';
    for (const p of graph.pipelines) {
      for (const id of role === 'processing' ? [] : p.receivers) {
        const spec = graph.components.get(`receivers:${id}`);
        if (spec?.factory.kind === 'receiver') {
          const f = spec.factory;
          const r = instance('receivers', id, p.signal, () => f.create(spec.config, { id, logger: this.logger.child({ component: id }) }));
          this.receiverIds.set(r, id);
        }
      }
      const settings = (id: string): { id: string; logger: Logger } => ({ id, logger: this.logger.child({ component: id }) });
      for (const id of role === 'processing' || p.signal !== 'executions' ? [] : p.processors) {
        const spec = graph.components.get(`processors:${id}`);
        if (spec?.factory.kind === 'processor' && spec.factory.createAdmission && !this.admissions.has(id)) this.admissions.set(id, spec.factory.createAdmission(spec.config, settings(id)));
      }
      if (role === 'receivers') continue;
      if (p.signal === 'executions') {
        const processors = p.processors.map((id) => {
          const spec = graph.components.get(`processors:${id}`)!;
          if (spec.factory.kind !== 'processor' || !spec.factory.createExecutions) throw new Error(`${id} cannot process executions`);
          const f = spec.factory;
          return instance('processors', id, p.signal, () => f.createExecutions!(spec.config, settings(id)));
        });
        const exporters: ExecutionsExporter[] = [];
        const exporterIds: string[] = [];
        const routers: JobRouter[] = [];
        let emitsEvents = false;
        for (const id of p.exporters) {
          const spec = graph.components.get(`exporters:${id}`) ?? graph.components.get(`connectors:${id}`)!;
          if (spec.factory.kind === 'connector') {
            // A connector into events passes the lease's events on (the plan); one that routes
            // hands runs to other executions pipelines within the lease (./lease-tree.ts).
            if (spec.factory.createRouter) routers.push(spec.factory.createRouter(spec.config));
            else emitsEvents = true;
            continue;
          }
          if (spec.factory.kind !== 'exporter' || !spec.factory.createExecutions) throw new Error(`${id} cannot export executions`);
          const f = spec.factory;
          exporters.push(instance('exporters', id, p.signal, () => f.createExecutions!(spec.config, settings(id))));
          exporterIds.push(id);
        }
        const fedByQueue = p.receivers.some((id) => !graph.components.has(`connectors:${id}`));
        const routed = (id: string): ExecutionsPipeline | undefined => this.executions.find((e) => e.spec.id === id);
        this.executions.push({ id: p.id, spec: p, processors, exporters, exporterIds, emitsEvents, fedByQueue, routers, exportsItself: exporters.length > 0 || emitsEvents, routed });
      } else {
        const processors = p.processors.map((id) => {
          const spec = graph.components.get(`processors:${id}`)!;
          if (spec.factory.kind !== 'processor' || !spec.factory.createEvents) throw new Error(`${id} cannot process events`);
          const f = spec.factory;
          return instance('processors', id, p.signal, () => f.createEvents!(spec.config, settings(id)));
        });
        const exporters = p.exporters.map((id) => {
          const spec = graph.components.get(`exporters:${id}`)!;
          if (spec.factory.kind !== 'exporter' || !spec.factory.createEvents) throw new Error(`${id} cannot export events`);
          const f = spec.factory;
          return instance('exporters', id, p.signal, () => f.createEvents!(spec.config, settings(id)));
        });
        this.events.push({ spec: p, processors, exporters });
      }
    }
  }

  async start(): Promise<void> {
    const host = this.opts.host;
    // Before any receiver listens: its first request already meets the checks.
    for (const check of this.admissions.values()) this.opts.admission?.add(check);
    for (const c of this.components) {
      const receiverId = this.receiverIds.get(c);
      await c.start(receiverId === undefined ? host : countingHost(host, receiverId, this.receiverStats));
    }
    if (!this.opts.work) return;
    // The queue feeds one pipeline (the graph refuses a second); routed pipelines run in its leases.
    for (const p of this.executions) if (p.fedByQueue) this.loops.push(this.workLoop(p));
    for (const p of this.events) this.loops.push(this.dispatchLoop(p));
  }

  /** Stops taking work, lets the lease in hand finish, then shuts components down. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
    for (const c of [...this.components].reverse()) {
      try {
        await c.shutdown();
      } catch (err) {
        this.logger.warn({ err }, 'component shutdown failed');
      }
    }
  }

  /**
   * Runs `f` while no lease is being processed (and none starts): for maintenance that must not
   * interleave with the exporters' writes, such as dropping a partition (retention).
   */
  exclusive<T>(f: () => Promise<T>): Promise<T> {
    return this.lock.exclusive(f);
  }

  /** In-process observers of delivered events (tests, later stages wired in code). */
  onEvent(listener: (e: DomainEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async workLoop(p: ExecutionsPipeline): Promise<void> {
    const { queue } = this.opts;
    while (!this.stopping) {
      // Leased under the shared lock, as processed: while the runtime is held exclusively
      // (maintenance, tests) no job is leased, so the jobs queued meanwhile are leased together.
      const outcome = await this.lock.shared(async (): Promise<'idle' | 'done' | 'error'> => {
        // Stopped while waiting for a hold to end (shutdown, or a reload's swap): lease nothing more.
        if (this.stopping) return 'done';
        let lease: Lease | null;
        try {
          lease = await queue.dequeue({ maxJobs: this.opts.maxLeaseJobs ?? DEFAULT_LEASE_LIMITS.maxJobs, maxExecutions: this.opts.maxLeaseExecutions ?? DEFAULT_LEASE_LIMITS.maxExecutions });
        } catch (err) {
          if (!this.stopping) this.logger.error({ err }, 'dequeue failed');
          return 'error';
        }
        if (!lease) return 'idle';
        await this.processLease(p, lease);
        return 'done';
      });
      if (outcome === 'error') {
        if (this.stopping) break;
        await sleep(this.opts.pollIntervalMs);
      } else if (outcome === 'idle') {
        await queue.waitForWork(this.opts.pollIntervalMs);
      }
    }
  }

  /**
   * One lease through the pipeline: assemble → processors → plan (freeze) → exporters → ack. With
   * a routing connector the processors and exporters stages take every pipeline the lease's runs
   * are routed to (./lease-tree.ts), and the plan holds the events of all of them.
   */
  private async processLease(p: ExecutionsPipeline, lease: Lease): Promise<void> {
    const { queue } = this.opts;
    const started = Date.now();
    // What this delivery did, for handing the lease back: froze it, wrote under its id.
    const delivery: Delivery = { frozenHere: false, writes: { wrote: false } };
    try {
      const batch = await assembleLease(lease, (job, err) => queue.failJob(lease.id, job.id, errorMessage(err)));
      const processed = new Map<WorkBatch, Processed>();
      const tree = await processLeaseTree(p, batch, async (pipeline, b) => void processed.set(b, await this.runProcessors(pipeline, b)));
      if (!lease.plan) {
        const plan = leasePlan(tree.map(({ pipeline, batch: b }) => ({ batch: b, emitsEvents: pipeline.emitsEvents })));
        await this.timed('plan', () => queue.savePlan(lease.id, plan));
        delivery.frozenHere = true;
      }
      const exported = new Map<WorkBatch, string[]>();
      for (const { pipeline, batch: b } of tree) {
        // Each batch writes under its own id (a routed one: `<lease>/<pipeline>`); one record of what the delivery wrote.
        const sink = leaseSink(this.opts.store ?? NO_SINK_STORE, b.leaseId, delivery.writes);
        exported.set(b, await this.runExporters(pipeline, b, sink, processed.get(b)!.out));
      }
      await this.timed('ack', () => queue.ack(lease.id));
      for (const { pipeline, batch: b } of tree) this.committed(pipeline, b, processed.get(b)!, exported.get(b)!);
      this.leaseCommitted(batch, started);
    } catch (err) {
      await this.handBack(lease, err, delivery);
    }
  }

  /** Runs the processors in order; what went into and out of each, counted once the lease commits. */
  private async runProcessors(p: ExecutionsPipeline, batch: WorkBatch): Promise<Processed> {
    // Collector-style counts, kept apart until the lease commits: a redelivered lease counts once.
    const counts: [string, number, number][] = [];
    let count = executionsOf(batch.items);
    for (const [i, proc] of p.processors.entries()) {
      const id = p.spec.processors[i]!;
      await this.timed(id, () => proc.processBatch(batch));
      const out = executionsOf(batch.items);
      counts.push([id, count, out]);
      count = out;
    }
    return { counts, out: count };
  }

  /** Runs the exporters in order, each writing through the lease's sink; the ids of those that succeeded. */
  private async runExporters(p: ExecutionsPipeline, batch: WorkBatch, sink: LeaseSink, executions: number): Promise<string[]> {
    const exported: string[] = [];
    for (const [i, exp] of p.exporters.entries()) {
      const id = p.exporterIds[i]!;
      try {
        await this.timed(id, () => exp.exportBatch(batch, sink));
      } catch (err) {
        // A failed write is counted each time it fails (the Collector's send_failed counts attempts).
        countExporter(this.stats.components, id, executions, false);
        throw err;
      }
      exported.push(id);
    }
    return exported;
  }

  /** After the ack, per pipeline the lease went through: processors' caches and component counts. */
  private committed(p: ExecutionsPipeline, batch: WorkBatch, processed: Processed, exported: string[]): void {
    for (const proc of p.processors) proc.committed?.(batch);
    for (const [id, incoming, outgoing] of processed.counts) countProcessor(this.stats.components, id, incoming, outgoing);
    for (const id of exported) countExporter(this.stats.components, id, processed.out, true);
  }

  /** After the ack: the lease's counts and lag (of the batch the queue fed). */
  private leaseCommitted(batch: WorkBatch, started: number): void {
    const { items } = batch;
    const executions = items.reduce((n, i) => n + i.executions.length, 0);
    this.stats.leases++;
    this.stats.jobs += items.length;
    this.stats.executions += executions;
    const committedAt = Date.now();
    for (const item of items) recordLag(this.stats.lag, committedAt - item.job.receivedAt);
    this.logger.debug({ lease: batch.leaseId, jobs: items.length, executions, ms: Date.now() - started }, 'lease committed');
  }

  /**
   * How the queue takes a failed lease back (src/queue/types.ts):
   *  - out of space: the machine's condition; the lease waits whole, no job is charged;
   *  - unfrozen, several jobs: split in halves until the failing job fails alone;
   *  - frozen in this delivery but nothing written under its id yet (no exporter wrote through the
   *    lease's sink, src/pipeline/lease-sink.ts): the plan can be dropped and the lease fails as an
   *    unfrozen one (split). A failed insert counts as not written: ClickHouse inserts a block
   *    atomically, and a lease's inserts are one block each;
   *  - frozen and something written (or frozen by an earlier delivery, which may have written):
   *    it must keep its composition, else the rows under its id would be written again under
   *    new ids; retried whole and, after the last attempt, dead whole (requeued whole).
   */
  private async handBack(lease: Lease, err: unknown, delivery: Delivery): Promise<void> {
    this.stats.failures++;
    const outOfSpace = isOutOfSpace(err);
    const unfreeze = delivery.frozenHere && !delivery.writes.wrote;
    this.logger.warn({ err, lease: lease.id, attempt: lease.attempt, jobs: lease.jobs.length, outOfSpace, frozen: delivery.frozenHere && !unfreeze }, 'lease failed; handed back');
    // A queue across the network (NATS) may be away right now, the likely reason the lease failed:
    // the nack is retried until it lands, or the process stops (then the lease is redelivered to
    // the partition's next owner). A lease neither acked nor handed back would wait out its visibility.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.opts.queue.nack(lease.id, errorMessage(err), { outOfSpace, unfreeze });
        return;
      } catch (e) {
        if (this.stopping || attempt >= NACK_TRIES) {
          this.logger.error({ err: e, lease: lease.id, attempt }, 'nack failed; the lease is redelivered when its visibility ends');
          return;
        }
        if (attempt === 1) this.logger.warn({ err: e, lease: lease.id }, 'nack failed; retrying');
        await sleep(Math.min(5_000, 250 * 2 ** attempt));
      }
    }
  }

  private async timed(stage: string, f: () => Promise<void>): Promise<void> {
    const t0 = performance.now();
    try {
      await f();
    } finally {
      this.stats.stageMs[stage] = (this.stats.stageMs[stage] ?? 0) + (performance.now() - t0);
    }
  }

  private async dispatchLoop(p: EventsPipeline): Promise<void> {
    const outbox = this.opts.queue.outbox;
    const cursorName = `pipeline:${p.spec.id}`;
    const allCursors = this.events.map((e) => `pipeline:${e.spec.id}`);
    while (!this.stopping) {
      // Another worker on the same queue dispatches (see OutboxReader.dispatchesHere).
      if (outbox.dispatchesHere && !(await outbox.dispatchesHere())) {
        await sleep(this.opts.pollIntervalMs);
        continue;
      }
      try {
        const entries = await outbox.read(await outbox.cursor(cursorName), 200);
        if (entries.length === 0) {
          await outbox.waitForEntries(this.opts.pollIntervalMs);
          continue;
        }
        // The cursor is written at most every CURSOR_EVERY_MS and after the batch, not per event (a
        // lease plans hundreds of events; each write is a round trip to the queue's thread and a
        // transaction): a crash redelivers the few events since (at least once, as always; the
        // notifier dedupes by key, the tracker looks its issue up before filing another).
        let delivered: number | null = null;
        let writtenAt = performance.now();
        for (const { seq, event } of entries) {
          // Not delivered because we are stopping: the cursor stays, the event goes out after restart.
          if (!(await this.deliver(p, event))) break;
          delivered = seq;
          if (performance.now() - writtenAt >= CURSOR_EVERY_MS) {
            await outbox.setCursor(cursorName, seq);
            writtenAt = performance.now();
            delivered = null;
          }
          if (this.stopping) break;
        }
        if (delivered !== null) await outbox.setCursor(cursorName, delivered);
        await outbox.trim(allCursors);
      } catch (err) {
        // An outbox across the network (NATS) can be away for a while: the cursor stays where it
        // was, and the events go out once it is back (at least once: one may be delivered again).
        if (this.stopping) break;
        this.logger.warn({ err, pipeline: p.spec.id }, 'outbox unreachable; retrying');
        await sleep(Math.max(this.opts.pollIntervalMs, 1_000));
      }
    }
  }

  /** False only when delivery was cut short by shutdown (the event must be offered again). */
  private async deliver(p: EventsPipeline, original: DomainEvent): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        let event: DomainEvent | null = original;
        for (const proc of p.processors) {
          event = await proc.processEvent(event);
          if (!event) return true;
        }
        for (const exp of p.exporters) await exp.exportEvent(event);
        this.stats.eventsDelivered++;
        for (const l of this.listeners) l(event);
        return true;
      } catch (err) {
        if (this.stopping) return false;
        if (attempt >= EVENT_RETRIES) {
          this.stats.eventFailures++;
          this.logger.error({ err, event: original.id, type: original.type }, 'event delivery failed; skipped');
          return true;
        }
        await sleep(Math.min(10_000, 200 * 2 ** attempt));
      }
    }
  }
}

/** Leases share it (several executions pipelines may run at once); maintenance takes it alone. */
class WorkLock {
  private active = 0;
  private writer: Promise<void> | null = null;
  private idle: (() => void) | null = null;

  async shared<T>(f: () => Promise<T>): Promise<T> {
    while (this.writer) await this.writer;
    this.active++;
    try {
      return await f();
    } finally {
      this.active--;
      if (this.active === 0) this.idle?.();
    }
  }

  async exclusive<T>(f: () => Promise<T>): Promise<T> {
    while (this.writer) await this.writer;
    let release = (): void => {};
    this.writer = new Promise<void>((r) => (release = r));
    try {
      if (this.active > 0) await new Promise<void>((r) => (this.idle = r));
      return await f();
    } finally {
      this.idle = null;
      this.writer = null;
      release();
    }
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Tries of a nack before the lease is left to its visibility timeout (about five minutes of retries). */
const NACK_TRIES = 64;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

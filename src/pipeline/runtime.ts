// Builds the components of a validated graph, starts them, and runs the two loops:
//  - the worker: lease → processors → freeze plan → exporters → ack (executions pipelines);
//  - the dispatcher: outbox → events pipelines, at-least-once with a durable cursor each.
import type { Logger } from 'pino';
import type { DomainEvent } from '../domain/events.js';
import { newLagStats, recordLag, type LagStats } from '../domain/metrics.js';
import { stableUuid } from '../domain/ids.js';
import { buildRun, isTracePart } from '../domain/records.js';
import { isOutOfSpace } from '../domain/storage-errors.js';
import { sanitizeBatch } from '../domain/storable.js';
import { countExporter, countingHost, countProcessor, executionsOf, newComponentStats, type ComponentStats, type ReceiverStats } from '../telemetry/component-stats.js';
import type { Lease, WorkerQueue } from '../queue/types.js';
import type { Store } from '../store/client.js';
import type { Component, EventsExporter, EventsProcessor, ExecutionsExporter, ExecutionsProcessor, Host } from './component.js';
import { WorkBatch, type WorkItem } from './work-batch.js';
import type { PipelineGraph, PipelineSpec } from './graph.js';

export interface RuntimeOptions {
  graph: PipelineGraph;
  host: Host;
  queue: WorkerQueue;
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

interface ExecutionsPipeline {
  spec: PipelineSpec;
  processors: ExecutionsProcessor[];
  exporters: ExecutionsExporter[];
  /** Ids of `exporters`, in order (connectors left out). */
  exporterIds: string[];
  /** Whether events leave this pipeline through the events connector. */
  emitsEvents: boolean;
}

interface EventsPipeline {
  spec: PipelineSpec;
  processors: EventsProcessor[];
  exporters: EventsExporter[];
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
  /** Leases in their exporters stage; a store write marks each of them as having written. */
  private readonly exporting = new Set<{ wrote: boolean }>();
  private readonly logger: Logger;
  /** Receiver components and their ids: each starts with a host that counts its batches. */
  private readonly receiverIds = new Map<Component, string>();
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
        let emitsEvents = false;
        for (const id of p.exporters) {
          const spec = graph.components.get(`exporters:${id}`) ?? graph.components.get(`connectors:${id}`)!;
          if (spec.factory.kind === 'connector') {
            emitsEvents = true;
            continue;
          }
          if (spec.factory.kind !== 'exporter' || !spec.factory.createExecutions) throw new Error(`${id} cannot export executions`);
          const f = spec.factory;
          exporters.push(instance('exporters', id, p.signal, () => f.createExecutions!(spec.config, settings(id))));
          exporterIds.push(id);
        }
        this.executions.push({ spec: p, processors, exporters, exporterIds, emitsEvents });
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
    // Components see a store that reports writes, so a failed lease knows whether it wrote anything.
    const host: Host = { ...this.opts.host, store: reportWrites(this.opts.host.store, () => this.markWritten()) };
    for (const c of this.components) {
      const receiverId = this.receiverIds.get(c);
      await c.start(receiverId === undefined ? host : countingHost(host, receiverId, this.receiverStats));
    }
    if (!this.opts.work) return;
    for (const p of this.executions) this.loops.push(this.workLoop(p));
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
        let lease: Lease | null;
        try {
          lease = await queue.dequeue({ maxJobs: this.opts.maxLeaseJobs ?? 500, maxExecutions: this.opts.maxLeaseExecutions ?? 20_000 });
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

  private markWritten(): void {
    for (const e of this.exporting) e.wrote = true;
  }

  private async processLease(p: ExecutionsPipeline, lease: Lease): Promise<void> {
    const { queue } = this.opts;
    const started = Date.now();
    let frozenHere = false;
    const exporting = { wrote: false };
    try {
      const items: WorkItem[] = [];
      for (const job of lease.jobs) {
        try {
          // The door's check again, for jobs queued before it existed: a value the processors or
          // ClickHouse would reject fails here, alone and before the plan is frozen, not in the
          // exporters, where its lease could only be retried and dead-lettered whole. (Lone
          // surrogates are replaced in place, as the door does.)
          sanitizeBatch(job.batch);
          const run = buildRun({ projectId: job.projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt });
          items.push({ job, run, executions: [] });
        } catch (err) {
          // A job that cannot be read or stored is set aside alone; the rest of the lease goes on.
          if (lease.plan) throw err;
          await queue.failJob(lease.id, job.id, errorMessage(err));
        }
      }
      // The lease's "now" is the time of its newest run (capped at when it arrived): backfilled
      // history is scored and quarantined in its own time, and a redelivery computes the same.
      const received = items.reduce((m, i) => Math.max(m, i.job.receivedAt), 0) || Date.now();
      const now = Math.min(received, items.reduce((m, i) => Math.max(m, i.job.batch.run.startedAt), 0) || received);
      const batch = new WorkBatch({ leaseId: lease.id, items, now });
      // Collector-style counts, kept apart until the lease commits: a redelivered lease counts once.
      const processed: [string, number, number][] = [];
      let count = executionsOf(batch.items);
      for (const [i, proc] of p.processors.entries()) {
        const id = p.spec.processors[i]!;
        await this.timed(id, () => proc.processBatch(batch));
        const out = executionsOf(batch.items);
        processed.push([id, count, out]);
        count = out;
      }
      if (!lease.plan) {
        const events = p.emitsEvents ? collectEvents(batch) : [];
        await this.timed('plan', () => queue.savePlan(lease.id, { events }));
        frozenHere = true;
      }
      const exported: string[] = [];
      this.exporting.add(exporting);
      try {
        for (const [i, exp] of p.exporters.entries()) {
          const id = p.exporterIds[i]!;
          try {
            await this.timed(id, () => exp.exportBatch(batch));
          } catch (err) {
            // A failed write is counted each time it fails (the Collector's send_failed counts attempts).
            countExporter(this.stats.components, id, count, false);
            throw err;
          }
          exported.push(id);
        }
      } finally {
        this.exporting.delete(exporting);
      }
      await this.timed('ack', () => queue.ack(lease.id));
      for (const proc of p.processors) proc.committed?.(batch);
      const executions = items.reduce((n, i) => n + i.executions.length, 0);
      for (const [id, incoming, outgoing] of processed) countProcessor(this.stats.components, id, incoming, outgoing);
      for (const id of exported) countExporter(this.stats.components, id, count, true);
      this.stats.leases++;
      this.stats.jobs += items.length;
      this.stats.executions += executions;
      const committedAt = Date.now();
      for (const item of items) recordLag(this.stats.lag, committedAt - item.job.receivedAt);
      this.logger.debug({ lease: lease.id, jobs: items.length, executions, ms: Date.now() - started }, 'lease committed');
    } catch (err) {
      this.stats.failures++;
      // How the queue takes the lease back (src/queue/types.ts):
      //  - out of space: the machine's condition; the lease waits whole, no job is charged;
      //  - unfrozen, several jobs: split in halves until the failing job fails alone;
      //  - frozen in this delivery but nothing written under its id yet: the plan can be dropped
      //    and the lease fails as an unfrozen one (split). A failed insert counts as not written:
      //    ClickHouse inserts a block atomically, and a lease's inserts are one block each;
      //  - frozen and something written (or frozen by an earlier delivery, which may have written):
      //    it must keep its composition, else the rows under its id would be written again under
      //    new ids; retried whole and, after the last attempt, dead whole (requeued whole).
      const outOfSpace = isOutOfSpace(err);
      const unfreeze = frozenHere && !exporting.wrote;
      this.logger.warn({ err, lease: lease.id, attempt: lease.attempt, jobs: lease.jobs.length, outOfSpace, frozen: frozenHere && !unfreeze }, 'lease failed; handed back');
      await queue.nack(lease.id, errorMessage(err), { outOfSpace, unfreeze }).catch((e: unknown) => this.logger.error({ err: e }, 'nack failed'));
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
      const entries = await outbox.read(await outbox.cursor(cursorName), 200);
      if (entries.length === 0) {
        await outbox.waitForEntries(this.opts.pollIntervalMs);
        continue;
      }
      for (const { seq, event } of entries) {
        // Not delivered because we are stopping: the cursor stays, the event goes out after restart.
        if (!(await this.deliver(p, event))) break;
        await outbox.setCursor(cursorName, seq);
        if (this.stopping) break;
      }
      await outbox.trim(allCursors);
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

/**
 * The lease's plan: the events processors emitted, each project's just before the `run.processed`
 * of its first job (the order the outbox has always had), and one `run.processed` per job.
 */
function collectEvents(batch: WorkBatch): DomainEvent[] {
  const out: DomainEvent[] = [];
  const pending = new Set(batch.emittingProjects());
  for (const item of batch.items) {
    if (pending.delete(item.job.projectId)) out.push(...batch.emitted(item.job.projectId));
    // One event per accepted batch. An OTLP trace arriving in parts emits one per part (`partial`);
    // its counts are the part's own, the run's totals are at GET /v1/runs/:runId.
    out.push({
      id: stableUuid('run.processed', item.run.projectId, item.run.receiptId),
      type: 'run.processed',
      projectId: item.run.projectId,
      occurredAt: item.job.receivedAt,
      data: {
        runId: item.run.id,
        receiptId: item.run.receiptId,
        source: item.run.source,
        status: item.run.status,
        commitSha: item.run.resource.commitSha,
        branch: item.run.resource.branch,
        prNumber: item.run.resource.prNumber ?? null,
        counts: item.run.counts,
        partial: isTracePart(item.job.source, item.job.batch),
      },
    });
  }
  // Events of a project without a job in the lease (none today): still delivered, never dropped.
  for (const projectId of pending) out.push(...batch.emitted(projectId));
  return out;
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

const STORE_WRITES = new Set<string>(['insert', 'insertTsv', 'insertJsonBody', 'insertTsvBody', 'command']);

/** The store, calling `wrote` after each write that succeeded. */
function reportWrites(store: Store, wrote: () => void): Store {
  const wrapped = new Map<string, unknown>();
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof prop !== 'string' || !STORE_WRITES.has(prop) || typeof value !== 'function') return value;
      let f = wrapped.get(prop);
      if (!f) {
        const write = value as (...args: unknown[]) => Promise<unknown>;
        f = async (...args: unknown[]): Promise<unknown> => {
          const result = await write.apply(target, args);
          wrote();
          return result;
        };
        wrapped.set(prop, f);
      }
      return f;
    },
  });
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// The main thread's side of the pipeline thread: starts it, answers its store and queue calls,
// relays its log lines, events and counters, and stops it on shutdown. If the thread dies, the
// leases it held are released at once (not after the visibility timeout) and it is started again.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import pino from 'pino';
import type { DomainEvent } from '../../domain/events.js';
import type { OutboxReader, Queue, RawLeaseSource } from '../../queue/types.js';
import type { Store } from '../../store/client.js';
import { newLagStats } from '../../domain/metrics.js';
import { newComponentStats } from '../../telemetry/component-stats.js';
import type { ReloadResult } from '../reload.js';
import type { WorkerStats } from '../runtime.js';
import type { MainCalls, ToMain, WorkerCalls } from './protocol.js';
import { RpcClient, serveRpc, withTransfer } from './rpc.js';
import type { PipelineThreadData } from './worker.js';

export interface PipelineThreadOptions {
  /** What the thread starts with; whether it relays events is this side's to say (onEvent). */
  data: Omit<PipelineThreadData, 'relayEvents'>;
  store: Store;
  /** The embedded queue, or the NATS one: leases cross to the thread as bytes. */
  queue: Pick<Queue, 'savePlan' | 'ack' | 'nack' | 'failJob' | 'waitForWork'> & RawLeaseSource & { readonly outbox: OutboxReader };
  logger: Logger;
}

const RESTART_DELAY_MS = 1_000;

export class PipelineThread {
  private worker: Worker | undefined;
  /** Calls to the running thread (WorkerCalls); fail when it exits. */
  private rpc: RpcClient<WorkerCalls> | undefined;
  private readonly listeners = new Set<(e: DomainEvent) => void>();
  /** Leases handed to the thread and not yet acked or nacked. */
  private readonly held = new Set<string>();
  private stopping = false;
  private nextPause = 1;
  private stopped: Promise<void> | undefined;
  stats: WorkerStats = { stageMs: {}, leases: 0, jobs: 0, executions: 0, failures: 0, eventsDelivered: 0, eventFailures: 0, lag: newLagStats(), components: newComponentStats() };

  constructor(private readonly opts: PipelineThreadOptions) {}

  /** Resolves once the thread's components have started (caches loaded). */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const data: PipelineThreadData = { ...this.opts.data, relayEvents: this.listeners.size > 0 };
      const worker = new Worker(new URL('./entry.mjs', import.meta.url), { workerData: data, stdout: false, stderr: false });
      this.worker = worker;
      this.serve(worker);
      const rpc = new RpcClient<WorkerCalls>(worker);
      this.rpc = rpc;
      let started = false;
      const stream = destinationOf(this.opts.logger);
      worker.on('message', (msg: unknown) => {
        const m = msg as ToMain;
        switch (m.kind) {
          case 'log':
            stream.write(m.line);
            break;
          case 'events':
            for (const event of m.events) for (const l of this.listeners) l(event);
            break;
          case 'stats':
            this.stats = m.stats;
            break;
          case 'ready':
            started = true;
            resolve();
            break;
          case 'fatal':
            this.opts.logger.error({ error: m.message }, 'pipeline thread failed to start');
            if (!started) reject(new Error(`pipeline thread failed to start: ${m.message}`));
            void worker.terminate();
            break;
        }
      });
      worker.on('error', (err) => {
        this.opts.logger.error({ err }, 'pipeline thread crashed');
        if (!started) reject(err);
      });
      worker.on('exit', (code) => {
        rpc.close(new Error('pipeline thread exited'));
        if (this.worker === worker) {
          this.worker = undefined;
          this.rpc = undefined;
        }
        void this.releaseHeld('pipeline thread exited');
        if (this.stopping || !started) return;
        this.opts.logger.error({ code }, 'pipeline thread exited; restarting it');
        setTimeout(() => {
          if (!this.stopping) this.start().catch((err: unknown) => this.opts.logger.error({ err }, 'pipeline thread restart failed'));
        }, RESTART_DELAY_MS);
      });
    });
  }

  /** Runs `f` on this thread while the pipeline thread holds its lease loop (see PipelineRuntime.exclusive). */
  async exclusive<T>(f: () => Promise<T>): Promise<T> {
    const worker = this.worker;
    const rpc = this.rpc;
    if (!worker || !rpc) return f();
    const id = this.nextPause++;
    // A thread that exits holds nothing: its calls fail, and `f` runs.
    await rpc.call('pause', id).catch(() => undefined);
    try {
      return await f();
    } finally {
      if (this.worker === worker) void rpc.call('resume', id).catch(() => undefined);
    }
  }

  /**
   * Has the thread re-read the pipeline file and swap its processing components (WorkerCalls.reload).
   * A thread that is not running has nothing to swap: it reads the file when it starts again.
   */
  async reload(): Promise<ReloadResult> {
    const rpc = this.rpc;
    if (!rpc) return { ok: false, error: 'the pipeline thread is not running' };
    try {
      return await rpc.call('reload');
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  }

  onEvent(listener: (e: DomainEvent) => void): () => void {
    this.listeners.add(listener);
    // The thread sends events only while one is listened for (the first listener turns it on).
    if (this.listeners.size === 1) void this.rpc?.call('relayEvents', true).catch(() => undefined);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) void this.rpc?.call('relayEvents', false).catch(() => undefined);
    };
  }

  /** Lets the lease in hand finish, then stops the thread. */
  shutdown(): Promise<void> {
    this.stopping = true;
    this.stopped ??= (async () => {
      const worker = this.worker;
      if (!worker) return;
      // Answered once the thread has stopped (or failed, as the thread exits).
      await this.rpc?.call('shutdown').catch(() => undefined);
      await worker.terminate();
    })();
    return this.stopped;
  }

  private async releaseHeld(reason: string): Promise<void> {
    const ids = [...this.held];
    this.held.clear();
    for (const id of ids) await this.opts.queue.nack(id, reason).catch(() => undefined);
  }

  private serve(worker: Worker): void {
    const { store, queue } = this.opts;
    const outbox = queue.outbox;
    serveRpc<MainCalls>(worker, {
      'store.queryText': (sql, params) => store.queryText(sql, params),
      'store.insertJsonBody': (table, body, token) => store.insertJsonBody(table, body, token),
      'store.command': (sql, params, settings) => store.command(sql, params, settings),
      'store.insertTsvBody': (table, columns, body, token) => store.insertTsvBody(table, columns, body, token),
      'queue.dequeueRaw': async (opts) => {
        const lease = await queue.dequeueRaw(opts);
        if (!lease) return null;
        this.held.add(lease.id);
        return withTransfer(
          lease,
          lease.jobs.map((j) => j.json.buffer as ArrayBuffer),
        );
      },
      'queue.savePlan': (leaseId, plan) => queue.savePlan(leaseId, plan),
      'queue.ack': async (leaseId) => {
        await queue.ack(leaseId);
        this.held.delete(leaseId);
      },
      'queue.nack': async (leaseId, error, opts) => {
        await queue.nack(leaseId, error, opts);
        this.held.delete(leaseId);
      },
      'queue.failJob': (leaseId, jobId, error) => queue.failJob(leaseId, jobId, error),
      'queue.waitForWork': (timeoutMs) => queue.waitForWork(timeoutMs),
      'outbox.append': (events) => outbox.append(events),
      'outbox.read': (afterSeq, limit) => outbox.read(afterSeq, limit),
      'outbox.cursor': (subscriber) => outbox.cursor(subscriber),
      'outbox.setCursor': (subscriber, seq) => outbox.setCursor(subscriber, seq),
      'outbox.trim': (subscribers) => outbox.trim(subscribers),
      'outbox.waitForEntries': (timeoutMs) => outbox.waitForEntries(timeoutMs),
      'outbox.dispatchesHere': () => outbox.dispatchesHere?.() ?? true,
    });
  }
}

function destinationOf(logger: Logger): { write(line: string): void } {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as { write(line: string): void } | undefined;
  return stream ?? { write: (line: string) => void process.stdout.write(line) };
}

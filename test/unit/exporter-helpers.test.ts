// defineExporter's lifecycle and the background worker notify, tracker and rca share: wakes are
// never lost, stop aborts what is in flight and waits for it, a failing pass is retried.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { DomainEvent } from '../../src/domain/events.js';
import { createLogger } from '../../src/telemetry/logger.js';
import type { Host } from '../../src/pipeline/component.js';
import { BackgroundWorker } from '../../src/pipeline/helpers/background-worker.js';
import { defineExporter } from '../../src/pipeline/helpers/exporter.js';
import { leaseSink } from '../../src/pipeline/lease-sink.js';
import { noStore } from '../../src/agent/no-store.js';
import { WorkBatch } from '../../src/pipeline/work-batch.js';

const host = { marker: 'host' } as unknown as Host;
const settings = { id: 'recording/x', logger: createLogger('silent') };
const event = (id: string): DomainEvent => ({ id, type: 'run.processed', projectId: 'p', occurredAt: 0, data: {} });

/** A promise with its resolve, for steps a test waits on. */
function signal<T = void>(): { promise: Promise<T>; resolve(v: T): void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('defineExporter', () => {
  it('builds the factory for the signals it has a start for; start gets host, config and settings; stages reach what start returned', async () => {
    const calls: string[] = [];
    const factory = defineExporter({
      type: 'recording',
      description: 'records what reaches it',
      configSchema: z.object({ prefix: z.string().default('>') }).strict(),
      startEvents: (h, cfg, s) => {
        calls.push(`start events ${(h as unknown as { marker: string }).marker} ${s.id}`);
        return {
          async exportEvent(e) {
            calls.push(`${cfg.prefix} ${e.id}`);
          },
          async shutdown() {
            calls.push('shutdown events');
          },
        };
      },
      startExecutions: (_h, cfg) => ({
        async exportBatch(batch, sink) {
          calls.push(`${cfg.prefix} lease ${batch.leaseId} ${sink.token('runs')}`);
        },
      }),
    });
    expect(factory).toMatchObject({ kind: 'exporter', type: 'recording', signals: ['events', 'executions'] });
    const config = factory.configSchema.parse({});
    const events = factory.createEvents!(config, settings);
    const executions = factory.createExecutions!(config, settings);
    await expect(events.exportEvent(event('e0'))).rejects.toThrow('recording exporter used before start');
    await expect(executions.exportBatch(new WorkBatch({ leaseId: 'l0', items: [], now: 0 }), leaseSink(noStore(), 'l0'))).rejects.toThrow('recording exporter used before start');
    await events.start(host);
    await executions.start(host);
    await events.exportEvent(event('e1'));
    await executions.exportBatch(new WorkBatch({ leaseId: 'l1', items: [], now: 0 }), leaseSink(noStore(), 'l1'));
    await events.shutdown();
    await executions.shutdown();
    expect(calls).toEqual(['start events host recording/x', '> e1', '> lease l1 lease:l1:runs', 'shutdown events']);
  });

  it('a start that returns null is an exporter that is off: events are taken as delivered, shutdown is clean', async () => {
    const factory = defineExporter({
      type: 'off',
      description: 'not configured',
      configSchema: z.object({}).strict(),
      startEvents: () => null,
    });
    expect(factory.signals).toEqual(['events']);
    expect('createExecutions' in factory).toBe(false);
    const never = factory.createEvents!({}, settings);
    await expect(never.shutdown()).resolves.toBeUndefined();
    const off = factory.createEvents!({}, settings);
    await off.start(host);
    await expect(off.exportEvent(event('e1'))).resolves.toBeUndefined();
    await expect(off.shutdown()).resolves.toBeUndefined();
  });
});

describe('BackgroundWorker', () => {
  const logger = createLogger('silent');

  it('a wake during a pass runs the next pass at once instead of waiting out the pass’s delay', async () => {
    let passes = 0;
    const inFirst = signal();
    const releaseFirst = signal();
    const second = signal();
    const worker = new BackgroundWorker({
      logger,
      async pass() {
        passes++;
        if (passes === 1) {
          inFirst.resolve();
          await releaseFirst.promise;
        }
        if (passes === 2) second.resolve();
        // Far longer than any test runs: only a wake can bring the next pass.
        return 3_600_000;
      },
    });
    worker.start();
    await inFirst.promise;
    worker.wake();
    releaseFirst.resolve();
    await second.promise;
    expect(passes).toBe(2);
    await worker.stop();
    expect(passes).toBe(2);
  });

  it('a wake while waiting starts a pass; stop aborts the signal and waits for the pass and the tracked tasks', async () => {
    const order: string[] = [];
    let passes = 0;
    const woke = signal();
    const taskStarted = signal();
    const worker = new BackgroundWorker({
      logger,
      async pass() {
        passes++;
        if (passes === 2) {
          woke.resolve();
          // A task that runs until the worker's signal aborts it, as a request in flight does.
          const task = new Promise<void>((resolve) => {
            worker.signal.addEventListener('abort', () => {
              order.push('task aborted');
              // Settles later than stop's abort: stop must still wait for it.
              setImmediate(() => {
                order.push('task settled');
                resolve();
              });
            });
          });
          worker.track(task);
          taskStarted.resolve();
        }
        return 3_600_000;
      },
    });
    worker.start();
    worker.wake();
    await woke.promise;
    await taskStarted.promise;
    expect(worker.stopping).toBe(false);
    await worker.stop();
    order.push('stopped');
    expect(worker.stopping).toBe(true);
    expect(worker.signal.aborted).toBe(true);
    expect(order).toEqual(['task aborted', 'task settled', 'stopped']);
    expect(passes).toBe(2);
  });

  it('a pass that throws is logged and retried', async () => {
    const lines: string[] = [];
    const captured = createLogger('warn', { write: (line: string) => void lines.push(line) });
    let passes = 0;
    const recovered = signal();
    const worker = new BackgroundWorker({
      logger: captured,
      retryAfterErrorMs: 0,
      async pass() {
        passes++;
        if (passes === 1) throw new Error('store unreachable');
        recovered.resolve();
        return 3_600_000;
      },
    });
    worker.start();
    await recovered.promise;
    await worker.stop();
    expect(passes).toBe(2);
    expect(lines.map((l) => JSON.parse(l) as { msg: string; err: { message: string } })).toMatchObject([{ msg: 'background pass failed; will retry', err: { message: 'store unreachable' } }]);
  });

  it('a worker never started stops at once', async () => {
    const worker = new BackgroundWorker({ logger, pass: async () => 0 });
    await expect(worker.stop()).resolves.toBeUndefined();
    expect(worker.signal.aborted).toBe(true);
  });
});

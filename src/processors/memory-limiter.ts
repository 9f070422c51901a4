// `memory_limiter` processor, after the OpenTelemetry Collector's: refuse new data with
// backpressure above a limit instead of growing. The limits and the decision are
// src/domain/memory-limit.ts; the reading (process RSS, which counts the pipeline thread too: one
// process) and the memory the process may use (the cgroup's memory.max, else the machine's) are
// read here.
//
// Receivers accept into the durable queue before any processor runs, so refusing inside the
// pipeline would come too late: the factory also gives a door check (createAdmission), which the
// runtime that builds the receivers registers with the ingest service. Above the soft limit every
// ingest route answers 503 memory_limited with Retry-After (OTLP/gRPC: RESOURCE_EXHAUSTED with
// RetryInfo), before the request takes a queue slot. In the pipeline, a lease waits (polling at
// check_interval, at most MAX_WAITS times) while memory is above the soft limit, then goes on:
// a lease is never failed for memory, which would spend its retry attempts.
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { z } from 'zod';
import {
  MIB,
  MemoryGauge,
  memoryLimiterProblems,
  memoryLimits,
  parseCgroupMemoryMax,
  retryAfterSec,
  totalMemoryBytes,
  type MemoryLimiterConfig,
  type MemoryPressure,
} from '../domain/memory-limit.js';
import { durationMs } from '../config/duration.js';
import type { AdmissionCheck, CreateSettings, ProcessorFactory } from '../pipeline/component.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';

/** Polls of a lease held back by memory before it goes on regardless. */
export const MAX_WAITS = 10;
/** And at most this long in all, well inside the lease's visibility (SERVICE_QUEUE_VISIBILITY_MS, 5 min by default). */
export const MAX_WAIT_MS = 60_000;

const CGROUP_MEMORY_MAX = '/sys/fs/cgroup/memory.max';

/** The exporters' duration (`1s`, `500ms`, or milliseconds), with its own message: inside its union a bad string reads only "Invalid input". */
const interval = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const parsed = durationMs.safeParse(v);
  if (parsed.success && parsed.data > 0) return parsed.data;
  ctx.addIssue({ code: 'custom', message: parsed.success ? 'must be greater than zero (e.g. 1s)' : `not a duration: ${JSON.stringify(v)} (e.g. 1s, 500ms, 1m)` });
  return z.NEVER;
});

export const memoryLimiterConfigSchema = z
  .object({
    /** The Collector's key; it has no default there, 1s is what its docs recommend. */
    check_interval: interval.default(1000),
    limit_mib: z.number().int().positive().optional(),
    spike_limit_mib: z.number().int().nonnegative().optional(),
    limit_percentage: z.number().positive().max(100).optional(),
    spike_limit_percentage: z.number().nonnegative().max(100).optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    for (const p of memoryLimiterProblems(c)) ctx.addIssue({ code: 'custom', path: [p.path], message: p.message });
  });

/** The memory this process may use: the cgroup (v2) limit when it is a number, else the machine's. */
export function totalMemory(): number {
  let cgroup: string | undefined;
  try {
    cgroup = readFileSync(CGROUP_MEMORY_MAX, 'utf8');
  } catch {
    cgroup = undefined;
  }
  return totalMemoryBytes(parseCgroupMemoryMax(cgroup), totalmem());
}

/** The global `gc` when node runs with --expose-gc (not required). */
function exposedGc(): (() => void) | undefined {
  const gc: unknown = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function' ? () => void (gc as () => unknown)() : undefined;
}

/** A gauge over this process's RSS, with the limits the config gives on this machine. */
export function memoryGauge(config: MemoryLimiterConfig): MemoryGauge {
  const limits = memoryLimits(config, config.limit_mib === undefined ? totalMemory() : 0);
  return new MemoryGauge(limits, config.check_interval, { rss: () => process.memoryUsage.rss(), gc: exposedGc() });
}

const mib = (bytes: number): number => Math.round(bytes / MIB);

/** Logs the transitions only: when refusing starts and when it ends, not per request. */
function transitions(settings: CreateSettings, gauge: MemoryGauge, what: string): (p: MemoryPressure) => void {
  let limited = false;
  return (p) => {
    const now = p !== 'ok';
    if (now === limited) return;
    limited = now;
    const fields = { rssMiB: mib(gauge.rss), softLimitMiB: mib(gauge.limits.softBytes), limitMiB: mib(gauge.limits.hardBytes) };
    if (now) settings.logger.warn(fields, `memory above the soft limit: ${what}`);
    else settings.logger.info(fields, 'memory below the soft limit again');
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const processorFactory = defineProcessor({
  type: 'memory_limiter',
  needsStore: false,
  description: 'refuses new ingest (503 memory_limited, gRPC RESOURCE_EXHAUSTED) while the process RSS is above limit − spike; leases wait for memory',
  configSchema: memoryLimiterConfigSchema,
  start: (_host, config, settings) => {
    const gauge = memoryGauge(config);
    const changed = transitions(settings, gauge, 'leases wait');
    return {
      async processBatch(batch) {
        let p = gauge.check(Date.now());
        const deadline = Date.now() + Math.min(MAX_WAITS * config.check_interval, MAX_WAIT_MS);
        for (let waits = 0; p !== 'ok' && waits < MAX_WAITS && Date.now() < deadline; waits++) {
          changed(p);
          await sleep(Math.min(config.check_interval, deadline - Date.now()));
          p = gauge.check(Date.now());
        }
        changed(p);
        if (p !== 'ok') settings.logger.warn({ lease: batch.leaseId, rssMiB: mib(gauge.rss) }, 'memory still above the soft limit: the lease goes on');
      },
    };
  },
});

export const memoryLimiterProcessorFactory: ProcessorFactory<z.infer<typeof memoryLimiterConfigSchema>> = {
  ...processorFactory,
  createAdmission(config, settings): AdmissionCheck {
    const gauge = memoryGauge(config);
    const changed = transitions(settings, gauge, 'ingest is refused with 503 memory_limited');
    const retryAfter = retryAfterSec(config.check_interval);
    return {
      refuse(now) {
        const p = gauge.check(now);
        changed(p);
        return p === 'ok' ? null : { code: 'memory_limited', retryAfterSec: retryAfter };
      },
    };
  },
};

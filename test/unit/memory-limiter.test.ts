// The memory_limiter processor (issue 29): its limits and decision (src/domain/memory-limit.ts),
// its config refused with the path as `flakehouse validate` shows it, its door check and its
// lease wait over this process's real RSS (src/processors/memory-limiter.ts).
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { builtinRegistry } from '../../src/builtin/components.js';
import {
  MIB,
  MemoryGauge,
  memoryLimiterProblems,
  memoryLimits,
  memoryPressure,
  parseCgroupMemoryMax,
  retryAfterSec,
  totalMemoryBytes,
} from '../../src/domain/memory-limit.js';
import { loadPipelineFile, PipelineConfigError, validatePipelineDoc } from '../../src/pipeline/graph.js';
import { WorkBatch } from '../../src/pipeline/work-batch.js';
import type { Host } from '../../src/pipeline/component.js';
import { MAX_WAITS, memoryLimiterConfigSchema, memoryLimiterProcessorFactory } from '../../src/processors/memory-limiter.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const registry = builtinRegistry();
const GIB = 1024 * MIB;

describe('memoryLimits', () => {
  it('limit_mib: spike defaults to 20 % of the limit', () => {
    expect(memoryLimits({ check_interval: 1000, limit_mib: 1000 }, 0)).toEqual({ hardBytes: 1000 * MIB, softBytes: 800 * MIB });
    expect(memoryLimits({ check_interval: 1000, limit_mib: 1000, spike_limit_mib: 300 }, 0)).toEqual({ hardBytes: 1000 * MIB, softBytes: 700 * MIB });
  });

  it('an explicit spike of 0 refuses only at the hard limit', () => {
    expect(memoryLimits({ check_interval: 1000, limit_mib: 1, spike_limit_mib: 0 }, 0)).toEqual({ hardBytes: MIB, softBytes: MIB });
  });

  it('percentages are of the total given', () => {
    expect(memoryLimits({ check_interval: 1000, limit_percentage: 80, spike_limit_percentage: 25 }, 4 * GIB)).toEqual({
      hardBytes: Math.floor(3.2 * GIB),
      softBytes: Math.floor(3.2 * GIB) - GIB,
    });
    // Unset spike: 20 % of the limit, not of the total.
    expect(memoryLimits({ check_interval: 1000, limit_percentage: 50 }, 4 * GIB)).toEqual({ hardBytes: 2 * GIB, softBytes: 2 * GIB - Math.floor((2 * GIB) / 5) });
  });
});

describe('memoryPressure', () => {
  const limits = { hardBytes: 100, softBytes: 80 };
  it('is ok below the soft limit, soft from it, hard from the hard limit', () => {
    expect(memoryPressure(79, limits)).toBe('ok');
    expect(memoryPressure(80, limits)).toBe('soft');
    expect(memoryPressure(99, limits)).toBe('soft');
    expect(memoryPressure(100, limits)).toBe('hard');
  });
});

describe('total memory', () => {
  it('reads cgroup v2 memory.max: a number of bytes, or max', () => {
    expect(parseCgroupMemoryMax('536870912\n')).toBe(536870912);
    expect(parseCgroupMemoryMax('max\n')).toBeUndefined();
    expect(parseCgroupMemoryMax(undefined)).toBeUndefined();
    expect(parseCgroupMemoryMax('')).toBeUndefined();
    expect(parseCgroupMemoryMax('0')).toBeUndefined();
  });

  it('takes the cgroup limit when set, never above the machine', () => {
    expect(totalMemoryBytes(512 * MIB, 8 * GIB)).toBe(512 * MIB);
    expect(totalMemoryBytes(undefined, 8 * GIB)).toBe(8 * GIB);
    expect(totalMemoryBytes(64 * GIB, 8 * GIB)).toBe(8 * GIB);
  });

  it('Retry-After is the check interval in whole seconds, at least 1', () => {
    expect(retryAfterSec(1)).toBe(1);
    expect(retryAfterSec(1000)).toBe(1);
    expect(retryAfterSec(1500)).toBe(2);
    expect(retryAfterSec(60_000)).toBe(60);
  });
});

describe('MemoryGauge', () => {
  it('reads memory at most once per check interval, and the verdict follows the reading', () => {
    let rss = 50;
    let reads = 0;
    const gauge = new MemoryGauge({ hardBytes: 100, softBytes: 80 }, 1000, {
      rss: () => {
        reads++;
        return rss;
      },
    });
    expect(gauge.check(0)).toBe('ok');
    rss = 90;
    expect(gauge.check(999)).toBe('ok'); // the cached reading
    expect(reads).toBe(1);
    expect(gauge.check(1000)).toBe('soft');
    expect(gauge.rss).toBe(90);
    rss = 10;
    expect(gauge.check(1500)).toBe('soft');
    expect(gauge.check(2000)).toBe('ok');
    expect(reads).toBe(3);
  });

  it('above the hard limit runs the GC when there is one and reads again', () => {
    let rss = 150;
    let gcs = 0;
    const gauge = new MemoryGauge({ hardBytes: 100, softBytes: 80 }, 10, {
      rss: () => rss,
      gc: () => {
        gcs++;
        rss = 85; // the GC freed some, not enough to leave the soft band
      },
    });
    expect(gauge.check(0)).toBe('soft');
    expect(gcs).toBe(1);
    // Below the hard limit: no GC.
    expect(gauge.check(10)).toBe('soft');
    expect(gcs).toBe(1);
    // Without a GC the hard reading stands.
    const bare = new MemoryGauge({ hardBytes: 100, softBytes: 80 }, 10, { rss: () => 150 });
    expect(bare.check(0)).toBe('hard');
  });
});

/** A pipeline like the default with a memory_limiter of the given config in front. */
function doc(config: unknown): Record<string, unknown> {
  return {
    receivers: { native: {} },
    processors: { memory_limiter: config, identity: {} },
    exporters: { clickhouse: {} },
    service: { pipelines: { executions: { receivers: ['native'], processors: ['memory_limiter', 'identity'], exporters: ['clickhouse'] } } },
  };
}

function problems(config: unknown): string[] {
  try {
    validatePipelineDoc(doc(config), registry, 'x.yaml');
  } catch (err) {
    if (err instanceof PipelineConfigError) return err.message.split('\n');
    throw err;
  }
  return [];
}

describe('memory_limiter config', () => {
  it('pipelines/examples/memory-limiter.yaml validates', () => {
    const file = 'pipelines/examples/memory-limiter.yaml';
    const graph = loadPipelineFile(path.join(REPO_ROOT, file), registry, file, {});
    expect(graph.pipelines.find((p) => p.id === 'executions')?.processors[0]).toBe('memory_limiter');
    expect(graph.components.get('processors:memory_limiter')?.config).toEqual({ check_interval: 1000, limit_mib: 1500, spike_limit_mib: 300 });
  });

  it('takes a tiny limit, durations in the Collector forms, and defaults check_interval to 1s', () => {
    expect(problems({ limit_mib: 1, spike_limit_mib: 0 })).toEqual([]);
    expect(problems({ limit_percentage: 0.001 })).toEqual([]);
    expect(memoryLimiterConfigSchema.parse({ limit_mib: 10 })).toEqual({ check_interval: 1000, limit_mib: 10 });
    expect(memoryLimiterConfigSchema.parse({ limit_mib: 10, check_interval: '250ms' }).check_interval).toBe(250);
  });

  it('refuses a config without a limit, or with both, naming the path', () => {
    expect(problems({})).toEqual(['x.yaml: processors.memory_limiter.limit_mib: set limit_mib or limit_percentage (exactly one of them)']);
    expect(problems({ limit_mib: 100, limit_percentage: 50 })).toEqual(['x.yaml: processors.memory_limiter.limit_percentage: set limit_mib or limit_percentage, not both']);
  });

  it('refuses a spike not below the limit, or in the other unit', () => {
    expect(problems({ limit_mib: 100, spike_limit_mib: 100 })).toEqual(['x.yaml: processors.memory_limiter.spike_limit_mib: must be below limit_mib (100)']);
    expect(problems({ limit_percentage: 50, spike_limit_percentage: 60 })).toEqual([
      'x.yaml: processors.memory_limiter.spike_limit_percentage: must be below limit_percentage (50)',
    ]);
    expect(problems({ limit_mib: 100, spike_limit_percentage: 10 })).toEqual([
      'x.yaml: processors.memory_limiter.spike_limit_percentage: goes with limit_percentage; with limit_mib set spike_limit_mib',
    ]);
  });

  it('refuses values out of range, unknown keys and a zero or malformed check_interval', () => {
    expect(problems({ limit_mib: 0 })[0]).toMatch(/^x\.yaml: processors\.memory_limiter\.limit_mib: /);
    expect(problems({ limit_mib: 1.5 })[0]).toMatch(/^x\.yaml: processors\.memory_limiter\.limit_mib: /);
    expect(problems({ limit_percentage: 101 })[0]).toMatch(/^x\.yaml: processors\.memory_limiter\.limit_percentage: /);
    expect(problems({ limit_mib: 10, check_interval: '0s' })).toEqual(['x.yaml: processors.memory_limiter.check_interval: must be greater than zero (e.g. 1s)']);
    expect(problems({ limit_mib: 10, check_interval: 'soon' })).toEqual(['x.yaml: processors.memory_limiter.check_interval: not a duration: "soon" (e.g. 1s, 500ms, 1m)']);
    expect(problems({ limit_mib: 10, limit_mb: 10 })).toEqual(['x.yaml: processors.memory_limiter.limit_mb: unknown key']);
  });
});

const settings = { id: 'memory_limiter', logger: pino({ level: 'silent' }) };
const rssMiB = (): number => process.memoryUsage.rss() / MIB;

describe('memory_limiter over this process', () => {
  it('the door check refuses while RSS is above the soft limit, with Retry-After from check_interval', () => {
    const low = memoryLimiterProcessorFactory.createAdmission!(memoryLimiterConfigSchema.parse({ limit_mib: 1, check_interval: '2500ms' }), settings);
    expect(rssMiB()).toBeGreaterThan(1);
    expect(low.refuse(Date.now())).toEqual({ code: 'memory_limited', retryAfterSec: 3 });
    const high = memoryLimiterProcessorFactory.createAdmission!(memoryLimiterConfigSchema.parse({ limit_mib: 4 * 1024 * 1024 }), settings);
    expect(high.refuse(Date.now())).toBeNull();
  });

  it('a lease waits while above the soft limit, bounded, and is never failed for memory', async () => {
    const interval = 20;
    const low = memoryLimiterProcessorFactory.createExecutions!(memoryLimiterConfigSchema.parse({ limit_mib: 1, check_interval: interval }), settings);
    await low.start({} as Host);
    const batch = new WorkBatch({ leaseId: 'l-1', items: [], now: Date.now() });
    const started = Date.now();
    await expect(low.processBatch(batch)).resolves.toBeUndefined();
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(MAX_WAITS * interval - 5);
    expect(waited).toBeLessThan(MAX_WAITS * interval * 10);

    const high = memoryLimiterProcessorFactory.createExecutions!(memoryLimiterConfigSchema.parse({ limit_mib: 4 * 1024 * 1024, check_interval: '10s' }), settings);
    await high.start({} as Host);
    const t = Date.now();
    await high.processBatch(batch);
    expect(Date.now() - t).toBeLessThan(1000);
  });
});

describe('memory_limiter registration', () => {
  it('is a built-in executions processor with a door check and no slots', () => {
    const f = registry.get('processor', 'memory_limiter');
    expect(f?.kind).toBe('processor');
    if (f?.kind !== 'processor') return;
    expect(f.signals).toEqual(['executions']);
    expect(typeof f.createAdmission).toBe('function');
    expect(f.requires).toEqual([]);
    expect(f.provides).toEqual([]);
  });

  it('memoryLimiterProblems reports each problem with its key', () => {
    expect(memoryLimiterProblems({ limit_percentage: 50, spike_limit_mib: 5 })).toEqual([
      { path: 'spike_limit_mib', message: 'goes with limit_mib; with limit_percentage set spike_limit_percentage' },
    ]);
  });
});

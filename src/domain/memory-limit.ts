// The `memory_limiter` processor's arithmetic and decision (src/processors/memory-limiter.ts), after
// the OpenTelemetry Collector's memorylimiterprocessor: a hard limit (`limit_mib`, or
// `limit_percentage` of the memory the process may use), a spike allowance below it
// (`spike_limit_mib` / `spike_limit_percentage`, 20 % of the limit when unset), and the soft limit
// between them (limit − spike). At or above the soft limit new data is refused; at or above the hard
// limit the garbage collector is also run (when exposed). The quantity is the process's resident
// set, read by the caller: this module does no I/O (src/domain is pure).

export const MIB = 1024 * 1024;

/** The processor's validated config (`check_interval` already in milliseconds). */
export interface MemoryLimiterConfig {
  /** How often memory is read, in milliseconds (> 0). */
  check_interval: number;
  limit_mib?: number | undefined;
  spike_limit_mib?: number | undefined;
  limit_percentage?: number | undefined;
  spike_limit_percentage?: number | undefined;
}

export interface MemoryLimits {
  /** At or above: refuse, and run the GC. */
  hardBytes: number;
  /** At or above: refuse new data (hard − spike). */
  softBytes: number;
}

export type MemoryPressure = 'ok' | 'soft' | 'hard';

/**
 * What is wrong with a config whose fields each passed their own range check, with the key to
 * name: exactly one of `limit_mib` / `limit_percentage`, its spike in the same unit, and the spike
 * below the limit (a spike as large as the limit would refuse everything).
 */
export function memoryLimiterProblems(c: Omit<MemoryLimiterConfig, 'check_interval'>): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const mib = c.limit_mib !== undefined;
  const pct = c.limit_percentage !== undefined;
  if (!mib && !pct) problems.push({ path: 'limit_mib', message: 'set limit_mib or limit_percentage (exactly one of them)' });
  if (mib && pct) problems.push({ path: 'limit_percentage', message: 'set limit_mib or limit_percentage, not both' });
  if (pct && c.spike_limit_mib !== undefined) {
    problems.push({ path: 'spike_limit_mib', message: 'goes with limit_mib; with limit_percentage set spike_limit_percentage' });
  }
  if (mib && c.spike_limit_percentage !== undefined) {
    problems.push({ path: 'spike_limit_percentage', message: 'goes with limit_percentage; with limit_mib set spike_limit_mib' });
  }
  if (mib && c.spike_limit_mib !== undefined && c.spike_limit_mib >= c.limit_mib!) {
    problems.push({ path: 'spike_limit_mib', message: `must be below limit_mib (${c.limit_mib})` });
  }
  if (pct && c.spike_limit_percentage !== undefined && c.spike_limit_percentage >= c.limit_percentage!) {
    problems.push({ path: 'spike_limit_percentage', message: `must be below limit_percentage (${c.limit_percentage})` });
  }
  return problems;
}

/**
 * The limits in bytes. `totalBytes` (the memory the process may use: see totalMemoryBytes) is read
 * only for the percentages. An unset spike is 20 % of the limit, as in the Collector; an explicit 0
 * means none (refuse only at the hard limit).
 */
export function memoryLimits(c: MemoryLimiterConfig, totalBytes: number): MemoryLimits {
  let hard: number;
  let spike: number | undefined;
  if (c.limit_mib !== undefined) {
    hard = c.limit_mib * MIB;
    if (c.spike_limit_mib !== undefined) spike = c.spike_limit_mib * MIB;
  } else {
    hard = Math.floor((totalBytes * (c.limit_percentage ?? 100)) / 100);
    if (c.spike_limit_percentage !== undefined) spike = Math.floor((totalBytes * c.spike_limit_percentage) / 100);
  }
  spike ??= Math.floor(hard / 5);
  return { hardBytes: hard, softBytes: Math.max(0, hard - spike) };
}

/** `/sys/fs/cgroup/memory.max` (cgroup v2): a number of bytes, or `max` (no limit) → undefined. */
export function parseCgroupMemoryMax(text: string | undefined): number | undefined {
  const t = text?.trim();
  if (!t || !/^\d+$/.test(t)) return undefined;
  const n = Number(t);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** The memory the process may use: the cgroup's limit when it sets one (never more than the machine has), else the machine's. */
export function totalMemoryBytes(cgroupMax: number | undefined, machineBytes: number): number {
  return cgroupMax !== undefined ? Math.min(cgroupMax, machineBytes) : machineBytes;
}

export function memoryPressure(rssBytes: number, limits: MemoryLimits): MemoryPressure {
  if (rssBytes >= limits.hardBytes) return 'hard';
  if (rssBytes >= limits.softBytes) return 'soft';
  return 'ok';
}

/** Whole seconds a refused sender is told to wait: one check interval, at least 1 s. */
export function retryAfterSec(checkIntervalMs: number): number {
  return Math.max(1, Math.ceil(checkIntervalMs / 1000));
}

/** What the gauge reads: the process's resident set, and the GC when the runtime exposes it. */
export interface MemoryProbe {
  rss(): number;
  gc?: (() => void) | undefined;
}

/**
 * The last reading and its verdict, read again at most once per check interval: asked per request
 * at the door, it costs a comparison until the interval has passed. At or above the hard limit the
 * GC runs (when the probe has one) and memory is read again, so a heap that was only garbage is
 * not refused for it.
 */
export class MemoryGauge {
  private readAt = Number.NEGATIVE_INFINITY;
  private rssBytes = 0;
  private current: MemoryPressure = 'ok';

  constructor(
    readonly limits: MemoryLimits,
    readonly intervalMs: number,
    private readonly probe: MemoryProbe,
  ) {}

  /** The pressure at `now`, from a reading no older than the check interval. */
  check(now: number): MemoryPressure {
    if (now - this.readAt < this.intervalMs) return this.current;
    this.readAt = now;
    let rss = this.probe.rss();
    if (this.probe.gc && memoryPressure(rss, this.limits) === 'hard') {
      this.probe.gc();
      rss = this.probe.rss();
    }
    this.rssBytes = rss;
    this.current = memoryPressure(rss, this.limits);
    return this.current;
  }

  /** RSS at the last reading, in bytes. */
  get rss(): number {
    return this.rssBytes;
  }
}

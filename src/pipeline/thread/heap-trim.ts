// Collects the pipeline thread's garbage sooner than V8 would on its own. V8 sizes a heap's limits
// from physical memory, so on a large machine it lets the old generation fill with hundreds of MB of
// garbage before a full collection: ingesting one 100,000-case JUnit report left this thread's heap
// at 240-560 MB used while ~50 MB was live (sampled with forced collections; issue 40), and RSS
// followed. A hard limit (Worker resourceLimits) would bound it too, but would end the thread when a
// big lease really needs the memory; this only collects earlier, and never more than once per
// `minGapMs`. It is not free: under saturating ingest on two busy cores a collection of this
// thread's ~200 MB heap took 130-300 ms, every 2 s, 5.2 of its 42 CPU seconds (--trace-gc, issue
// 40). Spacing them by their own cost (at most 2 % of the time) did not lower the thread's CPU
// per execution measurably and let a 100,000-case report peak 72 MB higher, so the gap stays.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface HeapTrimPolicy {
  /** Never collect while the heap uses less than this. */
  floorBytes: number;
  /** Collect again once the heap uses this many times what was live after the last collection. */
  growth: number;
  /** At most one collection per this many ms. */
  minGapMs: number;
  /** Collect sooner while the thread is quiet (QuietTrim); never when absent. */
  quiet?: QuietTrim;
}

/**
 * A lower threshold that applies only while the thread's event loop is mostly idle: a collection
 * then costs the thread nothing it was doing, where one under load stops what it serves.
 */
export interface QuietTrim {
  /** Never collect while quiet below this. */
  floorBytes: number;
  /** Collect while quiet once the heap uses this many times what was live after the last collection. */
  growth: number;
  /** Quiet: the event loop was busy at most this share of the time since the last check… */
  maxUtilization: number;
  /** …for this many checks in a row. */
  checks: number;
}

// The pipeline thread's: its live set grows with the tests it keeps state for (scoring's and
// identity's caches: its whole heap was ~2.3 KB a test at 75,000, ~3.1 before session 55), and at 2x
// what was live its garbage could reach as much again; it collects at 1.5x (issue 40; with
// MAIN_THREAD_HEAP_TRIM the peak RSS of a 100,000-case JUnit report went 1,515 -> 1,258 MB,
// docs/benchmarks.md).
export const DEFAULT_HEAP_TRIM: HeapTrimPolicy = { floorBytes: 128 * 1024 * 1024, growth: 1.5, minGapMs: 2_000 };

/**
 * The main thread's (`serve`): its live heap is some 35-60 MB, but what it passes on for the
 * pipeline thread (lease plans with their events, outbox entries, query results) outlives the young
 * generation and piled up to ~290 MB before V8's first full collection while a 100,000-case report
 * was processed. The floor keeps these collections rare (one stopped the HTTP thread for 70-140 ms
 * on a busy 2-core machine): under saturating native ingest its heap stayed below it (~115 MB).
 */
export const MAIN_THREAD_HEAP_TRIM: HeapTrimPolicy = {
  floorBytes: 128 * 1024 * 1024,
  growth: 2,
  minGapMs: 2_000,
  // After a burst of ingest its used heap stayed just under the floor, ~75 MB of it garbage, until
  // the drain ended; the process's peak comes in that drain (issue 40). A 64 MB floor instead cost
  // a collection every 2 s under load: -4.9 % end to end, +5.5 % CPU per execution
  // (docs/benchmarks.md, session 51). Quiet for a second, it is collected from 96 MB: what a burst
  // leaves behind (112-124 MB used in the bench's drain), while a process whose heap stays small
  // (an idle daemon uses ~38 MB, a worker of small jobs not much more) never stops for one: a
  // worker's main thread also renews its partition leases.
  quiet: { floorBytes: 96 * 1024 * 1024, growth: 1.5, maxUtilization: 0.3, checks: 4 },
};

/**
 * How far V8 lets a heap grow past what its last full collection left live, in percent (V8's
 * `--heap-growing-percent`). V8 otherwise picks a factor between 1.1 and 4 from how fast it
 * collects against how fast the program allocates, and under ingest it picks 4 (`--trace-gc-verbose`:
 * "factor 4.0"): the HTTP thread's and the pipeline thread's old generations filled with up to three
 * times their live size in garbage between V8's own collections. At 1.5, the saturation peak of the
 * ingest bench went 1,073, 1,020, 966 -> 908, 896, 854 MB (three alternating pairs), for ~6 % more
 * CPU per execution (more full collections) and the same peak for the big JUnit report, which the
 * trims (HeapTrimmer) bound (issue 40; docs/operations.md "Memory").
 */
export const HEAP_GROWING_PERCENT = 50;

/**
 * Sets V8's heap growing factor for every heap of this process (HEAP_GROWING_PERCENT), unless the
 * process was started with its own `--heap-growing-percent`, which wins. V8 reads the factor at
 * each full collection, so a heap that already exists follows it from its next one. Returns the
 * flag set, or undefined when the operator's was kept.
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): string | undefined {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a))) return undefined;
  const flag = `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
  v8.setFlagsFromString(flag);
  return flag;
}

/** How often the heap's use is read (a cheap call). */
const CHECK_EVERY_MS = 250;

/** The heap use above which the next collection is due, given what was live after the last one. */
export function nextTrimAt(liveBytes: number, policy: Pick<HeapTrimPolicy, 'floorBytes' | 'growth'>): number {
  return Math.max(policy.floorBytes, liveBytes * policy.growth);
}

export interface HeapAccess {
  usedBytes(): number;
  collect(): void;
  now(): number;
  /** The share of the time the event loop was busy since the last call (0..1); needed by a quiet policy. */
  utilization?(): number;
}

/** One check: collects when the heap is past the threshold and the gap since the last has passed. */
export class HeapTrimmer {
  private threshold: number;
  private quietThreshold: number;
  private quietChecks = 0;
  private lastAt = Number.NEGATIVE_INFINITY;
  collections = 0;
  /** Of `collections`, those made because the thread was quiet. */
  quietCollections = 0;

  constructor(
    private readonly heap: HeapAccess,
    private readonly policy: HeapTrimPolicy = DEFAULT_HEAP_TRIM,
  ) {
    this.threshold = policy.floorBytes;
    this.quietThreshold = policy.quiet ? policy.quiet.floorBytes : Number.POSITIVE_INFINITY;
  }

  check(): void {
    const quiet = this.quietNow();
    const used = this.heap.usedBytes();
    const dueQuiet = quiet && used >= this.quietThreshold;
    if (used < this.threshold && !dueQuiet) return;
    const now = this.heap.now();
    if (now - this.lastAt < this.policy.minGapMs) return;
    this.heap.collect();
    this.collections++;
    if (used < this.threshold) this.quietCollections++;
    this.lastAt = now;
    this.quietChecks = 0;
    const live = this.heap.usedBytes();
    this.threshold = nextTrimAt(live, this.policy);
    if (this.policy.quiet) this.quietThreshold = nextTrimAt(live, this.policy.quiet);
  }

  /** Whether the thread has been quiet for the policy's checks in a row (sampled at every check). */
  private quietNow(): boolean {
    const q = this.policy.quiet;
    if (!q || !this.heap.utilization) return false;
    this.quietChecks = this.heap.utilization() <= q.maxUtilization ? this.quietChecks + 1 : 0;
    return this.quietChecks >= q.checks;
  }
}

/** V8's full collection, exposed for this isolate (the `gc` of --expose-gc, without the flag on the command line). */
export function exposeGc(): () => void {
  const existing: unknown = (globalThis as { gc?: unknown }).gc;
  if (typeof existing === 'function') return existing as () => void;
  v8.setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  if (typeof gc !== 'function') throw new Error('V8 did not expose gc');
  return gc as () => void;
}

/** Starts checking this thread's heap; returns the stop. The timer never keeps the thread alive. */
export function startHeapTrim(policy: HeapTrimPolicy = DEFAULT_HEAP_TRIM): () => void {
  let elu = performance.eventLoopUtilization();
  const utilization = (): number => {
    const now = performance.eventLoopUtilization();
    const since = performance.eventLoopUtilization(now, elu);
    elu = now;
    return since.utilization;
  };
  const trimmer = new HeapTrimmer({ usedBytes: () => v8.getHeapStatistics().used_heap_size, collect: exposeGc(), now: () => performance.now(), utilization }, policy);
  const timer = setInterval(() => trimmer.check(), CHECK_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

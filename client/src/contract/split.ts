// Test splitting (`flakehouse split`, POST /v1/splits): which test files each of N shards runs.
// Pure: the plan from the files' recent durations (longest-processing-time-first greedy, LPT), the
// fallback by name when no server answers, and the key under which a build's plan is stored.
// Everything here is deterministic (no Math.random, no Map iteration order that depends on input
// order): every shard of a build that computes a plan from the same inputs gets the same plan.
import { createHash } from 'node:crypto';

/** Shards of one build: 1 … this many. */
export const MAX_SPLIT_TOTAL = 1_000;
/** Files one split may name: as many as `flakehouse report` expands from its globs (client/src/reporter/expand-patterns.ts). */
export const MAX_SPLIT_FILES = 10_000;
/** Longest file path taken (ClickHouse holds more; a path longer than this is not a test file). */
export const MAX_SPLIT_PATH = 1_024;
/** Longest build id: CI run ids are short; BUILD_TAG of a deep Jenkins folder is the longest we know. */
export const MAX_BUILD_ID = 256;

export interface SplitPlan {
  /** shards[i]: the files shard i runs, sorted by name. Every file is in exactly one shard. */
  shards: string[][];
  /** The expected duration of each shard (ms): the sum of its files' durations, estimated ones included. */
  estimatedMs: number[];
  /** Files with no recorded duration, sorted: planned at `defaultMs` each. */
  unknownFiles: string[];
  /** What an unknown file is assumed to take: the median of the known files; 1 when none is known. */
  defaultMs: number;
}

/** The file list as a plan sees it: unique, sorted by code unit (locale-independent). */
export function canonicalFiles(files: readonly string[]): string[] {
  return [...new Set(files)].sort(compareNames);
}

/**
 * The identity of a file list: hex SHA-256 of its canonical form. Shards that expand the same globs
 * in the same checkout get the same list (expansion sorts), whatever order the arguments came in.
 */
export function filesHash(files: readonly string[]): string {
  // JSON, not a join: a separator may be part of a name, and ['a\nb'] must not equal ['a', 'b'].
  return createHash('sha256').update(JSON.stringify(canonicalFiles(files))).digest('hex');
}

/** Median of positive numbers (mean of the middle two for an even count); undefined for none. */
export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Longest-first greedy (LPT): files by expected duration, longest first, each to the shard with the
 * least planned time so far. Unknown files get the median of the known ones, so a new file counts as
 * a typical one rather than as free. LPT's slowest shard is within 4/3 of the optimum, and on a
 * suite of many small files and a few large ones it is usually within a percent of the ideal (total / N).
 *
 * Ties are broken so the result depends only on the inputs' values: equal durations go by file name,
 * equal loads to the lowest shard index. With no duration known at all every file weighs 1 and the
 * plan is a count split (files by name dealt round-robin).
 */
export function planSplit(files: readonly string[], total: number, durations: ReadonlyMap<string, number>): SplitPlan {
  if (!Number.isInteger(total) || total < 1) throw new RangeError(`total must be an integer ≥ 1, got ${total}`);
  const list = canonicalFiles(files);
  const known: number[] = [];
  const unknownFiles: string[] = [];
  for (const f of list) {
    const d = durations.get(f);
    if (d !== undefined && Number.isFinite(d) && d >= 0) known.push(d);
    else unknownFiles.push(f);
  }
  // A file that takes 0 ms still costs its runner's setup: count it as 1 ms so it is spread, not piled.
  const defaultMs = Math.max(1, median(known) ?? 1);
  const weight = (f: string): number => {
    const d = durations.get(f);
    return d !== undefined && Number.isFinite(d) && d >= 0 ? Math.max(1, d) : defaultMs;
  };
  const weighted = list.map((f) => ({ f, w: weight(f) }));
  weighted.sort((a, b) => b.w - a.w || compareNames(a.f, b.f));
  const shards: string[][] = Array.from({ length: total }, () => []);
  const load = new Array<number>(total).fill(0);
  const heap = new ShardHeap(total);
  for (const { f, w } of weighted) {
    const i = heap.popLeast(load);
    shards[i]!.push(f);
    load[i]! += w;
    heap.push(i, load);
  }
  for (const s of shards) s.sort(compareNames);
  return { shards, estimatedMs: load.map((l) => Math.round(l)), unknownFiles, defaultMs: Math.round(defaultMs) };
}

/**
 * The split used when no plan can be had (the server is down, refuses, or has no history): files by
 * name dealt round-robin. Deterministic, so every shard of the build computes the same split on its
 * own, and balanced by count.
 */
export function splitByName(files: readonly string[], total: number): string[][] {
  if (!Number.isInteger(total) || total < 1) throw new RangeError(`total must be an integer ≥ 1, got ${total}`);
  const shards: string[][] = Array.from({ length: total }, () => []);
  canonicalFiles(files).forEach((f, i) => shards[i % total]!.push(f));
  return shards;
}

/** Whether `shards` holds exactly the files of `files`, each once (what a client checks of a plan it is sent). */
export function coversExactly(shards: readonly (readonly string[])[], files: readonly string[]): boolean {
  const want = new Set(files);
  const seen = new Set<string>();
  for (const s of shards) {
    for (const f of s) {
      if (!want.has(f) || seen.has(f)) return false;
      seen.add(f);
    }
  }
  return seen.size === want.size;
}

/** The slowest shard over the ideal (the total spread evenly): 1 is perfect. For `durations` of every file. */
export function balanceRatio(shards: readonly (readonly string[])[], durationOf: (file: string) => number): number {
  const loads = shards.map((s) => s.reduce((sum, f) => sum + durationOf(f), 0));
  const ideal = loads.reduce((a, b) => a + b, 0) / shards.length;
  return ideal === 0 ? 1 : Math.max(...loads) / ideal;
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Binary min-heap of shard indexes by (load, index): O(log N) per file instead of a scan of N shards. */
class ShardHeap {
  private readonly items: number[] = [];

  constructor(n: number) {
    // Equal loads (all 0) in index order already satisfy the heap property.
    for (let i = 0; i < n; i++) this.items.push(i);
  }

  popLeast(load: readonly number[]): number {
    const top = this.items[0]!;
    const last = this.items.pop()!;
    if (this.items.length > 0) {
      this.items[0] = last;
      this.down(0, load);
    }
    return top;
  }

  push(i: number, load: readonly number[]): void {
    this.items.push(i);
    let c = this.items.length - 1;
    while (c > 0) {
      const p = (c - 1) >> 1;
      if (!less(this.items[c]!, this.items[p]!, load)) break;
      [this.items[c], this.items[p]] = [this.items[p]!, this.items[c]!];
      c = p;
    }
  }

  private down(at: number, load: readonly number[]): void {
    const n = this.items.length;
    let p = at;
    for (;;) {
      const l = 2 * p + 1;
      const r = l + 1;
      let m = p;
      if (l < n && less(this.items[l]!, this.items[m]!, load)) m = l;
      if (r < n && less(this.items[r]!, this.items[m]!, load)) m = r;
      if (m === p) return;
      [this.items[m], this.items[p]] = [this.items[p]!, this.items[m]!];
      p = m;
    }
  }
}

function less(a: number, b: number, load: readonly number[]): boolean {
  return load[a]! < load[b]! || (load[a] === load[b] && a < b);
}

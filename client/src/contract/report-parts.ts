// A large JUnit report becomes several jobs of bounded size ("parts") that make one run, as the
// parts of an OTLP trace do: the worker's memory is bounded by the part, not by the report.
import type { ExecutionInput } from './batch.js';

/** The key of part `index` (0-based) of `count`: deterministic, so a replayed report deduplicates part by part. */
export function reportPartKey(key: string, index: number, count: number): string {
  return `${key}#part${index + 1}of${count}`;
}

const PART_KEY = /#part(\d+)of(\d+)$/;

/** Whether an idempotency key is a part's (see reportPartKey), and which. */
export function parseReportPartKey(key: string): { index: number; count: number } | undefined {
  const m = PART_KEY.exec(key);
  return m ? { index: Number(m[1]) - 1, count: Number(m[2]) } : undefined;
}

/**
 * Splits executions into parts of at most `maxPerPart` (a retry chain longer than that is a part of
 * its own). The attempts of one test stay in one part, since `retryOfIndex` points within a batch;
 * it is re-indexed to the part. Order is kept within each test; parts follow first appearance.
 */
export function splitExecutions(executions: readonly ExecutionInput[], maxPerPart: number): ExecutionInput[][] {
  if (executions.length <= maxPerPart) return [executions.slice()];
  // Group by the first attempt each execution's retryOfIndex chain leads to.
  const rootOf = new Array<number>(executions.length);
  const groups = new Map<number, number[]>();
  executions.forEach((e, i) => {
    const r = e.retryOfIndex;
    const root = r !== undefined && r >= 0 && r < i ? rootOf[r]! : i;
    rootOf[i] = root;
    const g = groups.get(root);
    if (g) g.push(i);
    else groups.set(root, [i]);
  });
  const parts: ExecutionInput[][] = [];
  let current: ExecutionInput[] = [];
  for (const members of groups.values()) {
    if (current.length > 0 && current.length + members.length > maxPerPart) {
      parts.push(current);
      current = [];
    }
    const base = current.length;
    const position = new Map<number, number>(members.map((m, k) => [m, base + k]));
    for (const m of members) {
      const e = executions[m]!;
      const retryOf = e.retryOfIndex;
      if (retryOf === undefined) current.push(e);
      else {
        const mapped = position.get(retryOf);
        const copy = { ...e };
        if (mapped === undefined) delete copy.retryOfIndex;
        else copy.retryOfIndex = mapped;
        current.push(copy);
      }
    }
  }
  if (current.length > 0) parts.push(current);
  return parts;
}

// Leaving executions out of a decoded batch (`ignore`, the filter and sample processors), before identity
// gives them ids: `retryOfIndex` is an index into the batch, so the kept ones are re-pointed.
import type { ExecutionInput } from '../../client/src/contract/batch.js';

/**
 * The executions whose `keep[i]` is true, in order, with `retryOfIndex` pointing at the same
 * executions as before (a retry of an execution left out loses its link, as with `ignore`).
 * Mutates the kept executions' `retryOfIndex` (the worker owns the decoded batch); returns the
 * same array when everything is kept.
 */
export function keepExecutions(executions: ExecutionInput[], keep: readonly boolean[]): ExecutionInput[] {
  if (keep.every(Boolean)) return executions;
  const newIndex = new Array<number>(executions.length).fill(-1);
  let n = 0;
  for (let i = 0; i < executions.length; i++) if (keep[i]) newIndex[i] = n++;
  const out: ExecutionInput[] = [];
  for (let i = 0; i < executions.length; i++) {
    if (!keep[i]) continue;
    const e = executions[i]!;
    if (e.retryOfIndex !== undefined) {
      const target = newIndex[e.retryOfIndex] ?? -1;
      if (target >= 0) e.retryOfIndex = target;
      else delete e.retryOfIndex;
    }
    out.push(e);
  }
  return out;
}

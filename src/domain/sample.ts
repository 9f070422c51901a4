// The `sample` processor's decision (src/processors/sample.ts): which clean tests of a run are kept.
// A test whose every attempt in the batch passed is kept when the hash of (seed, run id, test key)
// falls below `percentage`; any other test (a failure, a flaky retry, a skip) is kept whole, so the
// flakiness model sees every failure and every flaky test's passing retry. Deterministic: the same
// run keeps the same tests on every delivery, and one test's attempts are kept or left out together.
import { createHash } from 'node:crypto';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { testKey } from '../../client/src/contract/identity.js';

export interface SampleConfig {
  /** Share of clean tests kept, 0–100. */
  percentage: number;
  /** Mixed into the hash: another seed keeps another subset. */
  seed: string;
}

/** Where the hash of (seed, run, test) falls, uniformly in [0, 100). */
export function samplePoint(seed: string, runId: string, key: string): number {
  const h = createHash('sha256').update(seed).update('\u0000').update(runId).update('\u0000').update(key).digest();
  return (h.readUInt32BE(0) / 0x1_0000_0000) * 100;
}

/** Per execution, whether the sample keeps it. */
export function sampleKeep(executions: readonly ExecutionInput[], runId: string, config: SampleConfig): boolean[] {
  if (config.percentage >= 100) return executions.map(() => true);
  const keys = executions.map((e) => testKey(e));
  const clean = new Map<string, boolean>();
  keys.forEach((k, i) => clean.set(k, (clean.get(k) ?? true) && executions[i]!.status === 'pass'));
  const kept = new Map<string, boolean>();
  for (const [k, isClean] of clean) kept.set(k, !isClean || samplePoint(config.seed, runId, k) < config.percentage);
  return keys.map((k) => kept.get(k)!);
}

// The baseline behind the same interface as ours (bench/detection/ours.ts): Flakemetry 0.2.0's
// formula (bench/baselines/flakemetry-score.ts) over the test's graded executions so far.
import { flakemetryScore, type GradedExecution } from '../baselines/flakemetry-score.js';
import type { BenchObservation } from './observation.js';
import type { ModelReading } from './ours.js';

/** Flakemetry's own defaults, the same as ours: threshold 0.8, at least 5 graded executions. */
const THRESHOLD = 0.8;
const MIN_SAMPLES = 5;

export interface BaselineState {
  history: GradedExecution[];
  /** Last red execution: the baseline has no "last flaked at", the quarantine step needs one. */
  lastRedAt: number | null;
}

export function init(): BaselineState {
  return { history: [], lastRedAt: null };
}

/** Appends in place: the history is the baseline's whole state, copying it per run would be quadratic. */
export function observe(state: BaselineState, obs: BenchObservation): BaselineState {
  const finalFail = obs.attempts[obs.attempts.length - 1] === 'fail';
  const othersFailed = Math.round(obs.runFailRatio * obs.runTestCount) - (finalFail ? 1 : 0);
  obs.attempts.forEach((status, a) => {
    if (status === 'skip') return;
    const at = obs.at + a * 1000;
    state.history.push({ status, commitSha: obs.commitSha, runId: obs.runId, at, attempt: a + 1, failedAloneInRun: status === 'fail' && othersFailed === 0 });
    if (status === 'fail') state.lastRedAt = at;
  });
  return state;
}

export function read(state: BaselineState, now: number): ModelReading {
  const score = flakemetryScore(state.history, now);
  // Flakemetry has no notion of broken.
  return { score, candidate: score >= THRESHOLD && state.history.length >= MIN_SAMPLES, lastFlakedAt: state.lastRedAt, broken: false, brokenSince: null };
}

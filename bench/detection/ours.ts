// The one place the bench calls our model (src/domain/score.ts) and the automatic quarantine
// (src/domain/quarantine.ts). Their signatures change with the model; only this file follows them.
import { stepQuarantine, type AutoState, type QuarantinePolicy } from '../../src/domain/quarantine.js';
import { applyObservation, emptyScoreState, scoreOf, type ScoreParams, type ScoreState } from '../../src/domain/score.js';
import type { BenchObservation } from './observation.js';

export const MODEL_PARAMS: ScoreParams = { threshold: 0.8, minSamples: 5 };
/** quarantine.enabled with the default cooldown: released after 20 clean runs. */
export const QUARANTINE_POLICY: QuarantinePolicy = { enabled: true, cooldownRuns: 20 };

export type OurState = ScoreState;

/** What the metrics read of a model after a run (the baseline returns the same shape). */
export interface ModelReading {
  score: number;
  candidate: boolean;
  /** The model's own state label when it has one ('new' | 'healthy' | 'flaky' | 'broken' | 'fixed'). */
  state?: string;
  lastFlakedAt: number | null;
  /** Failing on its mainline (the quarantine never holds a broken test), and since which commit. */
  broken: boolean;
  brokenSince: string | null;
  /** For --trace: the reasons and whatever else helps read one test's history. */
  detail?: string;
}

export function init(): OurState {
  return emptyScoreState();
}

export function observe(state: OurState, obs: BenchObservation): OurState {
  // shardIndex is not read by the model: a shard is a run of its own (its run id, the same commit).
  const { runId, commitSha, ciRunKey, branch, prNumber, baseBranch, mergeBase, at, attempts, runFailRatio, runFlakyRatio, runTestCount } = obs;
  return applyObservation(state, { runId, commitSha, ciRunKey, branch, prNumber, baseBranch, mergeBase, at, attempts, runFailRatio, runFlakyRatio, runTestCount }, MODEL_PARAMS);
}

export function read(state: OurState, now: number): ModelReading {
  const r = scoreOf(state, now, MODEL_PARAMS);
  return {
    score: r.score,
    candidate: r.candidate,
    state: r.state,
    lastFlakedAt: r.lastFlakedAt,
    broken: r.broken,
    brokenSince: r.broken ? (r.stateSince?.commitSha ?? null) : null,
    detail: `${r.reasons.map((x) => x.code).join(' ')} ring=${state.ring}`,
  };
}

export type QuarantineState = AutoState | null;

/**
 * One scoring step of the automatic quarantine, for either model's reading. `ranClean`: every
 * attempt passed (null: the test was only skipped in this run, not a run for the cooldown).
 */
export function stepAutoQuarantine(prev: QuarantineState, ranClean: boolean | null, reading: ModelReading, now: number): { next: AutoState; quarantined: boolean } {
  const { candidate, broken, brokenSince, score, lastFlakedAt } = reading;
  const step = stepQuarantine(prev, null, QUARANTINE_POLICY, { runs: ranClean === null ? [] : [ranClean] }, { candidate, broken, brokenSince, score, lastFlakedAt }, now);
  return { next: step.next, quarantined: step.next.autoQuarantined };
}

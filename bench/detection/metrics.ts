// Detection metrics from the replayed histories: per truth class, overall, latency, targets.
import { INDEPENDENT_RATES, type TruthClass } from './generator.js';
import { MODELS, type EvaluatedTest, type ModelName } from './replay.js';

const round = (x: number): number => Math.round(x * 1000) / 1000;
const ratio = (a: number, b: number): number | null => (b === 0 ? null : round(a / b));

/** Rows of the per-class table: a primary class, a slice of one, or a derived class (a subset of others). */
export interface ClassRow {
  key: string;
  label: string;
  flaky: boolean;
  derived: boolean;
  select: (t: EvaluatedTest) => boolean;
}

const isClass = (...classes: TruthClass[]) => (t: EvaluatedTest): boolean => classes.includes(t.spec.truth);
/** A stable test that failed in an outage run. */
const outageVictim = (t: EvaluatedTest): boolean => !t.spec.flaky && (t.spec.truth === 'stable' || t.spec.truth === 'newTest') && t.truth.outageFailureRuns > 0;
/** A flake in a retry project that passed on a retry at least once. */
const passOnRetry = (t: EvaluatedTest): boolean => t.spec.flaky && t.project.profile.retries > 0 && t.truth.passedOnRetryRuns > 0;
/** Failed on its own at least twice outside outages: something a model could see. */
export const observable = (t: EvaluatedTest): boolean => t.truth.ownFailureRuns >= 2;
/** An unconditional own failure rate (independent, varying messages, renamed). */
const plainRate = (t: EvaluatedTest): number | null => (t.spec.truth === 'independent' || t.spec.truth === 'varyingMessages' || t.spec.truth === 'renamedWhileFlaky' ? t.spec.rate : null);
const rateIn = (lo: number, hi: number) => (t: EvaluatedTest): boolean => {
  const r = plainRate(t);
  return r !== null && r >= lo && r < hi;
};
/** Real breaks: the code was broken (or the environment was), never flaky. */
const realBreak = (t: EvaluatedTest): boolean =>
  ['regressionFixed', 'regressionUnfixed', 'brokenVariant', 'skippedAfterBreak', 'onePrBreak'].includes(t.spec.truth) || outageVictim(t);

export const CLASS_ROWS: ClassRow[] = [
  ...INDEPENDENT_RATES.map((rate): ClassRow => ({ key: `independent${rate * 100}`, label: `independent ${rate * 100}%`, flaky: true, derived: false, select: (t) => t.spec.truth === 'independent' && t.spec.rate === rate })),
  { key: 'shardOnly', label: 'shard-only', flaky: true, derived: false, select: isClass('shardOnly') },
  { key: 'bursty', label: 'bursty', flaky: true, derived: false, select: isClass('bursty') },
  { key: 'timeOfDay', label: 'time-of-day', flaky: true, derived: false, select: isClass('timeOfDay') },
  { key: 'varyingMessages', label: 'varying messages', flaky: true, derived: false, select: isClass('varyingMessages') },
  { key: 'renamedWhileFlaky', label: 'renamed while flaky', flaky: true, derived: false, select: isClass('renamedWhileFlaky') },
  { key: 'passOnRetry', label: '(pass-on-retry)', flaky: true, derived: true, select: passOnRetry },
  { key: 'allFlaky', label: 'all flaky', flaky: true, derived: true, select: (t) => t.spec.flaky },
  { key: 'stable', label: 'stable', flaky: false, derived: false, select: isClass('stable') },
  { key: 'outageVictim', label: '(outage victim)', flaky: false, derived: true, select: outageVictim },
  { key: 'regressionFixed', label: 'regression, fixed', flaky: false, derived: false, select: isClass('regressionFixed') },
  { key: 'regressionUnfixed', label: 'regression, never fixed', flaky: false, derived: false, select: isClass('regressionUnfixed') },
  { key: 'brokenVariant', label: 'broken param variant', flaky: false, derived: false, select: isClass('brokenVariant') },
  { key: 'skippedAfterBreak', label: 'skipped after break', flaky: false, derived: false, select: isClass('skippedAfterBreak') },
  { key: 'onePrBreak', label: 'one-PR break', flaky: false, derived: false, select: isClass('onePrBreak') },
  { key: 'newTest', label: 'new mid-history', flaky: false, derived: false, select: isClass('newTest') },
  { key: 'allNonFlaky', label: 'all non-flaky', flaky: false, derived: true, select: (t) => !t.spec.flaky },
];

export interface FlakyRowStats {
  recallAtEnd: number | null;
  everDetected: number | null;
  observableRecallAtEnd: number | null;
}
export interface NonFlakyRowStats {
  everCandidates: number;
  candidatesAtEnd: number;
  quarantinedAtEnd: number;
}
export interface ClassStats {
  label: string;
  count: number;
  observable?: number;
  models: Record<ModelName, FlakyRowStats | NonFlakyRowStats>;
}

export interface Latency {
  detected: number;
  of: number;
  median: number | null;
  p90: number | null;
  /** Candidates before the first strong evidence (negative latency, included in the figures). */
  beforeEvidence: number;
}

export interface ModelSummary {
  precision: number | null;
  recall: number | null;
  f1: number | null;
  recallObservable: number | null;
  rocAuc: number | null;
  tp: number;
  fp: number;
  fn: number;
  nonFlakyEverCandidates: number;
  nonFlakyEverCandidateShare: number | null;
  /** For --trace: the first few non-flaky tests that were ever candidates, with their class. */
  nonFlakyEverCandidateIds: string[];
  realBreaksEverCandidates: number;
  nonFlakyQuarantinedAtEnd: number;
  recallAtLeast10pct: number | null;
  recallPassOnRetry: number | null;
  recallObservable1to2pct: number | null;
  recallObservable2to5pct: number | null;
  latencyAfterStrongEvidence: Latency;
  latencyAfterSecondFailureNoStrongEvidence: Latency;
  /** Final state labels per class (models that have them). */
  finalStates: Record<string, Record<string, number>>;
}

export interface Target {
  name: string;
  goal: string;
  met: (v: number | null) => boolean;
  value: (s: ModelSummary) => number | null;
}

export const TARGETS: Target[] = [
  { name: 'real breaks ever candidates', goal: '= 0', value: (s) => s.realBreaksEverCandidates, met: (v) => v === 0 },
  { name: 'non-flaky ever candidates (share)', goal: '≤ 0.005', value: (s) => s.nonFlakyEverCandidateShare, met: (v) => v !== null && v <= 0.005 },
  { name: 'non-flaky quarantined at end', goal: '= 0', value: (s) => s.nonFlakyQuarantinedAtEnd, met: (v) => v === 0 },
  { name: 'recall at end, flakes ≥ 10%', goal: '≥ 0.95', value: (s) => s.recallAtLeast10pct, met: (v) => v !== null && v >= 0.95 },
  { name: 'recall at end, pass-on-retry', goal: '≥ 0.95', value: (s) => s.recallPassOnRetry, met: (v) => v !== null && v >= 0.95 },
  { name: 'recall at end, observable 2–5%', goal: '≥ 0.85', value: (s) => s.recallObservable2to5pct, met: (v) => v !== null && v >= 0.85 },
  { name: 'precision at end', goal: '≥ 0.98', value: (s) => s.precision, met: (v) => v !== null && v >= 0.98 },
  { name: 'median latency after strong evidence', goal: '≤ 3 runs', value: (s) => s.latencyAfterStrongEvidence.median, met: (v) => v !== null && v <= 3 },
];

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  // Nearest rank.
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

function latency(tests: EvaluatedTest[], m: ModelName, from: (t: EvaluatedTest) => number | null): Latency {
  const xs: number[] = [];
  for (const t of tests) {
    const first = t.models[m].firstCandidateRun;
    const start = from(t);
    if (first !== null && start !== null) xs.push(first - start);
  }
  xs.sort((a, b) => a - b);
  return { detected: xs.length, of: tests.length, median: quantile(xs, 0.5), p90: quantile(xs, 0.9), beforeEvidence: xs.filter((x) => x < 0).length };
}

/** Mann–Whitney U over final scores, ties counted half. */
function rocAuc(tests: EvaluatedTest[], m: ModelName): number | null {
  const scored = tests.map((t) => ({ s: t.models[m].final.score, pos: t.spec.flaky })).sort((a, b) => a.s - b.s);
  const pos = scored.filter((x) => x.pos).length;
  const neg = scored.length - pos;
  if (pos === 0 || neg === 0) return null;
  let rankSumPos = 0;
  for (let i = 0; i < scored.length; ) {
    let j = i;
    while (j < scored.length && scored[j]!.s === scored[i]!.s) j++;
    const avgRank = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (scored[k]!.pos) rankSumPos += avgRank;
    i = j;
  }
  return round((rankSumPos - (pos * (pos + 1)) / 2) / (pos * neg));
}

export function classStats(tests: EvaluatedTest[]): Record<string, ClassStats> {
  const out: Record<string, ClassStats> = {};
  for (const row of CLASS_ROWS) {
    const group = tests.filter(row.select);
    const obs = group.filter(observable);
    const models = {} as Record<ModelName, FlakyRowStats | NonFlakyRowStats>;
    for (const m of MODELS) {
      models[m] = row.flaky
        ? {
            recallAtEnd: ratio(group.filter((t) => t.models[m].final.candidate).length, group.length),
            everDetected: ratio(group.filter((t) => t.models[m].everCandidate).length, group.length),
            observableRecallAtEnd: ratio(obs.filter((t) => t.models[m].final.candidate).length, obs.length),
          }
        : {
            everCandidates: group.filter((t) => t.models[m].everCandidate).length,
            candidatesAtEnd: group.filter((t) => t.models[m].final.candidate).length,
            quarantinedAtEnd: group.filter((t) => t.models[m].quarantinedAtEnd).length,
          };
    }
    out[row.key] = { label: row.label, count: group.length, ...(row.flaky ? { observable: obs.length } : {}), models };
  }
  return out;
}

export function summarize(tests: EvaluatedTest[], m: ModelName): ModelSummary {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  for (const t of tests) {
    const cand = t.models[m].final.candidate;
    if (t.spec.flaky && cand) tp++;
    else if (t.spec.flaky) fn++;
    else if (cand) fp++;
  }
  const precision = ratio(tp, tp + fp);
  const recall = ratio(tp, tp + fn);
  const f1 = precision !== null && recall !== null && precision + recall > 0 ? round((2 * precision * recall) / (precision + recall)) : null;
  const flaky = tests.filter((t) => t.spec.flaky);
  const nonFlaky = tests.filter((t) => !t.spec.flaky);
  const recallOf = (group: EvaluatedTest[]): number | null => ratio(group.filter((t) => t.models[m].final.candidate).length, group.length);
  const nonFlakyEver = nonFlaky.filter((t) => t.models[m].everCandidate).length;
  const withEvidence = flaky.filter((t) => t.truth.firstStrongEvidenceRun !== null);
  const withoutEvidence = flaky.filter((t) => t.truth.firstStrongEvidenceRun === null && t.truth.secondOwnFailureRun !== null);
  const finalStates: Record<string, Record<string, number>> = {};
  for (const row of CLASS_ROWS) {
    if (row.derived) continue;
    for (const t of tests.filter(row.select)) {
      const s = t.models[m].final.state;
      if (s === undefined) continue;
      const byState = (finalStates[row.key] ??= {});
      byState[s] = (byState[s] ?? 0) + 1;
    }
  }
  return {
    precision,
    recall,
    f1,
    recallObservable: recallOf(flaky.filter(observable)),
    rocAuc: rocAuc(tests, m),
    tp,
    fp,
    fn,
    nonFlakyEverCandidates: nonFlakyEver,
    nonFlakyEverCandidateShare: ratio(nonFlakyEver, nonFlaky.length),
    nonFlakyEverCandidateIds: nonFlaky
      .filter((t) => t.models[m].everCandidate)
      .slice(0, 40)
      .map((t) => `${t.spec.id} ${t.spec.truth}`),
    realBreaksEverCandidates: nonFlaky.filter((t) => realBreak(t) && t.models[m].everCandidate).length,
    nonFlakyQuarantinedAtEnd: nonFlaky.filter((t) => t.models[m].quarantinedAtEnd).length,
    recallAtLeast10pct: recallOf(flaky.filter((t) => (plainRate(t) ?? 0) >= 0.1)),
    recallPassOnRetry: recallOf(flaky.filter(passOnRetry)),
    recallObservable1to2pct: recallOf(flaky.filter((t) => observable(t) && rateIn(0.01, 0.02)(t))),
    recallObservable2to5pct: recallOf(flaky.filter((t) => observable(t) && rateIn(0.02, 0.05)(t))),
    latencyAfterStrongEvidence: latency(withEvidence, m, (t) => t.truth.firstStrongEvidenceRun),
    latencyAfterSecondFailureNoStrongEvidence: latency(withoutEvidence, m, (t) => t.truth.secondOwnFailureRun),
    finalStates,
  };
}

/** Per project: what its profile does to each model. */
export function projectStats(tests: EvaluatedTest[]): Record<string, unknown>[] {
  const projects = [...new Set(tests.map((t) => t.project))];
  return projects.map((p) => {
    const own = tests.filter((t) => t.project === p);
    const models = Object.fromEntries(
      MODELS.map((m) => {
        const s = summarize(own, m);
        return [m, { precision: s.precision, recall: s.recall, recallObservable: s.recallObservable, recallObservable1to2pct: s.recallObservable1to2pct, recallObservable2to5pct: s.recallObservable2to5pct, nonFlakyEverCandidates: s.nonFlakyEverCandidates, realBreaksEverCandidates: s.realBreaksEverCandidates, latencyAfterStrongEvidence: s.latencyAfterStrongEvidence }];
      }),
    );
    return { project: p.index, profile: p.profile, ...p.stats, models };
  });
}

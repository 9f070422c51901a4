// `npm run bench -- detection [--seed 1] [--projects 20] [--tests 100] [--runs 60] [--debug] [--trace p0-t1]`
//
// Flaky-test detection benchmark: a pure simulation (no database, no daemon). It generates CI
// histories with known truth from a seeded PRNG, feeds every test's runs to our model
// (src/domain/score.ts: applyObservation / scoreOf) and to the baseline, Flakemetry's model 0.2.0
// (bench/baselines/flakemetry-score.ts over the graded executions so far), both with threshold 0.8 and minSamples 5,
// and reports precision, recall, F1 and runs-to-detection side by side, after 30 and 60 runs.
//
// The population (per project, `--tests` tests, `--runs` runs):
//  - stable tests (never fail on their own);
//  - flaky tests, every attempt failing independently at 2, 5, 10, 20, 35 or 50%;
//  - broken tests: from some run on they fail every attempt; half of them are fixed 2–20 runs later;
//    breaking and fixing happen on new commits only (a rerun runs the same code);
//  - outage runs (~3%): 40–80% of the tests fail their first attempt; a retry passes only if the
//    outage was transient (half of the victims);
//  - CI retries on half of the projects (a failed test is retried up to 2 times, stopping at a pass);
//  - same-commit reruns: 5–20% of a project's runs re-run the previous commit, half of the runs after
//    an outage do (people re-run red builds);
//  - two projects whose CI sends no commit: every run lands on the placeholder `0000000`;
//  - new tests appearing mid-history (10%), occasional skipped runs (2%);
//  - renames and moves (5% of the tests): the identity layer stitches them (docs/architecture.md: moved → L2,
//    renamed → L3) into the same test id, so the model sees one continuing history. They are
//    simulated as exactly that, a continuing history, and only counted here.
//
// "Detected by run N" = the test was a candidate (score ≥ threshold, samples ≥ minSamples) after
// some run ≤ N, i.e. `flaky.detected` was emitted. The snapshot "candidate at run N" is reported
// too. Positives are the flaky tests; negatives the stable and broken ones. The "≥ 5%" figures
// leave the 2% flaky tests out of both sides (they are neither a target nor a false positive).
import { writeResult } from './results.js';
import { flakemetryScore, type GradedExecution } from './baselines/flakemetry-score.js';
import { seededRandom as prng } from '../src/domain/random.js';
import { parseArgs } from 'node:util';
import {
  applyObservation,
  emptyScoreState,
  scoreOf,
  type Observation,
  type ScoreParams,
  type ScoreState,
} from '../src/domain/score.js';

const PARAMS: ScoreParams = { threshold: 0.8, minSamples: 5 };
const FLAKY_RATES = [0.02, 0.05, 0.1, 0.2, 0.35, 0.5] as const;
const CHECKPOINTS = [30, 60] as const;
const HOUR_MS = 3_600_000;
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);

// Population shares.
const SHARE_FLAKY = 0.18; // split evenly over FLAKY_RATES
const SHARE_BROKEN = 0.08;
const SHARE_NEW = 0.1;
const SHARE_RENAMED = 0.05;
const SHARE_SKIP = 0.02;
const OUTAGE_RUN_SHARE = 0.03;
const RETRY_PROJECT_SHARE = 0.5;
const MAX_RETRIES = 2;
const PLACEHOLDER_PROJECTS = 2;


type Kind = 'stable' | 'flaky' | 'broken';

interface SimTest {
  id: string;
  kind: Kind;
  rate: number; // flaky failure rate per attempt
  startRun: number;
  brokenFrom: number; // broken tests: first broken run (on a new commit)
  fixedAt: number; // broken tests: first fixed run, Infinity when never fixed
  renamedAt: number | null;
  // Model state and bookkeeping.
  ours: ScoreState;
  history: GradedExecution[];
  runsSeen: number;
  brokenNow: boolean;
  outageVictim: boolean; // failed in an outage run at least once (by the checkpoint being recorded)
  ownFailureRuns: number[]; // absolute run indexes where it failed on its own (flaky)
  ourFirst: { run: number; seen: number } | null;
  baseFirst: { run: number; seen: number } | null;
  ourMax: number; // max score with samples ≥ minSamples
  baseMax: number;
  ourCand: boolean; // candidate after the test's last run
  baseCand: boolean;
  at: Record<number, { ourCand: boolean; baseCand: boolean; ourMax: number; baseMax: number; outageVictim: boolean; present: boolean }>;
}

interface Project {
  index: number;
  retries: number;
  rerunShare: number;
  placeholder: boolean;
  intervalMs: number;
  tests: SimTest[];
}

function buildPopulation(rand: () => number, projects: number, testsPerProject: number, runs: number): Project[] {
  const out: Project[] = [];
  for (let p = 0; p < projects; p++) {
    const tests: SimTest[] = [];
    for (let i = 0; i < testsPerProject; i++) {
      const u = rand();
      let kind: Kind = 'stable';
      let rate = 0;
      if (u < SHARE_FLAKY) {
        kind = 'flaky';
        rate = FLAKY_RATES[Math.floor((u / SHARE_FLAKY) * FLAKY_RATES.length)]!;
      } else if (u < SHARE_FLAKY + SHARE_BROKEN) kind = 'broken';
      const startRun = rand() < SHARE_NEW ? 10 + Math.floor(rand() * (runs - 15)) : 0;
      const brokenFrom = kind === 'broken' ? (rand() < 0.2 ? startRun : startRun + 3 + Math.floor(rand() * Math.max(1, runs - startRun - 8))) : Infinity;
      const fixedAt = kind === 'broken' && rand() < 0.5 ? brokenFrom + 2 + Math.floor(rand() * 19) : Infinity;
      const renamedAt = rand() < SHARE_RENAMED ? startRun + 1 + Math.floor(rand() * Math.max(1, runs - startRun - 2)) : null;
      tests.push({
        id: `p${p}-t${i}`,
        kind,
        rate,
        startRun,
        brokenFrom,
        fixedAt,
        renamedAt,
        ours: emptyScoreState(),
        history: [],
        runsSeen: 0,
        brokenNow: false,
        outageVictim: false,
        ownFailureRuns: [],
        ourFirst: null,
        baseFirst: null,
        ourMax: 0,
        baseMax: 0,
        ourCand: false,
        baseCand: false,
        at: {},
      });
    }
    out.push({
      index: p,
      retries: 0,
      rerunShare: 0.05 + rand() * 0.15,
      placeholder: false,
      intervalMs: (2 + rand() * 6) * HOUR_MS,
      tests,
    });
  }
  // RETRY_PROJECT_SHARE of the projects retry, PLACEHOLDER_PROJECTS send no commit: drawn from
  // two seeded shuffles, so that the two are independent.
  const shuffled = (): Project[] => out.map((p) => ({ p, k: rand() })).sort((a, b) => a.k - b.k).map((x) => x.p);
  shuffled().forEach((p, rank) => {
    p.retries = rank < Math.round(out.length * RETRY_PROJECT_SHARE) ? MAX_RETRIES : 0;
  });
  shuffled().forEach((p, rank) => {
    p.placeholder = rank < PLACEHOLDER_PROJECTS;
  });
  return out;
}

function hex(rand: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
}

/** Runs one project's history through both models. */
function simulateProject(p: Project, rand: () => number, runs: number, trace: string | undefined): void {
  let commit = '';
  let prevOutage = false;
  let t = T0 + p.index * 17 * 60_000;
  for (let r = 0; r < runs; r++) {
    const rerun = r > 0 && rand() < (prevOutage ? 0.5 : p.rerunShare);
    if (!rerun) commit = hex(rand, 40);
    const sha = p.placeholder ? '0000000' : commit;
    const outage = rand() < OUTAGE_RUN_SHARE;
    const intensity = outage ? 0.4 + rand() * 0.4 : 0;
    const at = t;
    t += p.intervalMs * (0.6 + rand() * 0.8);
    const runId = `p${p.index}-r${r}`;

    interface Row { test: SimTest; attempts: ('pass' | 'fail' | 'skip')[]; ownFail: boolean; outageFail: boolean }
    const rows: Row[] = [];
    for (const test of p.tests) {
      if (r < test.startRun) continue;
      // Code changes (break, fix) only come with a new commit.
      if (!rerun || r === test.startRun) test.brokenNow = r >= test.brokenFrom && r < test.fixedAt;
      if (rand() < SHARE_SKIP) {
        rows.push({ test, attempts: ['skip'], ownFail: false, outageFail: false });
        continue;
      }
      const victim = outage && rand() < intensity;
      const persistent = rand() < 0.5;
      const attempts: ('pass' | 'fail')[] = [];
      let ownFail = false;
      let outageFail = false;
      for (let a = 0; a <= p.retries; a++) {
        const own = test.kind === 'flaky' && rand() < test.rate;
        const env = victim && (a === 0 || persistent);
        const fail = test.brokenNow || own || env;
        if (own) ownFail = true;
        if (env && !test.brokenNow && !own) outageFail = true;
        attempts.push(fail ? 'fail' : 'pass');
        if (!fail) break;
      }
      rows.push({ test, attempts, ownFail, outageFail });
    }
    const graded = rows.filter((x) => x.attempts[0] !== 'skip');
    const finalFails = graded.filter((x) => x.attempts[x.attempts.length - 1] === 'fail').length;
    const runFailRatio = graded.length > 0 ? finalFails / graded.length : 0;
    const recoveredTests = graded.filter((x) => x.attempts.length > 1 && x.attempts[x.attempts.length - 1] === 'pass').length;
    const runFlakyRatio = graded.length > 0 ? recoveredTests / graded.length : 0;
    for (const row of rows) {
      const { test, attempts } = row;
      if (row.ownFail) test.ownFailureRuns.push(r);
      if (row.outageFail) test.outageVictim = true;
      const obs: Observation = { runId, commitSha: sha, branch: 'main', at, attempts, runFailRatio, runFlakyRatio, runTestCount: graded.length };
      test.ours = applyObservation(test.ours, obs);
      const finalFail = attempts[attempts.length - 1] === 'fail';
      const othersFailed = finalFails - (finalFail ? 1 : 0);
      attempts.forEach((s, a) => {
        if (s === 'skip') return;
        test.history.push({ status: s, commitSha: sha, runId, at: at + a * 1000, attempt: a + 1, failedAloneInRun: s === 'fail' && othersFailed === 0 });
      });
      if (attempts[0] !== 'skip') test.runsSeen++;
      const ours = scoreOf(test.ours, at + 60_000, PARAMS);
      if (trace === test.id) console.error(r, sha.slice(0, 7), attempts.join(','), round(runFailRatio), round(runFlakyRatio), test.ours.ring, ours.score, ours.reasons.map((x) => x.code).join(' '));
      const baseScore = flakemetryScore(test.history, at + 60_000);
      const baseCand = baseScore >= PARAMS.threshold && test.history.length >= PARAMS.minSamples;
      if (ours.samples >= PARAMS.minSamples) test.ourMax = Math.max(test.ourMax, ours.score);
      if (test.history.length >= PARAMS.minSamples) test.baseMax = Math.max(test.baseMax, baseScore);
      if (ours.candidate && !test.ourFirst) test.ourFirst = { run: r, seen: test.runsSeen };
      if (baseCand && !test.baseFirst) test.baseFirst = { run: r, seen: test.runsSeen };
      test.ourCand = ours.candidate;
      test.baseCand = baseCand;
    }
    for (const n of CHECKPOINTS) {
      if (r !== n - 1) continue;
      for (const test of p.tests) {
        test.at[n] = { ourCand: test.ourCand, baseCand: test.baseCand, ourMax: test.ourMax, baseMax: test.baseMax, outageVictim: test.outageVictim, present: test.startRun < n };
      }
    }
    prevOutage = outage;
  }
}

interface Confusion { tp: number; fp: number; fn: number; tn: number }
const prf = (c: Confusion): { precision: number; recall: number; f1: number } => {
  const precision = c.tp + c.fp === 0 ? 1 : c.tp / (c.tp + c.fp);
  const recall = c.tp + c.fn === 0 ? 1 : c.tp / (c.tp + c.fn);
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { precision: round(precision), recall: round(recall), f1: round(f1) };
};

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

type Model = 'ours' | 'baseline';

/** Metrics for one model at one checkpoint. */
function evaluate(tests: SimTest[], n: number, model: Model): Record<string, unknown> {
  const present = tests.filter((t) => t.at[n]?.present);
  const detectedBy = (t: SimTest): boolean => {
    const first = model === 'ours' ? t.ourFirst : t.baseFirst;
    return first !== null && first.run < n;
  };
  const snapshot = (t: SimTest): boolean => (model === 'ours' ? t.at[n]!.ourCand : t.at[n]!.baseCand);
  const confusion = (pred: (t: SimTest) => boolean, include: (t: SimTest) => boolean): Confusion => {
    const c: Confusion = { tp: 0, fp: 0, fn: 0, tn: 0 };
    for (const t of present) {
      if (!include(t)) continue;
      const pos = t.kind === 'flaky';
      const p = pred(t);
      if (pos && p) c.tp++;
      else if (pos) c.fn++;
      else if (p) c.fp++;
      else c.tn++;
    }
    return c;
  };
  const all = (): boolean => true;
  const atLeast5 = (t: SimTest): boolean => t.kind !== 'flaky' || t.rate >= 0.05;
  const byBucket: Record<string, number> = {};
  for (const rate of FLAKY_RATES) {
    const group = present.filter((t) => t.kind === 'flaky' && t.rate === rate);
    byBucket[`${rate * 100}%`] = round(group.filter(detectedBy).length / Math.max(1, group.length));
  }
  const fpKinds = { broken: 0, outageVictim: 0, stable: 0 };
  for (const t of present) {
    if (t.kind === 'flaky' || !detectedBy(t)) continue;
    if (t.kind === 'broken') fpKinds.broken++;
    else if (t.at[n]!.outageVictim) fpKinds.outageVictim++;
    else fpKinds.stable++;
  }
  const flaky5 = present.filter((t) => t.kind === 'flaky' && t.rate >= 0.05);
  const detectable = flaky5.filter((t) => t.ownFailureRuns.some((r) => r < n));
  const c5 = confusion(detectedBy, atLeast5);
  return {
    overall: { ...prf(confusion(detectedBy, all)), ...confusion(detectedBy, all) },
    atLeast5pct: { ...prf(c5), ...c5 },
    snapshot: { overall: prf(confusion(snapshot, all)), atLeast5pct: prf(confusion(snapshot, atLeast5)) },
    recallByRate: byBucket,
    recallOverDetectable5pct: round(detectable.filter(detectedBy).length / Math.max(1, detectable.length)),
    falsePositives: fpKinds,
  };
}

/** F1 (≥ 5%, detected by run n) at the model's own best threshold: how much is the threshold's fault. */
function bestThreshold(tests: SimTest[], n: number, model: Model): { threshold: number; f1: number; precision: number; recall: number } {
  let best = { threshold: 0, f1: -1, precision: 0, recall: 0 };
  // From the top down, so that ties go to the higher threshold.
  for (let th = 0.95; th >= 0.049; th -= 0.025) {
    const c: Confusion = { tp: 0, fp: 0, fn: 0, tn: 0 };
    for (const t of tests) {
      const a = t.at[n];
      if (!a?.present || (t.kind === 'flaky' && t.rate < 0.05)) continue;
      const p = (model === 'ours' ? a.ourMax : a.baseMax) >= th;
      if (t.kind === 'flaky') {
        if (p) c.tp++;
        else c.fn++;
      } else if (p) c.fp++;
      else c.tn++;
    }
    const m = prf(c);
    if (m.f1 > best.f1) best = { threshold: round(th), ...m };
  }
  return best;
}

interface Rtd { median: number | null; detected: number }

function runsToDetection(tests: SimTest[], model: Model): Record<string, Rtd> {
  const seen = (t: SimTest): number | null => (model === 'ours' ? t.ourFirst : t.baseFirst)?.seen ?? null;
  const of = (ts: SimTest[]): Rtd => {
    const xs = ts.map(seen).filter((x): x is number => x !== null);
    return { median: median(xs), detected: xs.length };
  };
  const out: Record<string, Rtd> = {
    all: of(tests.filter((t) => t.kind === 'flaky')),
    atLeast5pct: of(tests.filter((t) => t.kind === 'flaky' && t.rate >= 0.05)),
  };
  for (const rate of FLAKY_RATES) out[`${rate * 100}%`] = of(tests.filter((t) => t.kind === 'flaky' && t.rate === rate));
  return out;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string', default: '1' },
      projects: { type: 'string', default: '20' },
      tests: { type: 'string', default: '100' },
      runs: { type: 'string', default: '60' },
      // Diagnostics on stderr: every false positive and missed ≥ 5% flake at run 30; one test's runs.
      debug: { type: 'boolean', default: false },
      trace: { type: 'string' },
    },
  });
  const seed = Number(values.seed);
  const projectsN = Number(values.projects);
  const testsPer = Number(values.tests);
  const runs = Math.max(60, Number(values.runs));
  const t0 = performance.now();
  const rand = prng(seed);
  const projects = buildPopulation(rand, projectsN, testsPer, runs);
  for (const p of projects) simulateProject(p, rand, runs, values.trace);
  const tests = projects.flatMap((p) => p.tests);
  if (values.debug) {
    for (const p of projects) {
      for (const t of p.tests) {
        const base = { id: t.id, kind: t.kind, rate: t.rate, retries: p.retries, placeholder: p.placeholder, start: t.startRun, ring: t.ours.ring };
        if (t.kind !== 'flaky' && t.ourFirst) {
          console.error(JSON.stringify({ falsePositive: true, ...base, first: t.ourFirst, brokenFrom: t.brokenFrom, fixedAt: t.fixedAt, events: t.ours.events }));
        }
        if (t.kind === 'flaky' && t.rate >= 0.05 && t.at[30]?.present && !(t.ourFirst && t.ourFirst.run < 30)) {
          console.error(JSON.stringify({ missedBy30: true, ...base, ownFailures: t.ownFailureRuns.filter((r) => r < 30), maxScore: round(t.at[30].ourMax) }));
        }
      }
    }
  }

  const count = (f: (t: SimTest) => boolean): number => tests.filter(f).length;
  const population = {
    projects: projectsN,
    tests: tests.length,
    runsPerProject: runs,
    stable: count((t) => t.kind === 'stable'),
    flaky: Object.fromEntries(FLAKY_RATES.map((r) => [`${r * 100}%`, count((t) => t.kind === 'flaky' && t.rate === r)])),
    broken: count((t) => t.kind === 'broken'),
    brokenFixed: count((t) => t.kind === 'broken' && Number.isFinite(t.fixedAt) && t.fixedAt < runs),
    newMidHistory: count((t) => t.startRun > 0),
    renamedOrMoved: count((t) => t.renamedAt !== null),
    outageVictims: count((t) => t.outageVictim && t.kind !== 'flaky'),
    projectsWithRetries: projects.filter((p) => p.retries > 0).length,
    projectsOnPlaceholderCommit: projects.filter((p) => p.placeholder).length,
  };

  const checkpoints: Record<string, unknown> = {};
  for (const n of CHECKPOINTS) {
    const flaky5 = tests.filter((t) => t.at[n]?.present && t.kind === 'flaky' && t.rate >= 0.05);
    const undetectable = flaky5.filter((t) => !t.ownFailureRuns.some((r) => r < n)).length;
    checkpoints[`after${n}Runs`] = {
      ours: evaluate(tests, n, 'ours'),
      baseline: evaluate(tests, n, 'baseline'),
      flaky5pctNeverFailed: { count: undetectable, of: flaky5.length },
      bestThreshold: { ours: bestThreshold(tests, n, 'ours'), baseline: bestThreshold(tests, n, 'baseline') },
    };
  }
  const at30 = checkpoints.after30Runs as { ours: { atLeast5pct: { precision: number; recall: number; f1: number } }; baseline: { atLeast5pct: { f1: number } } };
  const targets = {
    precision5pctAt30: { target: 0.95, value: at30.ours.atLeast5pct.precision, met: at30.ours.atLeast5pct.precision >= 0.95 },
    recall5pctAt30: { target: 0.9, value: at30.ours.atLeast5pct.recall, met: at30.ours.atLeast5pct.recall >= 0.9 },
    f1AboveBaseline: {
      target: 0.1,
      value: round(at30.ours.atLeast5pct.f1 - at30.baseline.atLeast5pct.f1),
      met: at30.ours.atLeast5pct.f1 - at30.baseline.atLeast5pct.f1 >= 0.1,
    },
  };
  const result = {
    bench: 'detection',
    at: new Date().toISOString(),
    params: { seed, threshold: PARAMS.threshold, minSamples: PARAMS.minSamples, baseline: 'Flakemetry model 0.2.0 (docs/architecture.md), last 500 graded executions' },
    population,
    definitions: {
      detectedBy: 'candidate (score ≥ threshold and samples ≥ minSamples) after some run ≤ N: flaky.detected was emitted',
      snapshot: 'candidate right after run N',
      atLeast5pct: 'positives: flaky tests failing ≥ 5% of attempts; negatives: stable and broken tests; 2% flaky tests left out',
      runsToDetection: "the test's own graded runs until it first became a candidate (detected flaky tests, by run 60)",
      flaky5pctNeverFailed: 'flaky (≥ 5%) tests that never failed on their own in the first N runs: no model can detect them',
      bestThreshold: 'F1 (≥ 5%, detected by N) at the threshold that suits the model best, for reference',
    },
    checkpoints,
    runsToDetection: { ours: runsToDetection(tests, 'ours'), baseline: runsToDetection(tests, 'baseline') },
    targets,
    seconds: round((performance.now() - t0) / 1000),
  };

  console.log(JSON.stringify(result, null, 2));
  console.log(table(result.checkpoints as Record<string, Record<string, unknown>>, result.runsToDetection));
  console.log(`written ${writeResult('detection', result)}`);
  for (const [k, v] of Object.entries(targets)) if (!v.met) console.log(`target not met: ${k} = ${v.value} (target ${v.target})`);
  return 0;
}

function table(checkpoints: Record<string, Record<string, unknown>>, rtd: Record<Model, Record<string, Rtd>>): string {
  const lines: string[] = [];
  const pad = (s: string, n: number): string => s.padEnd(n);
  lines.push('');
  lines.push(`${pad('', 22)}${pad('ours', 30)}baseline (Flakemetry 0.2.0)`);
  lines.push(`${pad('', 22)}${pad('P     R     F1', 30)}P     R     F1`);
  for (const [name, cp] of Object.entries(checkpoints)) {
    for (const scope of ['atLeast5pct', 'overall'] as const) {
      const o = (cp.ours as Record<string, { precision: number; recall: number; f1: number }>)[scope]!;
      const b = (cp.baseline as Record<string, { precision: number; recall: number; f1: number }>)[scope]!;
      const f = (m: { precision: number; recall: number; f1: number }): string => `${m.precision.toFixed(3)} ${m.recall.toFixed(3)} ${m.f1.toFixed(3)}`;
      lines.push(`${pad(`${name} ${scope === 'overall' ? 'all' : '≥5%'}`, 22)}${pad(f(o), 30)}${f(b)}`);
    }
  }
  const cp30 = checkpoints.after30Runs as { ours: { recallByRate: Record<string, number> }; baseline: { recallByRate: Record<string, number> } };
  lines.push('recall by failure rate (after 30 runs):');
  for (const k of Object.keys(cp30.ours.recallByRate)) {
    lines.push(`  ${pad(k, 20)}${pad(cp30.ours.recallByRate[k]!.toFixed(3), 30)}${cp30.baseline.recallByRate[k]!.toFixed(3)}`);
  }
  lines.push(`${pad('median runs to detect', 22)}${pad(String(rtd.ours.atLeast5pct!.median), 30)}${String(rtd.baseline.atLeast5pct!.median)}   (≥ 5%, detected ones)`);
  for (const [name, cp] of Object.entries(checkpoints)) {
    const bt = cp.bestThreshold as Record<Model, { threshold: number; f1: number }>;
    lines.push(`${pad(`${name} best F1`, 22)}${pad(`${bt.ours.f1.toFixed(3)} @ ${bt.ours.threshold}`, 30)}${bt.baseline.f1.toFixed(3)} @ ${bt.baseline.threshold}   (≥ 5%, each at its best threshold)`);
  }
  const cp = checkpoints.after30Runs as { flaky5pctNeverFailed: { count: number; of: number }; ours: { recallOverDetectable5pct: number } };
  lines.push(`≥ 5% flaky tests that never failed in 30 runs: ${cp.flaky5pctNeverFailed.count} of ${cp.flaky5pctNeverFailed.of}; our recall over the others: ${cp.ours.recallOverDetectable5pct}`);
  return lines.join('\n');
}

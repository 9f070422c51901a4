// `npm run bench -- split [--files 400] [--runs 10] [--trials 30] [--new 0.05] [--seed 1] [--no-store]`
//
// Test splitting by history (client/src/contract/split.ts, POST /v1/splits) against a count split, on a
// generated suite with a realistic skew: file durations log-normal (median 2 s, σ = 0.8, so the
// slowest percent take 6× the median), 2 % of the files 10× slower still (integration suites,
// browser tests), every run's durations jittered (log-normal σ = 0.1) and 2 % of a file's runs 1.5×
// (a retried test, a slow agent); 5 % of the files (--new) are new, with no history. The plan is made from the last `--runs` runs (the median per file, new
// files at the median of the rest) and judged on the NEXT run's real durations, which it has not
// seen: slowest shard / ideal (the total spread evenly), for 2…32 shards, mean and worst over
// `--trials` suites; and slowest / bound, where the bound is max(ideal, the slowest file): no split
// can beat it, and with many shards the slowest file alone exceeds the ideal. The count split (by name, round-robin: what `flakehouse split` does when the
// server is down) is judged on the same runs.
//
// Then, unless --no-store, through the real daemon: the same history ingested (one execution per
// test, several tests per file), POST /v1/splits for 8 shards must give the plan the domain gives
// from the same medians (the store's query is the one in production), and the latency of the first
// call of a build (timings query + plan + insert + read back) and of a later shard's call (read).
import { parseArgs } from 'node:util';
import { seededRandom } from '../src/domain/random.js';
import { balanceRatio, median, planSplit, splitByName } from '../client/src/contract/split.js';
import { nativeBatch, startTestDaemon } from '../test/helpers/daemon.js';
import { writeResult } from './results.js';

const SHARDS = [2, 4, 8, 16, 32];

interface Suite {
  files: string[];
  /** Files with history (the others are new). */
  known: Set<string>;
  base: Map<string, number>;
}

function gaussian(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

function makeSuite(rand: () => number, n: number, newShare: number): Suite {
  const files: string[] = [];
  const base = new Map<string, number>();
  const known = new Set<string>();
  for (let i = 0; i < n; i++) {
    const f = `packages/p${i % 9}/test/file${String(i).padStart(4, '0')}.test.ts`;
    let ms = 2_000 * Math.exp(0.8 * gaussian(rand));
    if (rand() < 0.02) ms *= 10;
    files.push(f);
    base.set(f, Math.max(20, Math.round(ms)));
    if (rand() >= newShare) known.add(f);
  }
  return { files, known, base };
}

/** One run's durations: the file's own, jittered, sometimes 3× (retries). */
function sampleRun(rand: () => number, s: Suite): Map<string, number> {
  const out = new Map<string, number>();
  for (const f of s.files) {
    let ms = s.base.get(f)! * Math.exp(0.1 * gaussian(rand));
    if (rand() < 0.02) ms *= 1.5;
    out.set(f, Math.round(ms));
  }
  return out;
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

function slowest(shards: readonly (readonly string[])[], took: (f: string) => number): number {
  return Math.max(...shards.map((s) => s.reduce((a, f) => a + took(f), 0)));
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { files: { type: 'string', default: '400' }, runs: { type: 'string', default: '10' }, trials: { type: 'string', default: '30' }, new: { type: 'string', default: '0.05' }, seed: { type: 'string', default: '1' }, 'no-store': { type: 'boolean' } },
    strict: true,
  });
  const nFiles = Number(values.files);
  const nRuns = Number(values.runs);
  const trials = Number(values.trials);
  const rand = seededRandom(Number(values.seed));

  const byShards = SHARDS.map((total) => ({ total, history: [] as number[], count: [] as number[], oracle: [] as number[], historyBound: [] as number[], countBound: [] as number[] }));
  let planMs = 0;
  let firstSuite: { suite: Suite; history: Map<string, number>[] } | undefined;
  for (let t = 0; t < trials; t++) {
    const suite = makeSuite(rand, nFiles, Number(values.new));
    const history = Array.from({ length: nRuns }, () => sampleRun(rand, suite));
    firstSuite ??= { suite, history };
    const medians = new Map<string, number>();
    for (const f of suite.known) medians.set(f, median(history.map((h) => h.get(f)!))!);
    const next = sampleRun(rand, suite);
    const took = (f: string): number => next.get(f)!;
    for (const row of byShards) {
      const t0 = performance.now();
      const plan = planSplit(suite.files, row.total, medians);
      planMs = Math.max(planMs, performance.now() - t0);
      const byName = splitByName(suite.files, row.total);
      row.history.push(balanceRatio(plan.shards, took));
      row.count.push(balanceRatio(byName, took));
      const sum = suite.files.reduce((a, f) => a + took(f), 0);
      const bound = Math.max(sum / row.total, ...suite.files.map(took));
      row.historyBound.push(slowest(plan.shards, took) / bound);
      row.countBound.push(slowest(byName, took) / bound);
      // What LPT would reach knowing the next run's durations exactly: the floor the history split aims at.
      row.oracle.push(balanceRatio(planSplit(suite.files, row.total, next).shards, took));
    }
  }
  const stats = (xs: number[]) => ({ mean: round3(xs.reduce((a, b) => a + b, 0) / xs.length), worst: round3(Math.max(...xs)) });
  const balance = byShards.map((r) => ({
    shards: r.total,
    history: stats(r.history),
    count: stats(r.count),
    oracle: stats(r.oracle),
    historyVsBound: stats(r.historyBound),
    countVsBound: stats(r.countBound),
  }));

  console.log(`split balance (slowest shard / ideal) on the next run, ${trials} suites of ${nFiles} files, plans from the last ${nRuns} runs:`);
  console.log('shards | vs ideal: history mean/worst  count mean/worst  oracle mean | vs max(ideal, slowest file): history mean/worst  count mean/worst');
  const mw = (x: { mean: number; worst: number }): string => `${x.mean.toFixed(3)}/${x.worst.toFixed(3)}`;
  for (const b of balance) {
    console.log(`${String(b.shards).padStart(6)} | ${mw(b.history)}  ${mw(b.count)}  ${b.oracle.mean.toFixed(3)} | ${mw(b.historyVsBound)}  ${mw(b.countVsBound)}`);
  }

  let store: Record<string, unknown> | undefined;
  if (!values['no-store'] && firstSuite) store = await throughTheStore(firstSuite.suite, firstSuite.history);

  const result = {
    bench: 'split',
    at: new Date().toISOString(),
    params: { files: nFiles, runs: nRuns, trials, newFiles: Number(values.new), seed: Number(values.seed) },
    balance,
    planMsMax: round3(planMs),
    ...(store ? { store } : {}),
    target: 'history split: slowest shard / ideal ≤ 1.1 (mean) while the slowest file is below the ideal; else slowest / max(ideal, slowest file) ≤ 1.1',
  };
  console.log(`wrote ${writeResult('split', result)}`);
  return 0;
}

/** The history through the daemon; the plan of POST /v1/splits compared with the domain's, and timed. */
async function throughTheStore(suite: Suite, history: Map<string, number>[]): Promise<Record<string, unknown>> {
  const td = await startTestDaemon();
  try {
    const now = Date.now();
    const t0 = performance.now();
    let executions = 0;
    const batches = history.map((h, r) => {
      const started = now - (history.length - r) * 3_600_000;
      const execs = [...suite.known].flatMap((f, i) => {
        // Four tests a file, the file's duration shared among them (the rest in the first).
        const total = h.get(f)!;
        const each = Math.floor(total / 4);
        return [0, 1, 2, 3].map((k) => ({ filePath: f, suite: f, title: `case ${k}`, status: 'pass', startedAt: started + i * 4 + k, durationMs: k === 0 ? total - 3 * each : each }));
      });
      executions += execs.length;
      return nativeBatch({ run: { status: 'passed', startedAt: new Date(started).toISOString() }, executions: execs });
    });
    await td.ingest(...batches);
    const ingestS = (performance.now() - t0) / 1000;
    const medians = new Map<string, number>();
    for (const f of suite.known) medians.set(f, median(history.map((h) => h.get(f)!))!);
    const expected = planSplit(suite.files, 8, medians);

    const t1 = performance.now();
    const first = await td.request('POST', '/v1/splits', { body: { buildId: 'bench-1', total: 8, index: 0, files: suite.files } });
    const firstMs = performance.now() - t1;
    const later: number[] = [];
    for (let i = 1; i < 8; i++) {
      const t2 = performance.now();
      const r = await td.request('POST', '/v1/splits', { body: { buildId: 'bench-1', total: 8, index: i, files: suite.files } });
      later.push(performance.now() - t2);
      if (r.json.planId !== first.json.planId) throw new Error('a later shard got another plan');
    }
    if (first.status !== 200) throw new Error(`POST /v1/splits: ${first.status} ${first.text}`);
    const same = JSON.stringify(first.json.shards) === JSON.stringify(expected.shards);
    console.log(
      `through the daemon: ${executions} executions in ${history.length} runs ingested in ${ingestS.toFixed(1)} s; POST /v1/splits (8 shards, ${suite.files.length} files): ` +
        `first call ${firstMs.toFixed(0)} ms, later shards median ${median(later)!.toFixed(0)} ms; plan equals the domain's from the same medians: ${same}`,
    );
    if (!same) throw new Error('the stored plan differs from the domain plan over the same medians');
    return {
      executions,
      runs: history.length,
      ingestS: round3(ingestS),
      firstCallMs: Math.round(firstMs),
      laterCallMsMedian: Math.round(median(later)!),
      unknownFiles: first.json.unknownFiles.length,
      planEqualsDomain: same,
    };
  } finally {
    await td.close();
  }
}

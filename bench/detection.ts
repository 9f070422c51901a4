// `npm run bench -- detection [--seed 1] [--projects 3] [--tests 650] [--runs 115] [--no-placeholder] [--label NAME] [--trace p0-t17]`
//
// Flaky-test detection benchmark: a pure simulation (no database, no daemon). It generates CI
// histories with known truth (bench/detection/generator.ts: main and PR branches, merges, re-runs,
// retries, shards, outages, a project that sends no commit; a test's behaviour follows the code a
// run tests), replays every test's runs in time order through our model (via the one adapter,
// bench/detection/ours.ts) and through Flakemetry 0.2.0's formula (bench/detection/baseline.ts),
// each with the automatic quarantine behind it, and prints per-class and overall precision, recall,
// ROC AUC, latency and the targets (bench/detection/metrics.ts, report.ts).
//
// Writes bench/results/detection-latest.json, or bench/results/detection-NAME.json with --label.
// --trace prints one test's runs with both models' scores (to stderr).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { generateHistories } from './detection/generator.js';
import { classStats, projectStats, summarize, TARGETS } from './detection/metrics.js';
import { MODEL_PARAMS, QUARANTINE_POLICY } from './detection/ours.js';
import { replay } from './detection/replay.js';
import { renderTable, type ProjectLine } from './detection/report.js';
import { RESULTS_DIR, writeResult } from './results.js';

/** Which model a result belongs to: a digest of its source (the model changes without commits). */
function modelDigest(): string {
  const domain = path.resolve(import.meta.dirname, '../src/domain');
  const files = ['score.ts', 'quarantine.ts'].map((f) => path.join(domain, f));
  const scoreDir = path.join(domain, 'score');
  if (existsSync(scoreDir)) files.push(...readdirSync(scoreDir).sort().map((f) => path.join(scoreDir, f)));
  const hash = createHash('sha256');
  for (const f of files) if (existsSync(f)) hash.update(path.basename(f)).update(readFileSync(f));
  return hash.digest('hex').slice(0, 12);
}

const positiveInt = (name: string, raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${raw}`);
  return n;
};

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string', default: '1' },
      projects: { type: 'string', default: '3' },
      tests: { type: 'string', default: '650' },
      runs: { type: 'string', default: '115' },
      'no-placeholder': { type: 'boolean', default: false },
      label: { type: 'string' },
      trace: { type: 'string' },
    },
  });
  if (values.label !== undefined && !/^[\w.-]+$/.test(values.label)) throw new Error(`--label must be letters, digits, '.', '_' or '-', got ${values.label}`);
  const opts = {
    seed: Number(values.seed),
    projects: positiveInt('projects', values.projects),
    testsPerProject: positiveInt('tests', values.tests),
    ciRunsPerProject: positiveInt('runs', values.runs),
    placeholderProject: !values['no-placeholder'],
  };
  const started = performance.now();
  const histories = generateHistories(opts);
  const generatedIn = (performance.now() - started) / 1000;
  const tests = replay(histories, values.trace, (line) => console.error(line));
  const seconds = (performance.now() - started) / 1000;

  const classes = classStats(tests);
  const summary = { ours: summarize(tests, 'ours'), baseline: summarize(tests, 'baseline') };
  const projects = projectStats(tests) as unknown as ProjectLine[];
  const targets = TARGETS.map((t) => ({
    name: t.name,
    goal: t.goal,
    ours: { value: t.value(summary.ours), met: t.met(t.value(summary.ours)) },
    baseline: { value: t.value(summary.baseline), met: t.met(t.value(summary.baseline)) },
  }));
  const ciRuns = histories.reduce((a, h) => a + h.stats.ciRuns, 0);
  const runIds = histories.reduce((a, h) => a + h.stats.runIds, 0);
  const result = {
    bench: 'detection',
    label: values.label ?? null,
    at: new Date().toISOString(),
    params: {
      ...opts,
      model: MODEL_PARAMS,
      modelSourceDigest: modelDigest(), // sha256 of src/domain/score.ts, score/*, quarantine.ts
      quarantine: QUARANTINE_POLICY,
      baseline: 'Flakemetry model 0.2.0 (bench/baselines/flakemetry-score.ts), threshold 0.8, ≥ 5 graded executions',
    },
    definitions: {
      end: "candidate after the test's last run",
      ever: 'candidate after some run of the history',
      observable: 'failed on its own (code not broken) in at least 2 runs outside outages',
      firstStrongEvidence: 'the first run in which the same code had both failed on its own (outside outages) and passed: a passing retry, or a re-run / other shard of the same commit with the opposite outcome',
      latency: "the test's own graded runs from its first strong evidence (or, without one, its second own failure) to its first candidacy; negative = candidate earlier",
      realBreaks: 'regressions (fixed or not), broken parameter variants, skipped after breaking, one-PR breaks, outage victims (stable tests that failed in outage runs)',
      ratesFor: 'rate buckets and "flakes ≥ 10%" cover the flakes with an unconditional rate: independent, varying messages, renamed',
    },
    population: { tests: tests.length, ciRuns, runIds },
    projects,
    classes,
    summary,
    targets,
    seconds: { generate: Math.round(generatedIn * 10) / 10, total: Math.round(seconds * 10) / 10 },
  };

  const header = `detection: seed ${opts.seed}, ${opts.projects} projects, ${tests.length} tests, ${ciRuns} CI runs (${runIds} run ids), ${result.seconds.total} s`;
  console.log(renderTable(header, projects, classes, summary));
  let written: string;
  if (values.label === undefined) written = writeResult('detection', result);
  else {
    // writeResult names files <name>-latest.json; a labelled result keeps its own name.
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = path.join(RESULTS_DIR, `detection-${values.label}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    written = path.relative(process.cwd(), file);
  }
  console.log(`\nwritten ${written}`);
  return 0;
}

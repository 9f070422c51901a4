// `flakehouse run --verify-new N` and `--verify-fix` (README "Proving new tests and fixes"): after
// the wrapped command's results are in, the tests to prove are re-run one at a time with the
// runner's own filter (client/src/contract/verify.ts adapterCommand) or the `--rerun` template, and each
// re-run's attempts join the run as further attempts of the test, marked `flakehouse.verify`
// (`new` / `fix`). The server then scores a failure and a pass of the same code in one run as
// flaky evidence, and the PR summary and gate read the marks: a new test with any failed attempt
// blocks as a new failure ("new test failed 1 of 10"), a fix whose re-runs all passed reads "fix
// verified". Bounded by a duration budget; --verify-new is off when too many tests look new.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { ExecutionInput } from '../../contract/batch.js';
import { describeTest, executionFingerprint } from '../../contract/mute.js';
import {
  adapterCommand,
  appendAttempts,
  detectRunner,
  fillRerunTemplate,
  markVerified,
  matchFixRef,
  parseFixTrailers,
  rerunSchedule,
  selectNewTests,
  selectRetries,
  tally,
  targetOf,
  testsOfRun,
  verifyLine,
  withinBudget,
  type RunTest,
  type VerifyKind,
  type VerifyTally,
} from '../../contract/verify.js';
import { detectRunCi } from '../../reporter/send.js';
import type { ReporterRun } from '../../reporter/types.js';
import { rerunTest } from './rerun.js';
import { fetchKnownTests, type KnownResult } from './server.js';

export interface VerifyOptions {
  /** Retries per failing test, until one passes (`--retry-failed N`); undefined: not asked for. */
  retryFailed?: number;
  /** More failing tests than this and none is retried. */
  retryMaxTests?: number;
  /** Re-runs per new test; undefined: --verify-new not asked for. */
  verifyNew?: number;
  verifyFix: boolean;
  fixRuns: number;
  budgetMs: number;
  maxNew: number;
  /** The `--rerun` template; else the runner is detected from the command. */
  rerun?: string;
  baseBranch?: string;
  command: readonly string[];
  junit: readonly string[];
  rootDir: string;
}

export interface VerifyOutcome {
  run: ReporterRun;
  /** Failing tests a retry of the same code passed (`--retry-failed`). */
  recovered: string[];
  /** One line per verified test that holds the build (a new test that failed, a fix not proven). */
  failures: string[];
  verified: string[];
}

interface Ctx {
  env: NodeJS.ProcessEnv;
  cwd: string;
  log: (line: string) => void;
}

/** Which base branch new tests are new to: --base-branch, the CI's, SERVICE_BASE_BRANCH, else main. */
export function baseBranchOf(opts: Pick<VerifyOptions, 'baseBranch'>, env: NodeJS.ProcessEnv): string {
  return opts.baseBranch ?? detectRunCi(env).baseBranch ?? (env.SERVICE_BASE_BRANCH?.trim() || 'main');
}

export async function verifyTests(run: ReporterRun, opts: VerifyOptions, ctx: Ctx): Promise<VerifyOutcome> {
  const { log } = ctx;
  const tests = testsOfRun(run.executions);
  const failures: string[] = [];
  const verified: string[] = [];
  const recovered: string[] = [];
  let executions = run.executions;
  const rootDir = run.rootDir ?? opts.rootDir;
  const runner = opts.rerun === undefined ? detectRunner(opts.command) : null;
  if (opts.rerun === undefined && runner === null) {
    const line = `cannot re-run single tests of ${JSON.stringify(opts.command.join(' '))}: not a Vitest, Jest, Playwright or pytest command; give --rerun 'cmd {file} {name}'`;
    log(`verify: ${line}`);
    // Retries only add evidence: without them nothing is held. A proof asked for and not made is.
    const proofAsked = opts.verifyNew !== undefined || opts.verifyFix;
    return { run, failures: proofAsked ? [line] : [], verified, recovered };
  }
  const commandFor = (t: RunTest): string[] => {
    const abs = locateFile(t.filePath, [rootDir, ctx.cwd]);
    const rel = path.relative(ctx.cwd, abs) || abs;
    const target = targetOf(t, rel.startsWith('..') ? abs : rel);
    return opts.rerun !== undefined ? fillRerunTemplate(opts.rerun, target) : adapterCommand(runner!, opts.command, target);
  };
  const budgetStart = Date.now();
  const baseBranch = baseBranchOf(opts, ctx.env);
  let known: KnownResult | undefined;

  /**
   * Re-runs each test `runs` times (round by round, within the budget); returns each one's tally.
   * `untilPass`: a test is not re-run again once a re-run passed (a retry proves a flake once).
   */
  const rerunAll = async (list: readonly RunTest[], runs: number, kind: VerifyKind, untilPass = false): Promise<Map<string, VerifyTally>> => {
    const tallies = new Map<string, VerifyTally>(list.map((t) => [t.fingerprint, { runs: 0, failed: 0, missing: 0, skipped: 0 }]));
    const attemptsOf = new Map<string, ExecutionInput[]>(list.map((t) => [t.fingerprint, []]));
    for (const { test, round } of rerunSchedule(list, runs)) {
      const t = tallies.get(test.fingerprint)!;
      if (untilPass && t.runs > t.failed) continue;
      if (!withinBudget(budgetStart, Date.now(), opts.budgetMs)) {
        t.skipped++;
        continue;
      }
      const argv = commandFor(test);
      log(`verify: re-run ${round}/${runs} of ${describeTest(test)}: ${argv.join(' ')}`);
      const r = await rerunTest(argv, test.fingerprint, { cwd: ctx.cwd, rootDir, env: ctx.env, junit: opts.junit });
      if (r.attempts.length > 0) {
        attemptsOf.get(test.fingerprint)!.push(...r.attempts);
        const c = tally(r.attempts);
        t.runs += c.runs;
        t.failed += c.failed;
      } else if (r.exitCode !== 0) {
        // It failed without a result for the test (a crash on load, a timeout): a failed attempt.
        if (r.produced === 0) log(`verify: the re-run exited ${r.exitCode} with no result at all: counted as a failed attempt (does the command find ${describeTest(test)}?)`);
        const failed: ExecutionInput = { filePath: test.filePath, suite: test.suite, title: test.title, status: 'fail', attempt: 1, startedAt: Date.now(), durationMs: 0, error: { message: `the re-run exited ${r.exitCode} without a result for this test` } };
        if (test.params) failed.params = test.params;
        attemptsOf.get(test.fingerprint)!.push(failed);
        t.runs++;
        t.failed++;
      } else {
        t.missing++;
        if (t.missing === 1) log(`verify: warning: the re-run passed but reported nothing for ${describeTest(test)} (${r.produced} other result(s)): does the filter match it?`);
      }
    }
    for (const test of list) executions = appendAttempts(executions, test.fingerprint, attemptsOf.get(test.fingerprint)!, kind);
    return tallies;
  };

  if (opts.retryFailed !== undefined && opts.retryFailed > 0) {
    // Like Datadog's Auto Test Retries: only the failing tests, with the runner's filter, until one
    // passes; their attempts join the run, so the gate has same-code evidence without a re-run of the suite.
    const sel = selectRetries(run.executions, opts.retryMaxTests ?? Number.POSITIVE_INFINITY);
    if (sel.kind === 'too_many') log(`retry: ${sel.count} tests failed, more than --retry-max-tests ${sel.max}: none retried (a broken build, not flakes?)`);
    else if (sel.kind === 'selected') {
      log(`retry: ${sel.tests.length} failing test(s): retrying each up to ${opts.retryFailed} time(s) until it passes (budget ${Math.round(opts.budgetMs / 1000)} s)`);
      const tallies = await rerunAll(sel.tests, opts.retryFailed, 'retry', true);
      for (const t of sel.tests) {
        const v = tallies.get(t.fingerprint)!;
        log(`retry: ${verifyLine('retry', t, v).line}`);
        if (v.runs > v.failed) recovered.push(describeTest(t));
      }
    }
  }

  if (opts.verifyNew !== undefined) {
    known = await fetchKnownTests(tests.map((t) => t.fingerprint), baseBranch, ctx);
    if (!known.ok) {
      log(`verify: warning: cannot tell which tests are new (${known.problem}): no new test re-run`);
    } else {
      const sel = selectNewTests(tests, known.seen, opts.maxNew);
      if (sel.kind === 'none') log(`verify: no new test: all ${tests.length} ran on ${baseBranch} before`);
      else if (sel.kind === 'too_many') log(`verify: ${sel.count} tests look new to ${baseBranch}, more than --verify-max-new ${sel.max}: none re-run (a new project, a renamed suite, the wrong base branch?)`);
      else {
        log(`verify: ${sel.tests.length} new test(s) never seen on ${baseBranch}: re-running each ${opts.verifyNew} time(s) (budget ${Math.round(opts.budgetMs / 1000)} s)`);
        const own = new Map(sel.tests.map((t) => [t.fingerprint, tally(run.executions.filter((e) => executionFingerprint(e) === t.fingerprint))]));
        const tallies = await rerunAll(sel.tests, opts.verifyNew, 'new');
        executions = markVerified(executions, new Set(sel.tests.map((t) => t.fingerprint)), 'new');
        for (const t of sel.tests) {
          const v = tallies.get(t.fingerprint)!;
          // The command's own attempts count too: a new test that failed there failed.
          const o = own.get(t.fingerprint)!;
          const { ok, line } = verifyLine('new', t, { ...v, runs: v.runs + o.runs, failed: v.failed + o.failed });
          log(`verify: ${line}`);
          (ok ? verified : failures).push(line);
        }
      }
    }
  }

  if (opts.verifyFix) {
    const refs = parseFixTrailers(headMessage(ctx.cwd, log));
    if (refs.length === 0) log('verify: no `Fixes-flaky:` trailer in the HEAD commit message: no fix to verify');
    else {
      const ids = refs.some((r) => /^[0-9a-f-]{36}$/i.test(r)) ? await idsOf(tests, baseBranch, known, ctx) : new Map<string, string | null>();
      const chosen = new Map<string, RunTest>();
      for (const ref of refs) {
        const matched = matchFixRef(ref, tests, ids);
        if (matched.length === 0) log(`verify: warning: Fixes-flaky: ${ref}: no test of this run has that id or title; not verified here`);
        for (const t of matched) chosen.set(t.fingerprint, t);
      }
      if (chosen.size > 0) {
        log(`verify: ${chosen.size} test(s) named in Fixes-flaky: re-running each ${opts.fixRuns} time(s)`);
        const tallies = await rerunAll([...chosen.values()], opts.fixRuns, 'fix');
        for (const t of chosen.values()) {
          const { ok, line } = verifyLine('fix', t, tallies.get(t.fingerprint)!);
          log(`verify: ${line}`);
          (ok ? verified : failures).push(line);
        }
      }
    }
  }
  return { run: { ...run, executions }, failures, verified, recovered };
}

/**
 * Where a stored test file is on disk: stored paths are relative to the repository root (the
 * reporters find it by its .git), which may be above the runner's root or the command's directory.
 */
export function locateFile(filePath: string, starts: readonly string[]): string {
  if (path.isAbsolute(filePath)) return filePath;
  for (const start of starts) {
    for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
      const candidate = path.join(dir, filePath);
      if (fs.existsSync(candidate)) return candidate;
      if (path.dirname(dir) === dir) break;
    }
  }
  return path.resolve(starts[0] ?? '.', filePath);
}

function headMessage(cwd: string, log: (line: string) => void): string {
  try {
    return execFileSync('git', ['log', '-1', '--format=%B'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    log(`verify: warning: cannot read the HEAD commit message (${(err as Error).message.split('\n')[0]})`);
    return '';
  }
}

async function idsOf(tests: readonly RunTest[], branch: string, known: KnownResult | undefined, ctx: Ctx): Promise<Map<string, string | null>> {
  const answer = known ?? (await fetchKnownTests(tests.map((t) => t.fingerprint), branch, ctx));
  if (!answer.ok) {
    ctx.log(`verify: warning: cannot resolve test ids (${answer.problem}); matching Fixes-flaky by title only`);
    return new Map();
  }
  return answer.ids;
}

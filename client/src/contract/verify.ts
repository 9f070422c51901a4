// `flakehouse run --verify-new` / `--verify-fix` (docs/contract.md §7), pure: which tests of a run
// are new, in what order their re-runs go and when the budget stops them, how a re-run command is
// built (runner adapters and the `--rerun` template, split into words without a shell), which
// tests a commit message names in `Fixes-flaky:` trailers, and how the re-runs' attempts join the
// run (marked `flakehouse.verify`, so the PR summary and gate can tell them apart).
import type { AttributeValue, ExecutionInput } from './batch.js';
import { describeTest, executionFingerprint, failingTests } from './mute.js';

/**
 * The execution attribute marking the attempts of a verified test: `new` or `fix`, or `retry` for
 * the re-runs of a failing test by `flakehouse run --retry-failed`. Attempts `flakehouse run` made
 * itself (numbered after the test's own) are evidence for the scorer and the gate, never CI: the
 * daily rollups and health leave them out.
 */
export const VERIFY_ATTRIBUTE = 'flakehouse.verify';
export const VERIFY_KINDS = ['new', 'fix', 'retry'] as const;
export type VerifyKind = (typeof VERIFY_KINDS)[number];

export const DEFAULT_VERIFY_BUDGET_S = 300;
export const DEFAULT_VERIFY_MAX_NEW = 50;
export const DEFAULT_VERIFY_FIX_RUNS = 20;
/** More failing tests than this and none is retried: a broken build, not flakes (re-running it proves nothing). */
export const DEFAULT_RETRY_MAX_TESTS = 20;
/** The suite path separator of stored executions (client/src/reporter/collect.ts SUITE_SEPARATOR). */
const SUITE_SEPARATOR = ' > ';

/** One test of a run, by the key the server identifies it with. */
export interface RunTest {
  fingerprint: string;
  filePath: string;
  suite: string;
  title: string;
  params?: Record<string, unknown>;
}

/** The distinct tests of a run that ran (a test only skipped is not verified), in first-seen order. */
export function testsOfRun(executions: readonly ExecutionInput[]): RunTest[] {
  const out = new Map<string, RunTest>();
  for (const e of executions) {
    if (e.status === 'skip') continue;
    const fp = executionFingerprint(e);
    if (out.has(fp)) continue;
    const t: RunTest = { fingerprint: fp, filePath: e.filePath, suite: e.suite, title: e.title };
    if (e.params && Object.keys(e.params).length > 0) t.params = e.params;
    out.set(fp, t);
  }
  return [...out.values()];
}

export type NewTestSelection =
  | { kind: 'none' }
  | { kind: 'selected'; tests: RunTest[] }
  /** More tests look new than `max`: a new project, a renamed suite, a wrong base branch. Nothing is re-run. */
  | { kind: 'too_many'; count: number; max: number };

/** The tests the server has not seen on the base branch (`seen`: their fingerprints), unless there are too many. */
export function selectNewTests(tests: readonly RunTest[], seen: ReadonlySet<string>, maxNew: number): NewTestSelection {
  const fresh = tests.filter((t) => !seen.has(t.fingerprint));
  if (fresh.length === 0) return { kind: 'none' };
  if (fresh.length > maxNew) return { kind: 'too_many', count: fresh.length, max: maxNew };
  return { kind: 'selected', tests: fresh };
}

export type RetrySelection =
  | { kind: 'none' }
  | { kind: 'selected'; tests: RunTest[] }
  /** More tests failed than `max`: nothing is retried. */
  | { kind: 'too_many'; count: number; max: number };

/** The tests whose last attempt failed (a runner's own retry that passed is not one), unless there are too many. */
export function selectRetries(executions: readonly ExecutionInput[], maxTests: number): RetrySelection {
  const failing = failingTests(executions);
  if (failing.length === 0) return { kind: 'none' };
  if (failing.length > maxTests) return { kind: 'too_many', count: failing.length, max: maxTests };
  const byFp = new Map(testsOfRun(executions).map((t) => [t.fingerprint, t]));
  return { kind: 'selected', tests: failing.map((f) => byFp.get(f.fingerprint)).filter((t): t is RunTest => t !== undefined) };
}

/**
 * The re-runs in order: round by round (each test once per round), so a budget that runs out leaves
 * every test with about as many re-runs as the others rather than the last ones with none.
 */
export function rerunSchedule<T>(tests: readonly T[], runs: number): { test: T; round: number }[] {
  const out: { test: T; round: number }[] = [];
  for (let round = 1; round <= runs; round++) for (const test of tests) out.push({ test, round });
  return out;
}

/** Whether another re-run may start: the budget counts from the first re-run's start. */
export function withinBudget(startedAt: number, now: number, budgetMs: number): boolean {
  return now - startedAt < budgetMs;
}

// ---------------------------------------------------------------------------------------------
// Re-run commands

export const RUNNERS = ['vitest', 'jest', 'playwright', 'pytest'] as const;
export type Runner = (typeof RUNNERS)[number];

/** What a re-run command is built from: the file (as the runner is given it) and the test's names. */
export interface RerunTarget {
  /** The test file, relative to the command's directory. */
  file: string;
  suitePath: string[];
  title: string;
  /** A pytest parametrization id (params `id`, as JUnit and OTLP read `test_x[2-1]`): selects that one case. */
  paramId?: string;
}

export function targetOf(t: Pick<RunTest, 'suite' | 'title' | 'params'>, file: string): RerunTarget {
  const target: RerunTarget = { file, suitePath: t.suite === '' ? [] : t.suite.split(SUITE_SEPARATOR), title: t.title };
  if (typeof t.params?.['id'] === 'string') target.paramId = t.params['id'];
  return target;
}

/** The test's full name as Vitest, Jest and Playwright match `-t` / `-g` against: suites and title, by spaces. */
export function fullName(t: Pick<RerunTarget, 'suitePath' | 'title'>): string {
  return [...t.suitePath, t.title].join(' ');
}

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * Splits a command line into words as a POSIX shell would quote them ('…', "…", backslash), with
 * no expansion, pipes or redirections: what `--rerun` templates and runner detection read.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unbalanced ' in ${JSON.stringify(line)}`);
      cur += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      for (;;) {
        if (i >= line.length) throw new Error(`unbalanced " in ${JSON.stringify(line)}`);
        const d = line[i]!;
        if (d === '"') break;
        if (d === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) {
          cur += line[i + 1];
          i += 2;
        } else {
          cur += d;
          i++;
        }
      }
      inWord = true;
      i++;
    } else if (c === '\\' && i + 1 < line.length) {
      cur += line[i + 1];
      inWord = true;
      i += 2;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
      i++;
    } else {
      cur += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

/** A word as a POSIX shell reads it back unchanged (single quotes). */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The `--rerun` template filled in for one test: the template is split into words first and the
 * placeholders are replaced inside the words, so a name with quotes, spaces or `$(…)` in it stays
 * one argument and is never run by a shell. `{file}`, `{name}` (suites and title by spaces),
 * `{title}`, `{suite}` (suites by " > "); other braces are left alone.
 */
export function fillRerunTemplate(template: string, t: RerunTarget): string[] {
  const vars: Record<string, string> = { file: t.file, name: fullName(t), title: t.title, suite: t.suitePath.join(SUITE_SEPARATOR) };
  const words = splitCommandLine(template);
  if (words.length === 0) throw new Error('the --rerun template is empty');
  return words.map((w) => w.replace(/\{(file|name|title|suite)\}/g, (_, k: string) => vars[k]!));
}

/** The command's words, whether given as words or as one shell line. */
function wordsOf(argv: readonly string[]): string[] {
  if (argv.length === 1 && /\s/.test(argv[0]!)) {
    try {
      return splitCommandLine(argv[0]!);
    } catch {
      return [argv[0]!];
    }
  }
  return [...argv];
}

const base = (w: string): string => w.split(/[\\/]/).pop()!.replace(/\.(c|m)?js$/, '');

/** Which runner the command runs, by its words (`npx vitest run`, `node …/jest/bin/jest.js`, `python -m pytest`…). */
export function detectRunner(argv: readonly string[]): Runner | null {
  const words = wordsOf(argv);
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const b = base(w);
    if (b === 'vitest' || /[\\/]vitest[\\/]vitest\.mjs$/.test(w)) return 'vitest';
    if (b === 'jest' || /[\\/]jest(-cli)?[\\/]bin[\\/]jest\.js$/.test(w)) return 'jest';
    if (b === 'playwright' || /[\\/]@playwright[\\/]test[\\/]cli\.js$/.test(w)) return 'playwright';
    if (b === 'pytest' || b === 'py.test' || (w === '-m' && words[i + 1] === 'pytest')) return 'pytest';
  }
  return null;
}

/** pytest options that take their value as the next word (kept with it when the test paths are dropped). */
const PYTEST_VALUED = new Set(['-c', '-p', '-o', '-k', '-m', '--junitxml', '--junit-xml', '--rootdir', '--confcutdir', '--basetemp', '-W', '--config-file', '--override-ini']);

/**
 * The command that re-runs one test with the runner's own filter, built on the original command
 * (its config, reporters and options stay): Vitest and Jest `<file> -t <^full name$>`, Playwright
 * `<file> -g <full name>`, pytest `<file>::<class>::<name>` in place of the command's test paths.
 * Returns words to spawn, or one shell line when the command was one.
 */
export function adapterCommand(runner: Runner, argv: readonly string[], t: RerunTarget): string[] {
  const shellLine = argv.length === 1 && /\s/.test(argv[0]!);
  const name = fullName(t);
  let words = wordsOf(argv);
  let extra: string[];
  switch (runner) {
    case 'vitest': {
      // Vitest watches by default outside CI: a re-run must run once and exit.
      const once = words.some((w) => w === 'run' || w === '--run') ? [] : ['--run'];
      extra = [...once, t.file, '-t', `^${escapeRegExp(name)}$`];
      break;
    }
    case 'jest':
      extra = [t.file, '-t', `^${escapeRegExp(name)}$`];
      break;
    case 'playwright':
      extra = [t.file, '-g', escapeRegExp(name)];
      break;
    case 'pytest': {
      // Test paths of the original command would run beside the node id: keep only its options.
      const at = words.findIndex((w, i) => base(w) === 'pytest' || base(w) === 'py.test' || (words[i - 1] === '-m' && w === 'pytest'));
      const kept = words.slice(0, at + 1);
      for (let i = at + 1; i < words.length; i++) {
        const w = words[i]!;
        if (w === '-k' || w === '-m') {
          i++; // a selection of the original run: the node id selects here
          continue;
        }
        if (!w.startsWith('-')) continue;
        kept.push(w);
        if (PYTEST_VALUED.has(w) && i + 1 < words.length) kept.push(words[++i]!);
      }
      words = kept;
      extra = [[t.file, ...pytestClasses(t), t.paramId !== undefined ? `${t.title}[${t.paramId}]` : t.title].join('::')];
      break;
    }
  }
  if (shellLine && runner !== 'pytest') return [`${argv[0]} ${extra.map(shellQuote).join(' ')}`];
  if (shellLine) return [[...words, ...extra].map(shellQuote).join(' ')];
  return [...words, ...extra];
}

/**
 * The classes of a pytest node id, from the JUnit classname pytest writes as the suite
 * (`tests.test_cart.TestCart`): what follows the module's name (`test_cart`); without it, the
 * capitalised parts.
 */
export function pytestClasses(t: RerunTarget): string[] {
  // A suite read from JUnit or OTLP is already the classes (`TestCart::TestCoupon`); an older reading is dotted.
  const parts = t.suitePath.flatMap((s) => s.split(/::|\./));
  const module = t.file.split(/[\\/]/).pop()!.replace(/\.py$/, '');
  const at = parts.lastIndexOf(module);
  return at >= 0 ? parts.slice(at + 1) : parts.filter((p) => /^[A-Z]/.test(p));
}

// ---------------------------------------------------------------------------------------------
// Fixes-flaky trailers

/** The values of the message's `Fixes-flaky:` trailers (any case), in order, without repeats. */
export function parseFixTrailers(message: string): string[] {
  const out: string[] = [];
  for (const m of message.matchAll(/^[ \t]*fixes-flaky[ \t]*:[ \t]*(.*?)[ \t]*$/gim)) {
    const v = m[1]!;
    if (v !== '' && !out.includes(v)) out.push(v);
  }
  return out;
}

/**
 * The tests of the run a trailer names: by the server's test id, or by title — the title alone,
 * `suite > title`, `file > suite > title` (as the CLI prints tests), or the full name by spaces.
 */
export function matchFixRef(ref: string, tests: readonly RunTest[], idOf: ReadonlyMap<string, string | null> = new Map()): RunTest[] {
  const r = ref.trim();
  const byId = tests.filter((t) => idOf.get(t.fingerprint) === r);
  if (byId.length > 0) return byId;
  return tests.filter((t) => {
    const names = [t.title, fullName(targetOf(t, '')), t.suite === '' ? t.title : `${t.suite}${SUITE_SEPARATOR}${t.title}`, describeTest(t), describeTest({ ...t, params: null })];
    return names.includes(r);
  });
}

// ---------------------------------------------------------------------------------------------
// The re-runs' attempts in the run

/**
 * The executions with `attempts` (a re-run's executions of the test `fingerprint`) added as its
 * next attempts: numbered after its last one, each a retry of the one before, marked `kind`. The
 * server then sees every attempt of the test in one run (a failure and a pass there is flaky
 * evidence of the same code). Copies; the input is left alone.
 */
export function appendAttempts(executions: readonly ExecutionInput[], fingerprint: string, attempts: readonly ExecutionInput[], kind: VerifyKind): ExecutionInput[] {
  const out = [...executions];
  let last = -1;
  out.forEach((e, i) => {
    if (executionFingerprint(e) === fingerprint && (last < 0 || e.attempt >= out[last]!.attempt)) last = i;
  });
  let attempt = last >= 0 ? out[last]!.attempt : 0;
  for (const a of attempts) {
    attempt += 1;
    const next: ExecutionInput = { ...a, attempt, attributes: { ...a.attributes, [VERIFY_ATTRIBUTE]: kind } };
    if (last >= 0) next.retryOfIndex = last;
    else delete next.retryOfIndex;
    out.push(next);
    last = out.length - 1;
  }
  return out;
}

/** The executions with every attempt of the tests `fingerprints` marked `kind` (copies). */
export function markVerified(executions: readonly ExecutionInput[], fingerprints: ReadonlySet<string>, kind: VerifyKind): ExecutionInput[] {
  return executions.map((e) => {
    if (!fingerprints.has(executionFingerprint(e))) return e;
    const attributes: Record<string, AttributeValue> = { ...e.attributes, [VERIFY_ATTRIBUTE]: kind };
    return { ...e, attributes };
  });
}

/** What the re-runs of one test came to. */
export interface VerifyTally {
  /** Attempts counted (executions of the test): for `new` the command's own too. */
  runs: number;
  failed: number;
  /** Re-runs that exited 0 with no result for the test (the filter matched nothing): not counted. */
  missing: number;
  /** Re-runs the budget left out. */
  skipped: number;
}

/** Tallies the attempts of a test: the failed ones are `fail` (a `flaky` attempt is a pass after a failed one). */
export function tally(attempts: readonly Pick<ExecutionInput, 'status'>[]): { runs: number; failed: number } {
  const graded = attempts.filter((a) => a.status !== 'skip');
  return { runs: graded.length, failed: graded.filter((a) => a.status === 'fail').length };
}

/** The line said about one verified test, and whether it holds the build. */
export function verifyLine(kind: VerifyKind, t: RunTest, v: VerifyTally): { ok: boolean; line: string } {
  const name = describeTest(t);
  const notes = [v.missing > 0 ? `${v.missing} re-run(s) left no result for it` : null, v.skipped > 0 ? `${v.skipped} re-run(s) not done: the budget ran out` : null].filter((x) => x !== null);
  const note = notes.length > 0 ? ` (${notes.join('; ')})` : '';
  if (kind === 'retry') {
    if (v.runs > v.failed) return { ok: true, line: `passed on a retry of the same code (${v.failed} failed retr${v.failed === 1 ? 'y' : 'ies'} before): ${name}${note}` };
    return { ok: true, line: `failed every retry (${v.runs}): ${name}${note}` };
  }
  if (kind === 'new') {
    if (v.failed > 0) return { ok: false, line: `new test failed ${v.failed} of ${v.runs}: ${name}${note}` };
    return { ok: true, line: `new test passed ${v.runs} of ${v.runs}: ${name}${note}` };
  }
  if (v.failed > 0) return { ok: false, line: `fix not verified: failed ${v.failed} of ${v.runs}: ${name}${note}` };
  if (v.runs === 0 || v.missing > 0 || v.skipped > 0) return { ok: false, line: `fix not verified: only ${v.runs} clean run(s): ${name}${note}` };
  return { ok: true, line: `fix verified: passed ${v.runs} of ${v.runs}: ${name}` };
}

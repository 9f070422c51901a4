// `flakehouse run [--junit GLOB]… [--root DIR] -- <test command…>`: runs the test command with its
// output streamed, collects its results (what the reporters hand over, or the JUnit files it
// wrote), sends them as one run the way `flakehouse report` does, and decides the exit code
// (client/src/contract/mute.ts): 0 when the command failed and every failing test is quarantined — those
// failures are printed and stored marked `flakehouse.quarantined` —, otherwise the command's own.
// The server unreachable or refusing, or no results: the command's own code, with a message.
//
// The steps are separate: collecting results, then re-running the tests to prove (`--verify-new`:
// tests new to the base branch; `--verify-fix`: the commit's `Fixes-flaky:` tests; src/cli/verify/)
// whose attempts join the run, then the verdict and the report. A failed proof exits non-zero even
// when the command passed; quarantine never mutes it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../contract/config/errors.js';
import { decideMute, describeTest, failingTests, markMuted, matchFailures, type MutedFailure, type MuteVerdict, type QuarantineEntry } from '../contract/mute.js';
import { attachMatchingFiles } from '../reporter/artifacts.js';
import { fetchQuarantineList, type QuarantineList } from '../reporter/quarantine-cache.js';
import { RUN_HANDOFF_ENV } from '../reporter/run-handoff.js';
import { sendRun, type SendResult } from '../reporter/send.js';
import { loadReporterSettings } from '../reporter/settings.js';
import type { ReporterRun } from '../reporter/types.js';
import type { CliIo } from './io.js';
import { runCommand, type CommandResult } from './run/command.js';
import { collectResults } from './run/results.js';
import { UsageError } from './usage-error.js';
import { verifyTests, type VerifyOptions } from './verify/verify.js';
import { DEFAULT_RETRY_MAX_TESTS, DEFAULT_VERIFY_BUDGET_S, DEFAULT_VERIFY_FIX_RUNS, DEFAULT_VERIFY_MAX_NEW } from '../contract/verify.js';

export const RUN_USAGE =
  'usage: flakehouse run [--junit GLOB]… [--root DIR] [--attach GLOB]… [--retry-failed N [--retry-max-tests M]] [--verify-new N [--verify-budget SECONDS] [--verify-max-new M]] [--verify-fix [--verify-fix-runs N]] [--rerun \'cmd {file} {name}\'] [--base-branch B] -- <test command…>';

export interface RunOptions {
  junit: string[];
  attach: string[];
  rootDir: string;
  command: string[];
  /** --verify-new N / --verify-fix and their bounds (client/src/cli/verify/verify.ts). */
  verify: Omit<VerifyOptions, 'command' | 'junit' | 'rootDir'>;
}

function count(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min) throw new UsageError(`run: --${name} must be a whole number, at least ${min} (got ${JSON.stringify(raw)})\n${RUN_USAGE}`);
  return n;
}

export function parseRunArgs(args: readonly string[], cwd: string): RunOptions {
  const dash = args.indexOf('--');
  if (dash < 0) throw new UsageError(`run: put the test command after \`--\`\n${RUN_USAGE}`);
  const command = args.slice(dash + 1);
  if (command.length === 0 || command[0] === '') throw new UsageError(`run: no test command after \`--\`\n${RUN_USAGE}`);
  let values;
  try {
    ({ values } = parseArgs({
      args: args.slice(0, dash),
      options: {
        junit: { type: 'string', multiple: true },
        root: { type: 'string' },
        attach: { type: 'string', multiple: true },
        'retry-failed': { type: 'string' },
        'retry-max-tests': { type: 'string' },
        'verify-new': { type: 'string' },
        'verify-budget': { type: 'string' },
        'verify-max-new': { type: 'string' },
        'verify-fix': { type: 'boolean' },
        'verify-fix-runs': { type: 'string' },
        rerun: { type: 'string' },
        'base-branch': { type: 'string' },
      },
      allowPositionals: false,
      strict: true,
    }));
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${RUN_USAGE}`);
  }
  const verify: RunOptions['verify'] = {
    verifyFix: values['verify-fix'] ?? false,
    fixRuns: count('verify-fix-runs', values['verify-fix-runs'], DEFAULT_VERIFY_FIX_RUNS, 1),
    budgetMs: count('verify-budget', values['verify-budget'], DEFAULT_VERIFY_BUDGET_S, 1) * 1000,
    maxNew: count('verify-max-new', values['verify-max-new'], DEFAULT_VERIFY_MAX_NEW, 1),
  };
  if (values['verify-new'] !== undefined) verify.verifyNew = count('verify-new', values['verify-new'], 0, 1);
  if (values['retry-failed'] !== undefined) {
    verify.retryFailed = count('retry-failed', values['retry-failed'], 0, 1);
    verify.retryMaxTests = count('retry-max-tests', values['retry-max-tests'], DEFAULT_RETRY_MAX_TESTS, 1);
  }
  if (values.rerun !== undefined) {
    if (values.rerun.trim() === '') throw new UsageError(`run: --rerun needs a command template, e.g. 'node run-one.js {file} {name}'\n${RUN_USAGE}`);
    verify.rerun = values.rerun;
  }
  if (values['base-branch'] !== undefined) verify.baseBranch = values['base-branch'];
  return { junit: values.junit ?? [], attach: values.attach ?? [], rootDir: path.resolve(cwd, values.root ?? '.'), command, verify };
}

export async function runWrapped(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  const opts = parseRunArgs(args, cwd);
  const log = (line: string): void => void io.stderr.write(`flakehouse: ${line}\n`);
  const handoffDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flakehouse-run-'));
  try {
    // 1. The command, streamed.
    const command = await runCommand(opts.command, { cwd, env: { ...env, [RUN_HANDOFF_ENV]: handoffDir } });
    if (command.spawnError) log(`cannot start ${JSON.stringify(opts.command[0])}: ${command.spawnError}`);
    // 2. Its results.
    const collected = collectResults({ cwd, rootDir: opts.rootDir, junit: opts.junit, handoffDir, startedAt: command.startedAt, log });
    let run = collected.run;
    if (run === undefined) return noResults(command, opts, log);
    if (opts.attach.length > 0) attachMatchingFiles(run.executions, opts.attach, { cwd, warn: (line) => log(`warning: ${line}`) });
    log(`read ${run.executions.length} executions from ${collected.sources.join(', ')}`);
    // 3. Re-runs: of the failing tests (`--retry-failed`), of the tests to prove (`--verify-new` /
    // `--verify-fix`); their attempts join `run`.
    let failedVerification: string[] = [];
    let recovered: string[] = [];
    if (opts.verify.retryFailed !== undefined || opts.verify.verifyNew !== undefined || opts.verify.verifyFix) {
      const outcome = await verifyTests(run, { ...opts.verify, command: opts.command, junit: opts.junit, rootDir: opts.rootDir }, { env, cwd, log });
      run = outcome.run;
      failedVerification = outcome.failures;
      recovered = outcome.recovered;
      if (failedVerification.length === 0 && outcome.verified.length > 0) log(`verify: all ${outcome.verified.length} verified test(s) passed every run`);
    }
    // The run lasted as long as the job did: from the command's start to now, its re-runs included,
    // not only the span its reporters or JUnit files saw (a JUnit file without timestamps is read
    // after the command, and re-runs come after the reporters' own end).
    run = { ...run, startedAt: Math.min(run.startedAt, command.startedAt), finishedAt: Math.max(run.finishedAt ?? run.startedAt, Date.now()) };
    // A pass on a retry proves a flake of this code, not that the change is fine: the exit code stays
    // the command's, and the gate decides (a known flake, or a test the change may have made flaky).
    if (recovered.length > 0 && command.exitCode !== 0) {
      log(`retry: ${recovered.length} failing test(s) passed on a retry of the same code, sent as such: exiting with the command's code ${command.exitCode}; \`flakehouse gate\` tells known flakes from new ones`);
    }
    // 4. The verdict, then the report with the muted failures marked.
    const code = await decideAndReport(run, command, { env, cwd, log, recovered: recovered.length });
    if (failedVerification.length === 0) return code;
    // A failed proof holds the build even when the command passed; quarantine never mutes it.
    const exit = code !== 0 ? code : 1;
    log(`verify: ${failedVerification.length} test(s) failed verification: exiting ${exit}${failedVerification.map((l) => `\n  ${l}`).join('')}`);
    return exit;
  } finally {
    fs.rmSync(handoffDir, { recursive: true, force: true });
  }
}

function noResults(command: CommandResult, opts: RunOptions, log: (line: string) => void): number {
  const looked = ['no reporter handed over results', opts.junit.length > 0 ? `no JUnit file written by the command matched ${opts.junit.map((j) => JSON.stringify(j)).join(', ')}` : 'no --junit given'];
  if (command.exitCode === 0) log(`the command passed; nothing to report (${looked.join('; ')})`);
  else log(`the command failed (exit ${command.exitCode}) and left no test results (${looked.join('; ')}): exiting with its code; a failure without results is never muted`);
  return command.exitCode;
}

async function decideAndReport(run: ReporterRun, command: CommandResult, ctx: { env: NodeJS.ProcessEnv; cwd: string; log: (line: string) => void; recovered?: number }): Promise<number> {
  const { env, cwd, log } = ctx;
  let list: QuarantineList | undefined;
  // The list matters only to a failing command; a passing one keeps its 0 whatever it says.
  if (command.exitCode !== 0) list = await quarantineList(env, cwd);
  const quarantine: QuarantineEntry[] | undefined = list?.ok && list.fresh ? list.items : undefined;
  const verdict = decideMute({ commandExitCode: command.exitCode, executions: run.executions, quarantine });
  const sent: ReporterRun = { ...run, executions: markMuted(run.executions, verdict) };
  const result = await sendRun(sent, { env, cwd, log });
  // Without a list from the server nothing is muted; the cached list only tells what it would have muted.
  const cached = list?.ok && !list.fresh ? matchFailures(failingTests(run.executions), list.items).muted : [];
  return explain(verdict, list, cached, result, command, log, ctx.recovered ?? 0);
}

async function quarantineList(env: NodeJS.ProcessEnv, cwd: string): Promise<QuarantineList> {
  let settings;
  try {
    settings = loadReporterSettings({ env, cwd });
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, problem: `the reporter is misconfigured: ${err.message}`, refused: true };
    throw err;
  }
  if (settings.token === undefined) return { ok: false, problem: 'SERVICE_TOKEN is not set', refused: true };
  return fetchQuarantineList({ endpoint: settings.endpoint, project: settings.project, token: settings.token, bufferDir: settings.bufferDir });
}

/** Prints what was decided and why; returns the exit code. */
function explain(verdict: MuteVerdict, list: QuarantineList | undefined, cachedMuted: MutedFailure[], result: SendResult, command: CommandResult, log: (line: string) => void, recovered = 0): number {
  const own = `exiting with the command's code ${command.exitCode}`;
  const lines = (muted: readonly MutedFailure[], word: string): string => muted.map((m) => `\n  ${word}: ${describeTest(m)}${m.quarantine.reason ? ` (quarantined: ${m.quarantine.reason})` : ''}`).join('');
  switch (verdict.kind) {
    case 'passed':
      return 0;
    case 'no_results':
      return command.exitCode;
    case 'no_failing_test':
      if (recovered > 0) return command.exitCode; // said above: every failing test passed on a retry
      log(`the command failed (exit ${command.exitCode}) but none of its tests did (a crash, a compile error, a hook?): ${own}`);
      return command.exitCode;
    case 'no_quarantine_list': {
      // Nothing set up here (or SERVICE_REPORT=off): sendRun has said so, and nothing is muted by design.
      if (result.skipped === 'not_set_up' || result.skipped === 'off') return command.exitCode;
      const problem = list && !list.ok ? list.problem : list && list.ok && !list.fresh ? list.problem : 'no quarantine list';
      const cached =
        list?.ok && !list.fresh && cachedMuted.length > 0
          ? `; by the list cached at ${list.fetchedAt}, ${cachedMuted.length} of ${verdict.unmuted.length} failing test(s) are quarantined${lines(cachedMuted, 'quarantined')}`
          : '';
      log(`warning: failures cannot be muted without the server's quarantine list (${problem}): ${own}${cached}`);
      return command.exitCode;
    }
    case 'real_failures': {
      const names = verdict.unmuted.slice(0, 10).map((f) => `\n  failed: ${describeTest(f)}`).join('');
      const more = verdict.unmuted.length > 10 ? `\n  … and ${verdict.unmuted.length - 10} more` : '';
      const quarantined = verdict.muted.length > 0 ? ` (${verdict.muted.length} quarantined failure(s) beside them)` : '';
      log(`${verdict.unmuted.length} failing test(s) are not quarantined${quarantined}: ${own}${names}${more}`);
      return command.exitCode;
    }
    case 'all_muted':
      if (!result.delivered) {
        // A muted failure must be on record, or analytics would take it for a pass that never failed.
        log(`warning: every failing test is quarantined, but the results were not delivered${result.buffered ? ' (buffered for the next report)' : ''}, so nothing is muted: ${own}`);
        return command.exitCode;
      }
      log(`the command failed (exit ${command.exitCode}) only on quarantined tests: exiting 0; ${verdict.muted.length} failure(s) muted and recorded as quarantined${lines(verdict.muted, 'muted')}`);
      return 0;
  }
}

// How the runner reporters finish a run. Under `flakehouse run` (which sets FLAKEHOUSE_RUN_RESULTS
// to a directory it made for this one command) a reporter hands its run over as a file there
// instead of sending it: the wrapper sends it once, with muted failures marked, and decides the
// exit code. The directory is new for each command, so whatever is in it was written by it (the
// freshness `last-report.json` cannot give: it records a commit, not results). Otherwise the
// reporter sends the run itself and then says which of its failures are quarantined.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../contract/config/errors.js';
import { describeTest, failingTests, matchFailures } from '../contract/mute.js';
import type { ExecutionInput } from '../contract/batch.js';
import { fetchQuarantineList } from './quarantine-cache.js';
import { sendRun, type SendResult } from './send.js';
import { loadReporterSettings } from './settings.js';
import type { ReporterRun } from './types.js';

export const RUN_HANDOFF_ENV = 'FLAKEHOUSE_RUN_RESULTS';
const HANDOFF_SUFFIX = '.run-results.json';

interface HandoffFile {
  version: 1;
  writtenAt: string;
  run: ReporterRun;
}

/** Writes the run for `flakehouse run` when it asked for one; false when it did not. Throws on I/O errors. */
export function handOffRun(run: ReporterRun, env: NodeJS.ProcessEnv = process.env): boolean {
  const dir = env[RUN_HANDOFF_ENV]?.trim();
  if (!dir) return false;
  const file = path.join(dir, `${process.pid}-${Date.now()}-${randomBytes(3).toString('hex')}${HANDOFF_SUFFIX}`);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify({ version: 1, writtenAt: new Date().toISOString(), run } satisfies HandoffFile));
  fs.renameSync(tmp, file);
  return true;
}

/** The runs the reporters handed over in `dir`, oldest first; unreadable files are named in `problems`. */
export function readHandedOffRuns(dir: string): { runs: ReporterRun[]; problems: string[] } {
  const runs: { at: string; run: ReporterRun }[] = [];
  const problems: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith(HANDOFF_SUFFIX));
  } catch {
    return { runs: [], problems: [] };
  }
  for (const name of names.sort()) {
    try {
      const f = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as Partial<HandoffFile>;
      if (f.version !== 1 || !f.run || !Array.isArray(f.run.executions)) throw new Error('not a hand-off file of this version');
      runs.push({ at: f.writtenAt ?? '', run: f.run });
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
  }
  return { runs: runs.sort((a, b) => a.at.localeCompare(b.at)).map((r) => r.run), problems };
}

/**
 * The end of a reporter's run: handed to `flakehouse run`, or sent and followed by the failures
 * that are quarantined. `undefined` when handed over (the wrapper sends it).
 */
export async function finishReporterRun(run: ReporterRun, opts: { cwd: string; strict?: boolean; env?: NodeJS.ProcessEnv; log?: (line: string) => void }): Promise<SendResult | undefined> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((line: string) => void process.stderr.write(`flakehouse: ${line}\n`));
  try {
    if (handOffRun(run, env)) return undefined;
  } catch (err) {
    log(`warning: cannot hand the results to \`flakehouse run\` (${(err as Error).message}); sending them directly`);
  }
  const result = await sendRun(run, { cwd: opts.cwd, strict: opts.strict, env, log });
  await printQuarantinedFailures(run.executions, { env, cwd: opts.cwd, log });
  return result;
}

/**
 * Says which failures of the run are of quarantined tests (`flakehouse run` mutes those), from the
 * server's list or, when it cannot be reached, the cached one. Silent without failures; never throws.
 */
export async function printQuarantinedFailures(executions: readonly ExecutionInput[], opts: { env: NodeJS.ProcessEnv; cwd: string; log: (line: string) => void }): Promise<void> {
  try {
    const failing = failingTests(executions);
    if (failing.length === 0) return;
    let settings;
    try {
      settings = loadReporterSettings({ env: opts.env, cwd: opts.cwd });
    } catch (err) {
      if (err instanceof ConfigError) return; // sendRun has already said what is wrong
      throw err;
    }
    if (settings.token === undefined) return;
    const list = await fetchQuarantineList({ endpoint: settings.endpoint, project: settings.project, token: settings.token, bufferDir: settings.bufferDir });
    if (!list.ok) {
      opts.log(`warning: cannot tell which failures are quarantined: ${list.problem}`);
      return;
    }
    const { muted, unmuted } = matchFailures(failing, list.items);
    const source = list.fresh ? '' : ` (quarantine list cached at ${list.fetchedAt}: ${list.problem})`;
    if (muted.length === 0) {
      opts.log(`none of the ${failing.length} failing test(s) is quarantined${source}`);
      return;
    }
    const lines = muted.map((m) => `  muted: ${describeTest(m)}${m.quarantine.reason ? ` (quarantined: ${m.quarantine.reason})` : ''}`);
    const rest = unmuted.length > 0 ? `; ${unmuted.length} other failure(s) are not quarantined and still fail the build` : '';
    opts.log(`${muted.length} of ${failing.length} failing test(s) are quarantined and will be muted under \`flakehouse run\`${rest}${source}:\n${lines.join('\n')}`);
  } catch (err) {
    opts.log(`warning: cannot tell which failures are quarantined: ${(err as Error).message}`);
  }
}

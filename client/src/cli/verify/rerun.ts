// One re-run of one test under `flakehouse run --verify-new` / `--verify-fix`: the command (a
// runner adapter's or the `--rerun` template's), run with a hand-off directory of its own, and its
// results read the way the wrapped command's are — the reporters' hand-off, or the --junit files
// it (re)wrote. A JUnit file counts only if the re-run changed it: the file of the run before is
// still there, and on a file system with second-resolution times "written since the start" would
// take it for this one's.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionInput } from '../../contract/batch.js';
import { executionFingerprint } from '../../contract/mute.js';
import { expandReportPatterns } from '../../reporter/expand-patterns.js';
import { junitFilesToRun } from '../../reporter/junit-to-run.js';
import { readHandedOffRuns, RUN_HANDOFF_ENV } from '../../reporter/run-handoff.js';
import { runCommand } from '../run/command.js';

export interface RerunContext {
  cwd: string;
  rootDir: string;
  env: NodeJS.ProcessEnv;
  junit: readonly string[];
}

export interface RerunResult {
  exitCode: number;
  /** The re-run's executions of the test asked for (others its filter also ran are left out). */
  attempts: ExecutionInput[];
  /** Every execution it produced (for the message when none is the test's). */
  produced: number;
}

function stamp(file: string): string | undefined {
  const st = fs.statSync(file, { throwIfNoEntry: false });
  return st ? `${st.mtimeMs}:${st.size}:${st.ino}` : undefined;
}

export async function rerunTest(argv: readonly string[], fingerprint: string, ctx: RerunContext): Promise<RerunResult> {
  const before = new Map<string, string | undefined>();
  if (ctx.junit.length > 0) for (const f of expandReportPatterns(ctx.junit, ctx.cwd).files) before.set(f, stamp(f));
  const handoffDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flakehouse-rerun-'));
  try {
    const command = await runCommand(argv, { cwd: ctx.cwd, env: { ...ctx.env, [RUN_HANDOFF_ENV]: handoffDir } });
    const executions: ExecutionInput[] = [];
    for (const r of readHandedOffRuns(handoffDir).runs) executions.push(...r.executions);
    if (ctx.junit.length > 0) {
      const changed = expandReportPatterns(ctx.junit, ctx.cwd).files.filter((f) => !before.has(f) || before.get(f) !== stamp(f));
      const { run } = junitFilesToRun(changed, { cwd: ctx.cwd, now: Date.now(), rootDir: ctx.rootDir });
      if (run) executions.push(...run.executions);
    }
    const attempts = executions.filter((e) => executionFingerprint(e) === fingerprint);
    // Attempts in the order they ran (a runner's retries keep their own order).
    attempts.sort((a, b) => a.attempt - b.attempt || a.startedAt - b.startedAt);
    return { exitCode: command.exitCode, attempts, produced: executions.length };
  } finally {
    fs.rmSync(handoffDir, { recursive: true, force: true });
  }
}

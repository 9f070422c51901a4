// What the wrapped command of `flakehouse run` left behind: the runs its reporters handed over
// (client/src/reporter/run-handoff.ts; the directory is new for this command, so they are its own) and
// the JUnit XML files matched by --junit that were written while it ran (an older file is a
// previous run's and is left out, with a warning). Both together make one run.
import fs from 'node:fs';
import type { ExecutionInput } from '../../contract/batch.js';
import { expandReportPatterns } from '../../reporter/expand-patterns.js';
import { junitFilesToRun } from '../../reporter/junit-to-run.js';
import { readHandedOffRuns } from '../../reporter/run-handoff.js';
import type { ReporterRun } from '../../reporter/types.js';

export interface CollectOptions {
  cwd: string;
  rootDir: string;
  /** --junit patterns (files, directories, globs). */
  junit: readonly string[];
  /** The reporters' hand-off directory for this command. */
  handoffDir: string;
  /** When the command started: files modified before it are stale. */
  startedAt: number;
  log: (line: string) => void;
}

export interface CollectedResults {
  /** Undefined when the command left no results. */
  run: ReporterRun | undefined;
  /** Where they came from, for the summary line (`2 reporter run(s)`, `reports/a.xml`…). */
  sources: string[];
}

/**
 * Modified at or after the start, on the start's whole second: a file system that keeps times
 * to the second (FAT, some network mounts) still counts a report written in the same second.
 */
export function writtenSince(mtimeMs: number, startedAt: number): boolean {
  return mtimeMs >= Math.floor(startedAt / 1000) * 1000;
}

export function collectResults(o: CollectOptions): CollectedResults {
  const parts: ReporterRun[] = [];
  const sources: string[] = [];
  const handed = readHandedOffRuns(o.handoffDir);
  for (const p of handed.problems) o.log(`warning: skipped a reporter hand-off file: ${p}`);
  for (const r of handed.runs) if (r.executions.length > 0) parts.push(r);
  if (parts.length > 0) sources.push(`${parts.length} reporter run(s)`);

  if (o.junit.length > 0) {
    const { files, unmatched } = expandReportPatterns(o.junit, o.cwd);
    for (const p of unmatched) o.log(`warning: --junit ${JSON.stringify(p)} matched no file`);
    const fresh: string[] = [];
    for (const f of files) {
      const st = fs.statSync(f, { throwIfNoEntry: false });
      if (st && writtenSince(st.mtimeMs, o.startedAt)) fresh.push(f);
      else o.log(`warning: ${f} was not written by this command (modified ${st ? new Date(st.mtimeMs).toISOString() : 'never'}, before it started): left out`);
    }
    const { run, files: reports } = junitFilesToRun(fresh, { cwd: o.cwd, now: Date.now(), rootDir: o.rootDir });
    for (const r of reports) if (r.problem !== undefined) o.log(`skipped ${r.file}: ${r.problem}`);
    if (run) {
      parts.push(run);
      sources.push(...reports.filter((r) => r.problem === undefined).map((r) => r.file));
    }
  }
  return { run: mergeRuns(parts, o.rootDir), sources };
}

/** One run of several: executions concatenated (retry links re-based), the earliest start, the latest end. */
export function mergeRuns(parts: readonly ReporterRun[], rootDir: string): ReporterRun | undefined {
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  const executions: ExecutionInput[] = [];
  let startedAt = Number.POSITIVE_INFINITY;
  let finishedAt = Number.NEGATIVE_INFINITY;
  for (const p of parts) {
    const offset = executions.length;
    for (const e of p.executions) executions.push(e.retryOfIndex === undefined ? e : { ...e, retryOfIndex: e.retryOfIndex + offset });
    startedAt = Math.min(startedAt, p.startedAt);
    finishedAt = Math.max(finishedAt, p.finishedAt ?? p.startedAt);
  }
  return { executions, startedAt, finishedAt, rootDir: parts[0]!.rootDir ?? rootDir };
}

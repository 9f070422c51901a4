// `flakehouse report <files or globs…>`: finds the JUnit XML reports and turns them into one run
// with the server's own parser (client/src/contract/junit/parse.ts), so a report reads the same whether
// it is posted as XML or sent by the reporter. A report that cannot be used is explained, never fatal.
import fs from 'node:fs';
import path from 'node:path';
import { parseJUnit } from '../contract/junit/parse.js';
import type { ExecutionInput } from '../contract/batch.js';
import type { ReporterRun } from './types.js';

export interface ReportFile {
  /** As shown to the user: relative to cwd when below it. */
  file: string;
  /** Executions taken from it; 0 when it was skipped. */
  executions: number;
  /** Why it was skipped (invalid XML with line/column, no test cases, unreadable). */
  problem?: string;
}

export interface JUnitRunResult {
  /** Undefined when no report had a test case. */
  run: ReporterRun | undefined;
  files: ReportFile[];
}

/** Parses every report and concatenates the executions into one run (retry indices re-based). */
export function junitFilesToRun(files: readonly string[], opts: { cwd: string; now: number; rootDir?: string }): JUnitRunResult {
  const executions: ExecutionInput[] = [];
  const reports: ReportFile[] = [];
  let startedAt = Number.POSITIVE_INFINITY;
  let finishedAt = Number.NEGATIVE_INFINITY;
  for (const file of files) {
    const shown = displayPath(file, opts.cwd);
    let xml: string;
    try {
      xml = fs.readFileSync(file, 'utf8');
    } catch (err) {
      reports.push({ file: shown, executions: 0, problem: `cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})` });
      continue;
    }
    const parsed = parseJUnit(xml, { now: opts.now });
    if (!parsed.ok) {
      const problem =
        parsed.error === 'empty_report'
          ? 'no test cases in this report'
          : parsed.error === 'invalid_value'
            ? `a value cannot be true: ${parsed.message}`
            : `not valid JUnit XML: ${parsed.message}`;
      reports.push({ file: shown, executions: 0, problem });
      continue;
    }
    const offset = executions.length;
    for (const e of parsed.executions) {
      executions.push(e.retryOfIndex === undefined ? e : { ...e, retryOfIndex: e.retryOfIndex + offset });
    }
    startedAt = Math.min(startedAt, parsed.startedAt);
    finishedAt = Math.max(finishedAt, parsed.finishedAt);
    reports.push({ file: shown, executions: parsed.executions.length });
  }
  if (executions.length === 0) return { run: undefined, files: reports };
  return { run: { executions, startedAt, finishedAt, rootDir: opts.rootDir ?? opts.cwd }, files: reports };
}

function displayPath(file: string, cwd: string): string {
  const rel = path.relative(cwd, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

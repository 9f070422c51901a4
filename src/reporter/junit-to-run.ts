// `flakehouse report <files or globs…>`: finds the JUnit XML reports and turns them into one run
// with the server's own parser (src/receivers/junit/parse.ts), so a report reads the same whether
// it is posted as XML or sent by the reporter. A report that cannot be used is explained, never fatal.
import fs from 'node:fs';
import path from 'node:path';
import { picomatch } from '../domain/ignore-globs.js';
import { parseJUnit } from '../receivers/junit/parse.js';
import type { ExecutionInput } from '../domain/batch.js';
import type { ReporterRun } from './send.js';

export interface ReportFile {
  /** As shown to the user: relative to cwd when below it. */
  file: string;
  /** Executions taken from it; 0 when it was skipped. */
  executions: number;
  /** Why it was skipped (invalid XML with line/column, no test cases, unreadable). */
  problem?: string;
}

export interface ExpandedPatterns {
  files: string[];
  /** Arguments that matched no file. */
  unmatched: string[];
}

const GLOB_CHARS = /[*?[\]{}()!+@]/;
/** Directories a `**` never descends into unless the pattern names them. */
const PRUNED_DIRS = new Set(['node_modules', '.git']);
/** Upper bound on files one invocation reads: a runaway `**` should not read a whole disk. */
const MAX_FILES = 10_000;

/**
 * Expands file arguments: a file as is, a directory as every `*.xml` below it, a glob relative to
 * cwd (picomatch syntax; `**` spans directories). Results are absolute, sorted and unique.
 */
export function expandReportPatterns(patterns: readonly string[], cwd: string): ExpandedPatterns {
  const found = new Set<string>();
  const unmatched: string[] = [];
  for (const pattern of patterns) {
    const before = found.size;
    const abs = path.resolve(cwd, pattern);
    const stat = fs.statSync(abs, { throwIfNoEntry: false });
    if (stat?.isFile()) found.add(abs);
    else if (stat?.isDirectory()) walk(abs, (rel) => rel.toLowerCase().endsWith('.xml'), found, '');
    else if (GLOB_CHARS.test(pattern)) expandGlob(pattern, cwd, found);
    if (found.size === before) unmatched.push(pattern);
  }
  return { files: [...found].sort(), unmatched };
}

function expandGlob(pattern: string, cwd: string, out: Set<string>): void {
  const posix = pattern.replace(/\\/g, '/');
  const segments = posix.split('/');
  // The literal leading directories are where the walk starts.
  let i = 0;
  while (i < segments.length - 1 && !GLOB_CHARS.test(segments[i]!)) i++;
  const baseRel = segments.slice(0, i).join('/');
  const base = path.resolve(cwd, baseRel === '' && posix.startsWith('/') ? '/' : baseRel || '.');
  const rest = segments.slice(i).join('/');
  const isMatch = picomatch(rest, { dot: false });
  if (!fs.statSync(base, { throwIfNoEntry: false })?.isDirectory()) return;
  walk(base, isMatch, out, rest);
}

function walk(dir: string, isMatch: (rel: string) => boolean, out: Set<string>, pattern: string): void {
  const stack: [string, string][] = [[dir, '']];
  while (stack.length > 0 && out.size < MAX_FILES) {
    const [abs, rel] = stack.pop()!;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(abs, { withFileTypes: true });
    } catch {
      continue; // unreadable directory: nothing to report from it
    }
    for (const e of entries) {
      const childRel = rel === '' ? e.name : `${rel}/${e.name}`;
      const childAbs = path.join(abs, e.name);
      if (e.isDirectory()) {
        if (PRUNED_DIRS.has(e.name) && !pattern.includes(e.name)) continue;
        stack.push([childAbs, childRel]);
      } else if (e.isFile() && isMatch(childRel)) {
        out.add(childAbs);
      }
    }
  }
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
      const problem = parsed.error === 'empty_report' ? 'no test cases in this report' : `not valid JUnit XML: ${parsed.message}`;
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

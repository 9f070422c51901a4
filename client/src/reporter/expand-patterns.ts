// Report file arguments to absolute paths: a file as is, a directory as its `*.xml`, a glob walked
// from its literal leading directories. Shared by `flakehouse report` and artifact attachment.
import fs from 'node:fs';
import path from 'node:path';
import { picomatch } from '../contract/ignore-globs.js';

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

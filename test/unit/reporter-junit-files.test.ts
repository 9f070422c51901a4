// Report arguments → files (files, directories, globs) and files → one run with re-based retries.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandReportPatterns } from '../../client/src/reporter/expand-patterns.js';
import { junitFilesToRun } from '../../client/src/reporter/junit-to-run.js';

let dir: string;
const SUREFIRE = path.resolve(import.meta.dirname, '../fixtures/junit/mikepenz/maven_surefire_flaky__surefire-report.xml');

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fh-junit-files-'));
  const files: Record<string, string> = {
    'a/TEST-one.xml': fs.readFileSync(SUREFIRE, 'utf8'),
    'a/b/TEST-two.xml': fs.readFileSync(SUREFIRE, 'utf8'),
    'a/b/notes.txt': 'not a report',
    'node_modules/pkg/junit.xml': '<testsuite/>',
    'top.xml': '<testsuite name="s"><testcase name="t" classname="c"/></testsuite>',
    'bad.xml': '<testsuite><testcase name="t">',
    'empty.xml': '<testsuites/>',
  };
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const abs = (...rels: string[]): string[] => rels.map((r) => path.join(dir, r)).sort();

describe('expandReportPatterns', () => {
  it('files, directories (every .xml below) and globs; unmatched arguments are reported', () => {
    expect(expandReportPatterns(['top.xml'], dir)).toEqual({ files: abs('top.xml'), unmatched: [] });
    expect(expandReportPatterns(['a'], dir).files).toEqual(abs('a/TEST-one.xml', 'a/b/TEST-two.xml'));
    expect(expandReportPatterns(['a/**/TEST-*.xml', 'top.xml', 'a/TEST-one.xml'], dir).files).toEqual(abs('a/TEST-one.xml', 'a/b/TEST-two.xml', 'top.xml'));
    expect(expandReportPatterns(['*.xml'], dir).files).toEqual(abs('bad.xml', 'empty.xml', 'top.xml'));
    expect(expandReportPatterns(['missing.xml', 'nope/**/*.xml'], dir)).toEqual({ files: [], unmatched: ['missing.xml', 'nope/**/*.xml'] });
  });

  it('a ** glob skips node_modules unless the pattern names it', () => {
    expect(expandReportPatterns(['**/*.xml'], dir).files).not.toContain(path.join(dir, 'node_modules/pkg/junit.xml'));
    expect(expandReportPatterns(['node_modules/**/*.xml'], dir).files).toEqual(abs('node_modules/pkg/junit.xml'));
  });
});

describe('junitFilesToRun', () => {
  it('concatenates reports, re-bases retry indices, and explains the unusable ones', () => {
    const { run, files } = junitFilesToRun(abs('a/TEST-one.xml', 'a/b/TEST-two.xml', 'bad.xml', 'empty.xml'), { cwd: dir, now: 0 });
    expect(files.map((f) => [f.file, f.executions, f.problem?.split(':')[0]])).toEqual([
      ['a/TEST-one.xml', 2, undefined],
      ['a/b/TEST-two.xml', 2, undefined],
      ['bad.xml', 0, 'not valid JUnit XML'],
      ['empty.xml', 0, 'no test cases in this report'],
    ]);
    expect(run!.executions.map((e) => [e.status, e.attempt, e.retryOfIndex])).toEqual([
      ['fail', 1, undefined],
      ['flaky', 2, 0],
      ['fail', 1, undefined],
      ['flaky', 2, 2],
    ]);
    expect(run!.rootDir).toBe(dir);
  });

  it('no run when nothing had a test case', () => {
    expect(junitFilesToRun(abs('empty.xml'), { cwd: dir, now: 0 }).run).toBeUndefined();
  });
});

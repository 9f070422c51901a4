// Which test a JUnit <testcase> is, per producer (client/src/contract/junit-names.ts), on reports written by
// the real tools (test/fixtures/junit/vitest/, jest/: the sample project test/fixtures/runners/junit-sample/
// run with Vitest 3.2.7 and 4.1.12, Playwright 1.65.1, and Jest 30.5.2 + jest-junit 17.0.0). Each must name the
// tests as the runner's reporter does: the file, the describe blocks joined with " > ", the title.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { junitTestNames, looksLikeFilePath } from '../../client/src/contract/junit-names.js';
import { parseJUnit } from '../../client/src/contract/junit/parse.js';

const FIXTURES = path.join(import.meta.dirname, '../fixtures/junit');

function names(file: string): [string, string, string][] {
  const parsed = parseJUnit(readFileSync(path.join(FIXTURES, file), 'utf8'), { now: Date.parse('2026-11-29T00:00:00Z') });
  if (!parsed.ok) throw new Error(parsed.message);
  const seen = new Set<string>();
  const out: [string, string, string][] = [];
  for (const e of parsed.executions) {
    const key = `${e.filePath}|${e.suite}|${e.title}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push([e.filePath, e.suite, e.title]);
  }
  return out.sort((a, b) => a.join('|').localeCompare(b.join('|')));
}

/** The sample's tests as the reporters name them (file relative to the project root). */
const AS_THE_REPORTER_NAMES_THEM = (ext: string): [string, string, string][] =>
  (
    [
      [`src/math.spec.${ext}`, '', 'works outside a describe'],
      [`src/math.spec.${ext}`, 'math', 'adds'],
      [`src/math.spec.${ext}`, 'math', 'handles imaginary numbers'],
      [`src/math.spec.${ext}`, 'math > division', 'divides'],
      [`src/math.spec.${ext}`, 'math > division', 'refuses zero'],
      [`src/math.spec.${ext}`, 'math > division', 'rounds on retry'],
      [`src/math/vector.spec.${ext}`, 'vector', 'has a length'],
    ] as [string, string, string][]
  ).sort((a, b) => a.join('|').localeCompare(b.join('|')));

describe('JUnit producers’ conventions', () => {
  it.each(['vitest/vitest-3.2.7.xml', 'vitest/vitest-4.1.12.xml'])('Vitest’s --reporter=junit (%s): file from classname, suite and title from the name', (file) => {
    expect(names(file)).toEqual(AS_THE_REPORTER_NAMES_THEM('ts'));
  });

  it('Playwright’s junit reporter (testDir the project root): file from classname, describe blocks and title from the name split at " › "', () => {
    expect(names('playwright/playwright-1.65.1.xml')).toEqual(AS_THE_REPORTER_NAMES_THEM('ts'));
  });

  it('jest-junit with the options the README gives: file attribute, classname the describe blocks (empty outside one), name the title', () => {
    expect(names('jest/jest-30.5.2-jest-junit-17.0.0-configured.xml')).toEqual(AS_THE_REPORTER_NAMES_THEM('cjs'));
  });

  it('jest-junit with its defaults names no file: read as before (the describe blocks and title joined by blanks)', () => {
    expect(names('jest/jest-30.5.2-jest-junit-17.0.0-defaults.xml')).toContainEqual(['math division divides', 'math division divides', 'math division divides']);
  });

  it('keeps Java and Python classnames as they were read: the suite, and with dots made slashes the file', () => {
    const base = { reportName: '', suiteName: 'com.acme.CartTest', suiteFile: '', file: undefined };
    expect(junitTestNames({ ...base, classname: 'com.acme.CartTest', name: 'addsItem' })).toEqual({ filePath: 'com/acme/CartTest', suite: 'com.acme.CartTest', title: 'addsItem' });
    expect(junitTestNames({ ...base, classname: 'tests.test_cart.TestCart', name: 'test_adds' })).toEqual({ filePath: 'tests/test_cart/TestCart', suite: 'tests.test_cart.TestCart', title: 'test_adds' });
    // A classname that is a path is never dotted into one (src/math.test.ts used to become src/math/test/ts).
    expect(junitTestNames({ ...base, suiteName: 'unit', classname: 'src/math.test.ts', name: 'adds' })).toEqual({ filePath: 'src/math.test.ts', suite: 'src/math.test.ts', title: 'adds' });
    expect(junitTestNames({ ...base, classname: undefined, name: '' })).toEqual({ filePath: 'com.acme.CartTest', suite: 'com.acme.CartTest', title: '(unnamed)' });
  });

  it('tells paths from dotted class names', () => {
    for (const p of ['src/math.test.ts', 'math.spec.mjs', 'a\\b.test.js', 'App.vue']) expect(looksLikeFilePath(p), p).toBe(true);
    for (const c of ['com.acme.CartTest', 'tests.test_cart.TestCart', 'CartTest', 'math division']) expect(looksLikeFilePath(c), c).toBe(false);
  });
});

// Legacy JUnit twins (client/src/contract/junit-names.ts legacyJUnitTwins): for every testcase of the real
// reports in test/fixtures/junit/ (Vitest 3.2.7 and 4.1.12, Playwright 1.65.1, jest-junit 17.0.0),
// the names the JUnit receiver gave it before the fix (the reading of commit 7290b75^, restated here)
// are among the twins of the names it gives now, whenever the two differ.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLegacyJUnitTwin, junitTestNames, legacyJUnitTwins, type JUnitCaseNames, type JUnitTestNames } from '../../client/src/contract/junit-names.js';

const FIXTURES = path.join(import.meta.dirname, '../fixtures/junit');
const REPORTS = ['vitest/vitest-3.2.7.xml', 'vitest/vitest-4.1.12.xml', 'playwright/playwright-1.65.1.xml', 'jest/jest-30.5.2-jest-junit-17.0.0-configured.xml'];

const unescape = (s: string): string => s.replaceAll('&gt;', '>').replaceAll('&lt;', '<').replaceAll('&quot;', '"').replaceAll('&apos;', "'").replaceAll('&amp;', '&');
const attr = (tag: string, name: string): string | undefined => {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? unescape(m[1]!).trim() : undefined;
};

/** Each <testcase> of a report with what encloses it (these reports nest one <testsuite> level). */
function cases(file: string): JUnitCaseNames[] {
  const xml = readFileSync(path.join(FIXTURES, file), 'utf8');
  const reportName = attr(/<testsuites\b[^>]*>/.exec(xml)?.[0] ?? '', 'name') ?? '';
  const out: JUnitCaseNames[] = [];
  let suite = '';
  for (const m of xml.matchAll(/<(testsuite|testcase)\b[^>]*>/g)) {
    if (m[1] === 'testsuite') suite = m[0];
    else out.push({ reportName, suiteName: attr(suite, 'name') ?? '', suiteFile: attr(suite, 'file') ?? '', classname: attr(m[0], 'classname'), name: attr(m[0], 'name') ?? '', file: attr(m[0], 'file') || undefined });
  }
  return out;
}

/** The JUnit receiver's reading before the fix (client/src/contract/junit/parse.ts at 7290b75^). */
function oldReading(c: JUnitCaseNames): JUnitTestNames {
  const classname = c.classname ?? '';
  return { filePath: c.file || c.suiteFile || (classname ? classname.replaceAll('.', '/') : c.suiteName), suite: classname || c.suiteName, title: c.name || '(unnamed)' };
}

describe('legacyJUnitTwins', () => {
  for (const report of REPORTS) {
    it(`finds the pre-fix names of every testcase of ${report}`, () => {
      const all = cases(report);
      expect(all.length).toBeGreaterThan(5);
      let differing = 0;
      for (const c of all) {
        const now = junitTestNames(c);
        const before = oldReading(c);
        if (before.filePath === now.filePath && before.suite === now.suite && before.title === now.title) continue;
        differing++;
        expect(legacyJUnitTwins(now), `${report}: ${c.name}`).toContainEqual(before);
        expect(isLegacyJUnitTwin(before, now)).toBe(true);
      }
      expect(differing).toBeGreaterThan(0);
    });
  }

  it('Vitest: file dotted, the file as suite, the describe blocks in the title', () => {
    expect(legacyJUnitTwins({ filePath: 'src/math.test.ts', suite: 'math > division', title: 'divides' })).toContainEqual({ filePath: 'src/math/test/ts', suite: 'src/math.test.ts', title: 'math > division > divides' });
    expect(isLegacyJUnitTwin({ filePath: 'SRC/Math/Test/TS', suite: 'src/math.test.ts', title: 'math > division > divides' }, { filePath: 'src/math.test.ts', suite: 'math > division', title: 'divides' })).toBe(true);
  });

  it('has none for a Java or Python test, or a file that is no path', () => {
    expect(legacyJUnitTwins({ filePath: 'com/acme/CartTest', suite: 'com.acme.CartTest', title: 'addsItem' })).toEqual([]);
    expect(legacyJUnitTwins({ filePath: 'CartTest', suite: 'CartTest', title: 'addsItem' })).toEqual([]);
    expect(isLegacyJUnitTwin({ filePath: 'src/cart/test/ts', suite: 'src/cart.test.ts', title: 'x' }, { filePath: 'src/math.test.ts', suite: '', title: 'x' })).toBe(false);
  });
});

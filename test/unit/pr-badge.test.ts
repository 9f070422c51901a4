// Pure parts of badges and the PR comment: what a variant says, escaping of names people chose,
// the sticky comment's pagination rule, and the comment's row cap.
import sax from 'sax';
import { describe, expect, it } from 'vitest';
import { matchesEtag } from '../../src/api/routes/badge.js';
import { nextLink } from '../../client/src/cli/pr.js';
import { commentMarkdown } from '../../client/src/contract/pr-markdown.js';
import type { SummaryBody } from '../../client/src/contract/pr-schemas.js';
import { badgeFor, badgeSvg, parseBadgeFile, type BadgeFacts } from '../../client/src/contract/badge.js';

const none: BadgeFacts = { passRate: null, flaky: 0, quarantined: 0, worst: null };

function wellFormed(xml: string): string {
  const parser = sax.parser(true);
  let text = '';
  parser.ontext = (t) => (text += t);
  parser.onerror = (e) => {
    throw e;
  };
  parser.write(xml).close();
  return text;
}

describe('badges', () => {
  it('parses only the four variants in .svg or .json', () => {
    expect(parseBadgeFile('flakes.svg')).toEqual({ variant: 'flakes', format: 'svg' });
    expect(parseBadgeFile('worst.json')).toEqual({ variant: 'worst', format: 'json' });
    for (const bad of ['flakes', 'flakes.png', 'coverage.svg', '../flakes.svg', 'FLAKES.svg', 'flakes.svg.json']) expect(parseBadgeFile(bad)).toBeNull();
  });

  it('says what each variant means, coloured by severity', () => {
    expect(badgeFor('flakes', none)).toEqual({ label: 'flaky tests', message: 'none', color: 'brightgreen' });
    expect(badgeFor('flakes', { ...none, flaky: 12 }).color).toBe('red');
    expect(badgeFor('health', none)).toMatchObject({ message: 'no runs', color: 'lightgrey' });
    // Never rounds up to 100% while something fails.
    expect(badgeFor('health', { ...none, passRate: 0.99996 })).toMatchObject({ message: '99.9% passing', color: 'brightgreen' });
    expect(badgeFor('health', { ...none, passRate: 1 }).message).toBe('100% passing');
    expect(badgeFor('health', { ...none, passRate: 0.5 }).color).toBe('red');
    expect(badgeFor('worst', { ...none, worst: { suite: 'cart', title: 'x'.repeat(100), score: 0.85 } })).toMatchObject({
      message: `cart › ${'x'.repeat(40)}… (0.85)`,
      color: 'orange',
    });
  });

  it('escapes test names in the SVG: it stays well-formed and carries no markup of theirs', () => {
    const svg = badgeSvg(badgeFor('worst', { ...none, worst: { suite: '', title: '<script>alert("x")</script> & co', score: 0.95 } }));
    expect(svg).not.toContain('<script>');
    expect(wellFormed(svg)).toContain('<script>alert("x")</script> & co (0.95)');
  });

  it('matches If-None-Match lists, weak tags and *', () => {
    expect(matchesEtag('"a"', '"a"')).toBe(true);
    expect(matchesEtag('"b", W/"a"', '"a"')).toBe(true);
    expect(matchesEtag('*', '"a"')).toBe(true);
    expect(matchesEtag('"b"', '"a"')).toBe(false);
    expect(matchesEtag(undefined, '"a"')).toBe(false);
  });
});

describe('sticky comment', () => {
  it("follows rel=next only on the API's own origin (the token travels with it)", () => {
    const api = 'https://api.github.com';
    expect(nextLink('<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last"', api)).toBe('https://api.github.com/x?page=2');
    expect(nextLink('<https://evil.example/x?page=2>; rel="next"', api)).toBeNull();
    expect(nextLink('<https://api.github.com/x?page=1>; rel="prev"', api)).toBeNull();
    expect(nextLink(null, api)).toBeNull();
  });

  it('escapes names into table cells and caps the rows', () => {
    const tests: SummaryBody['tests'] = Array.from({ length: 60 }, (_, i) => ({
      testIdentityId: `id-${i}`,
      filePath: 'src/a.test.ts',
      suite: 'a|b',
      title: `t${i} <b>`,
      status: 'fail',
      errorMessage: 'boom | `x`',
      score: 0,
      quarantined: false,
      topReason: null,
      topReasonCode: null,
      state: 'healthy',
      stateSince: null,
      flakeRate: 0,
      knownFlake: false,
    }));
    const md = commentMarkdown({ summary: { commitSha: 'a'.repeat(40), branch: 'f', prNumber: 1, runStatus: 'failed', complete: true, failed: 60, flaky: 0, totalTests: 80, tests }, gate: null });
    expect(md.startsWith('<!-- service:pr-comment -->\n<!-- flakemetry:pr-comment -->\n### ❌ Flakehouse: 60 new failures of 80 tests')).toBe(true);
    const rows = md.split('\n').filter((l) => l.startsWith('| a\\|b › t'));
    expect(rows).toHaveLength(50);
    expect(rows[0]).toBe('| a\\|b › t0 &lt;b&gt; | `src/a.test.ts` | `boom \\| ˋxˋ` |');
    expect(md).toContain('_…and 10 more._');
  });
});

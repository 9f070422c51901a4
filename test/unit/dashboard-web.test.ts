// The dashboard front end's pure pieces (web/src/lib, reasons, format): the URL ↔ page mapping that
// every deep link the daemon emits must land on, the board's URL ↔ procedure input, its CSV, the
// settings patch, sign-in's `next`, a sentence for every score reason code, and the words for a
// test's state, its health log and the gate's classifications.
import { describe, expect, it } from 'vitest';
import { deepLink, type Notification } from '../../src/domain/notifications.js';
import { CLASSIFICATIONS } from '../../client/src/contract/gate.js';
import { HEALTH_EVENT_KINDS } from '../../src/domain/processor-outputs.js';
import { REASON_CODES, TEST_STATES } from '../../src/domain/score.js';
import { PAGE_SIZE, boardCsv, boardInput, type BoardRow } from '../../web/src/lib/board.js';
import { CLASSIFICATION_TEXT } from '../../web/src/lib/gate.js';
import { EVENT_TEXT, STATE_TEXT, eventText, flakeShare, heldByPerson, showsSince, sinceSha } from '../../web/src/lib/state.js';
import { patchFor } from '../../web/src/lib/settings.js';
import { isServerPath, pageOf, projectPath, safeNext, withQuery } from '../../web/src/lib/url.js';
import { REASON_TEXT, reasonText } from '../../web/src/reasons.js';
import { pct, shortSha, when } from '../../web/src/ui/format.js';

const TEST_ID = '6d1fb428-527e-8a15-be20-96712e0643e0';

function notification(data: Record<string, unknown>): Notification {
  return { type: data.type, projectId: 'p', eventId: 'e', occurredAt: 0, dedupeKey: 'k', data } as unknown as Notification;
}

describe('dashboard URLs', () => {
  it('every deep link the notifications emit opens a dashboard page, with its parameters', () => {
    const ctx = { projectSlug: 'shop web', dashboardUrl: 'https://flakes.example.com' };
    const test = { testId: TEST_ID, filePath: 'a.ts', suite: 's', title: 't' };
    const links = [
      deepLink(notification({ type: 'flaky_detected', test, score: 0.9, reasons: [] }), ctx),
      deepLink(notification({ type: 'quarantine_changed', test, quarantined: true, source: 'auto' }), ctx),
      deepLink(notification({ type: 'rca_ready', test, summary: 'x' }), ctx),
      deepLink(notification({ type: 'rca_ready', test: null }), ctx),
      deepLink(notification({ type: 'suite_regressed', suite: 'cart & checkout', day: '2026-11-24' }), ctx),
      deepLink(notification({ type: 'ai_budget_spent' }), ctx),
    ];
    const pages = links.map((l) => {
      const url = new URL(l!);
      return { ...pageOf(url.pathname), query: Object.fromEntries(url.searchParams) };
    });
    expect(pages).toEqual([
      { page: 'test', params: { slug: 'shop web', testIdentityId: TEST_ID }, query: {} },
      { page: 'test', params: { slug: 'shop web', testIdentityId: TEST_ID }, query: {} },
      { page: 'test', params: { slug: 'shop web', testIdentityId: TEST_ID }, query: {} },
      { page: 'board', params: { slug: 'shop web' }, query: {} },
      { page: 'suites', params: { slug: 'shop web' }, query: { suite: 'cart & checkout', day: '2026-11-24' } },
      { page: 'settings', params: { slug: 'shop web' }, query: {} },
    ]);
  });

  it('maps the issue-14 paths to their pages and nothing else', () => {
    expect(pageOf('/')?.page).toBe('home');
    expect(pageOf('/projects/a/runs/')?.page).toBe('runs');
    expect(pageOf('/projects/a/pulls/42')).toEqual({ page: 'pull', params: { slug: 'a', prNumber: '42' } });
    expect(pageOf('/projects/a/commits/3f2c1ab')).toEqual({ page: 'commit', params: { slug: 'a', sha: '3f2c1ab' } });
    expect(pageOf('/projects/a/executions/x')?.page).toBe('execution');
    expect(pageOf('/projects//flaky')).toBeNull();
    expect(pageOf('/projects/a/tests')).toBeNull();
    expect(pageOf('/projects/%E0%A4%A/flaky')).toBeNull(); // malformed escape: no page, no throw
    expect(projectPath('shop web', 'tests', 'a/b')).toBe('/projects/shop%20web/tests/a%2Fb');
  });

  it('leaves the API paths to the daemon', () => {
    for (const p of ['/v1/export', '/trpc/flaky.board', '/badge/x/health.svg', '/health', '/metrics', '/openapi.json', '/clickhouse']) expect(isServerPath(p), p).toBe(true);
    for (const p of ['/', '/projects/a/health', '/healthy', '/v1x', '/signin']) expect(isServerPath(p), p).toBe(false);
  });

  it('sets and removes query parameters, keeping the others', () => {
    const loc = { path: '/projects/a/flaky', query: new URLSearchParams('owner=%40team&page=2') };
    expect(withQuery(loc, { page: null, sort: 'title' })).toBe('/projects/a/flaky?owner=%40team&sort=title');
    expect(withQuery(loc, { owner: '', page: undefined })).toBe('/projects/a/flaky');
  });

  it('sends people after sign-in only to a path of this site', () => {
    expect(safeNext('/projects/a/tests/x?y=1')).toBe('/projects/a/tests/x?y=1');
    for (const bad of [null, '', 'https://evil.example/', '//evil.example/x', '/\\evil.example', 'javascript:alert(1)', '/signin?next=/x']) expect(safeNext(bad), String(bad)).toBe('/');
  });
});

describe('flaky board', () => {
  it('turns the URL filters into the procedure input, dropping what the procedure would refuse', () => {
    expect(boardInput(new URLSearchParams('state=broken'), 0)).toEqual({ limit: PAGE_SIZE, offset: 0, state: 'broken' });
    // No state (or an unknown one): what needs attention; state=all: every test.
    expect(boardInput(new URLSearchParams('state=sideways'), 0)).toEqual({ limit: PAGE_SIZE, offset: 0, attention: true });
    expect(boardInput(new URLSearchParams(''), 0)).toEqual({ limit: PAGE_SIZE, offset: 0, attention: true });
    expect(boardInput(new URLSearchParams('state=all'), 0)).toEqual({ limit: PAGE_SIZE, offset: 0 });
    // Branch: the default one, a named one; range: its days (an unknown one is dropped).
    expect(boardInput(new URLSearchParams('state=all&branch=%40default&range=14d'), 0)).toEqual({ limit: PAGE_SIZE, offset: 0, defaultBranch: true, days: 14 });
    expect(boardInput(new URLSearchParams('state=all&branch=feature%2Fx&range=5y'), 0)).toEqual({ limit: PAGE_SIZE, offset: 0, branch: 'feature/x' });
    expect(boardInput(new URLSearchParams('owner=%40shop%2Fpayments&suite=+cart+&file=src&minScore=0.5&quarantined=true&sort=flipRate'), 2)).toEqual({
      limit: PAGE_SIZE,
      offset: 2 * PAGE_SIZE,
      attention: true,
      owner: '@shop/payments',
      suite: 'cart',
      file: 'src',
      minScore: 0.5,
      quarantined: true,
      sort: 'flipRate',
    });
    expect(boardInput(new URLSearchParams('minScore=abc&quarantined=maybe&sort=random&owner=+&state=all'), 0, 500)).toEqual({ limit: 500, offset: 0 });
  });

  const row: BoardRow = {
    testIdentityId: TEST_ID,
    filePath: 'src/a.test.ts',
    suite: 'cart',
    title: '=HYPERLINK("http://evil")',
    score: 0.9,
    flipRate: 0.25,
    passOnRerunRate: 1,
    trend: 'rising',
    lastFlakedAt: null,
    quarantineCandidate: true,
    quarantined: false,
    owners: ['@a', '@b'],
    state: 'flaky',
    stateSince: { commitSha: '1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d', branch: 'main', at: '2026-11-20T08:00:00.000Z' },
    flakeRate: 0.125,
    recentRuns: { runs: 10, failed: 4 },
    impact: { failuresCaused: 3, prsBlocked: 2, minutesLost: 3.2, cost: 1.6, currency: 'EUR' },
  };

  it('writes a CSV a spreadsheet opens as data: quoted cells, owners joined, formulas defused, the state flattened', () => {
    const [header, line, end] = boardCsv([row]).split('\r\n');
    expect(header).toBe(
      'testIdentityId,title,suite,filePath,score,trend,passOnRerunRate,flipRate,owners,lastFlakedAt,quarantined,quarantineCandidate,state,stateSinceCommit,stateSinceBranch,stateSinceAt,flakeRate,failuresCaused,prsBlocked,ciMinutesLost,cost,currency,recentRuns,recentRunsFailed',
    );
    expect(line).toBe(
      `"${TEST_ID}","'=HYPERLINK(""http://evil"")","cart","src/a.test.ts","0.9","rising","1","0.25","@a @b","","false","true","flaky","1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d","main","2026-11-20T08:00:00.000Z","0.125","3","2","3.2","1.6","EUR","10","4"`,
    );
    expect(end).toBe('');
    const sneaky = boardCsv([{ ...row, title: '@SUM(A1:A9)', suite: '+1', owners: ['@x(1)'] }]).split('\r\n')[1]!;
    expect(sneaky).toContain(`"'@SUM(A1:A9)","'+1"`);
    expect(sneaky).toContain(`"'@x(1)"`);
    // A healthy test has no since: its three cells are empty, not "null".
    const healthy = boardCsv([{ ...row, state: 'healthy', stateSince: null, flakeRate: 0, recentRuns: { runs: 3, failed: 0 }, quarantineCandidate: false, impact: undefined }]).split('\r\n')[1]!;
    expect(healthy.endsWith(`"false","healthy","","","","0","","","","","","3","0"`)).toBe(true);
  });
});

describe('test states', () => {
  it('names the commit only for a broken or fixed test, abbreviated as git does', () => {
    expect(TEST_STATES.filter(showsSince)).toEqual(['broken', 'fixed']);
    expect(sinceSha('ed3d460f1e2d3c4b5a69788796a5b4c3d2e1f0a9')).toBe('ed3d460');
    expect(sinceSha('1a2b3c4')).toBe('1a2b3c4');
  });

  it('says "held by a person" only for a broken test a person quarantined', () => {
    expect(heldByPerson({ state: 'broken', quarantineOverride: 'quarantined' })).toBe(true);
    expect(heldByPerson({ state: 'broken', quarantineOverride: null })).toBe(false);
    expect(heldByPerson({ state: 'broken', quarantineOverride: 'released' })).toBe(false);
    expect(heldByPerson({ state: 'flaky', quarantineOverride: 'quarantined' })).toBe(false);
  });

  it('reads a flake rate as a share, never a rare flake as 0%', () => {
    expect(flakeShare(0.125)).toBe('13%');
    expect(flakeShare(0.004)).toBe('0.4%');
    expect(flakeShare(0)).toBe('0%');
    expect(flakeShare(1)).toBe('100%');
  });

  it('has words for every state, health log kind and gate classification the server knows', () => {
    expect(Object.keys(STATE_TEXT).sort()).toEqual([...TEST_STATES].sort());
    for (const s of TEST_STATES) expect(STATE_TEXT[s], s).toMatch(/^[A-Z].{10,}\.$/);
    expect(Object.keys(EVENT_TEXT).sort()).toEqual([...HEALTH_EVENT_KINDS].sort());
    expect(Object.keys(CLASSIFICATION_TEXT).sort()).toEqual([...CLASSIFICATIONS].sort());
    // The old model's "stabilized" was a score dip, not a fix: the log must not call it fixed.
    expect(eventText('stabilized')).not.toMatch(/^fixed/);
    expect(eventText('stabilized')).toContain('not a proven fix');
    expect(eventText('broke')).toMatch(/^broke/);
    expect(eventText('someday_kind')).toBe('someday_kind');
  });
});

describe('settings', () => {
  it('turns a dotted policy key into the nested PATCH document', () => {
    expect(patchFor('flaky.threshold', 0.7)).toEqual({ flaky: { threshold: 0.7 } });
    expect(patchFor('ignore', null)).toEqual({ ignore: null });
  });
});

describe('words', () => {
  it('explains every score reason code in a sentence', () => {
    for (const code of REASON_CODES) expect(REASON_TEXT[code], code).toMatch(/^[A-Z].{20,}\.$/);
    expect(Object.keys(REASON_TEXT).sort()).toEqual([...REASON_CODES].sort());
    expect(reasonText('NOT_A_CODE')).toContain('does not describe');
  });

  it('formats shares, commits and times', () => {
    expect(pct(0.1234, 1)).toBe('12.3%');
    expect(pct(null)).toBe('–');
    expect(shortSha('3f2c1ab9d0e1f2a3b4c5')).toBe('3f2c1ab9d0');
    expect(when('2026-11-24T10:05:33.120Z')).toBe('2026-11-24 10:05 UTC');
  });
});

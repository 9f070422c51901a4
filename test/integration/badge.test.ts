// README badges against the real daemon: public routes whose only credential is the badge token
// in the path, shields.io JSON and SVG drawn from the project's scores, ETag revalidation, and a
// rotation that turns the old URLs into the grey "unknown" badge at once.
import { randomBytes } from 'node:crypto';
import { parseSvg } from '../helpers/svg.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const HOUR = 3_600_000;

describe('badges', () => {
  let td: TestDaemon;
  let badgeToken: string;

  /** Anonymous GET: badges must work without any Authorization header. */
  async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string }> {
    const res = await fetch(`${td.url}${path}`, { headers });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  async function json(token: string, file: string): Promise<any> {
    const res = await get(`/badge/${token}/${file}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    return JSON.parse(res.text);
  }

  beforeAll(async () => {
    td = await startTestDaemon();
    // Five runs on main: `flappy` passes four times, then fails and passes on its retry (score 0.90,
    // a candidate); `steady` always passes; `locked` fails once, then is quarantined by hand.
    const start = Date.now() - 6 * HOUR;
    const batches = Array.from({ length: 5 }, (_, i) => {
      const at = start + i * HOUR;
      const last = i === 4;
      const executions = [
        { filePath: 'src/badge.test.ts', suite: 'badge', title: 'steady', status: 'pass', startedAt: at, durationMs: 5 },
        { filePath: 'src/badge.test.ts', suite: 'badge', title: 'locked', status: i === 0 ? 'fail' : 'pass', startedAt: at + 1, durationMs: 5, ...(i === 0 ? { error: { message: 'boom' } } : {}) },
        { filePath: 'src/badge.test.ts', suite: 'badge', title: 'flappy', status: last ? 'fail' : 'pass', startedAt: at + 2, durationMs: 5, ...(last ? { error: { message: 'timeout' } } : {}) },
        ...(last ? [{ filePath: 'src/badge.test.ts', suite: 'badge', title: 'flappy', status: 'pass', attempt: 2, retryOfIndex: 2, startedAt: at + 3, durationMs: 5 }] : []),
      ];
      return nativeBatch({
        resource: { commitSha: randomBytes(20).toString('hex'), branch: 'main', trigger: 'push' },
        run: { status: i === 0 ? 'failed' : 'passed', startedAt: new Date(at).toISOString() },
        executions,
      });
    });
    const [first] = await td.ingest(...batches);
    expect(first).toBeTruthy();
    const runs = await td.request('GET', '/v1/runs?limit=100');
    const oldest = runs.json.items[runs.json.items.length - 1];
    const detail = await td.request('GET', `/v1/runs/${oldest.id}`);
    const locked = detail.json.executions.find((e: any) => e.title === 'locked');
    const q = await td.request('POST', `/v1/tests/${locked.testIdentityId}/quarantine`, { body: { decision: 'quarantined', reason: 'timing' } });
    expect(q.status).toBe(200);
  });
  afterAll(async () => td?.close());

  it('GET /v1/badges gives a project token its badge token and paths', async () => {
    expect((await td.request('GET', '/v1/badges', { token: null })).status).toBe(401);
    const res = await td.request('GET', '/v1/badges');
    expect(res.status).toBe(200);
    expect(res.json.project).toBe('default');
    badgeToken = res.json.badgeToken;
    expect(badgeToken).toMatch(/^[0-9a-f]{32}$/);
    expect(res.json.publicApiUrl).toBeNull();
    expect(res.json.badges.map((b: any) => b.variant)).toEqual(['health', 'flakes', 'quarantined', 'worst']);
    expect(res.json.badges[1]).toEqual({ variant: 'flakes', label: 'flaky tests', svg: `/badge/${badgeToken}/flakes.svg`, json: `/badge/${badgeToken}/flakes.json` });
  });

  it('serves shields.io endpoint JSON for each variant from the current scores', async () => {
    expect(await json(badgeToken, 'flakes.json')).toEqual({ schemaVersion: 1, label: 'flaky tests', message: '1', color: 'yellow', cacheSeconds: 300 });
    // The hand-quarantined test is counted there, and never as flaky.
    expect(await json(badgeToken, 'quarantined.json')).toMatchObject({ label: 'quarantined tests', message: '1', color: 'yellow' });
    const worst = await json(badgeToken, 'worst.json');
    expect(worst).toMatchObject({ label: 'flakiest test', color: 'red' });
    expect(worst.message).toMatch(/^badge › flappy \(0\.9\d\)$/);
    // 16 executions in the last 7 days (15 runs × tests + one retry), one failed each for locked and flappy.
    expect(await json(badgeToken, 'health.json')).toMatchObject({ label: 'test health', message: '87.5% passing', color: 'orange' });
  });

  it('draws a well-formed SVG badge, public and cacheable, embeddable from other sites', async () => {
    const res = await get(`/badge/${badgeToken}/flakes.svg`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const svg = parseSvg(res.text);
    expect(svg.root).toBe('svg');
    expect(svg.text).toContain('flaky tests: 1');
    expect(res.text).toContain('fill="#dfb317"'); // yellow, as in the JSON

    const worst = await get(`/badge/${badgeToken}/worst.svg`);
    expect(parseSvg(worst.text).text).toContain('badge › flappy');
  });

  it('answers 304 to If-None-Match with its ETag, 200 to any other', async () => {
    const first = await get(`/badge/${badgeToken}/health.svg`);
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await get(`/badge/${badgeToken}/health.svg`, { 'if-none-match': etag! });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('cache-control')).toBe('public, max-age=300');
    // A list, and the weak form a proxy may send, match too.
    expect((await get(`/badge/${badgeToken}/health.svg`, { 'if-none-match': `"other", W/${etag!}` })).status).toBe(304);
    const stale = await get(`/badge/${badgeToken}/health.svg`, { 'if-none-match': '"stale"' });
    expect(stale.status).toBe(200);
    expect(stale.text).toBe(first.text);
    // Each variant and format has its own tag.
    const asJson = await get(`/badge/${badgeToken}/health.json`, { 'if-none-match': etag! });
    expect(asJson.status).toBe(200);
    expect(asJson.headers.get('etag')).not.toBe(etag);
  });

  it('shows a grey "unknown" badge for an unknown token and 404s an unknown variant', async () => {
    for (const token of [randomBytes(16).toString('hex'), 'not-a-token']) {
      expect(await json(token, 'flakes.json')).toMatchObject({ schemaVersion: 1, message: 'unknown', color: 'lightgrey' });
      const svg = await get(`/badge/${token}/flakes.svg`);
      expect(svg.status).toBe(200);
      expect(svg.headers.get('cache-control')).toBe('no-cache');
      expect(parseSvg(svg.text).text).toContain('unknown');
    }
    for (const file of ['coverage.svg', 'flakes.png', 'flakes', 'flakes.svg.json']) {
      const res = await get(`/badge/${badgeToken}/${file}`);
      expect(res.status).toBe(404);
      expect(JSON.parse(res.text)).toMatchObject({ error: 'not_found', message: expect.stringContaining('health.svg') });
    }
  });

  it('rotates the badge token through the admin API: the old URLs go grey at once', async () => {
    const url = '/v1/admin/projects/default/badge-token';
    expect((await td.request('POST', url, { token: null })).status).toBe(401);
    expect((await td.request('POST', url)).status).toBe(401); // a project token is not the admin token
    const missing = await td.request('POST', '/v1/admin/projects/nope/badge-token', { token: td.adminToken });
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ error: 'not_found' });

    // The old token was just served (and cached): rotation must still refuse it at once.
    expect((await json(badgeToken, 'flakes.json')).message).toBe('1');
    const rotated = await td.request('POST', url, { token: td.adminToken });
    expect(rotated.status).toBe(200);
    const fresh = rotated.json.badgeToken as string;
    expect(rotated.json.project).toBe('default');
    expect(fresh).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh).not.toBe(badgeToken);

    expect(await json(badgeToken, 'flakes.json')).toMatchObject({ message: 'unknown', color: 'lightgrey' });
    expect(await json(fresh, 'flakes.json')).toMatchObject({ label: 'flaky tests', message: '1' });
    expect((await td.request('GET', '/v1/badges')).json.badgeToken).toBe(fresh);
    // Projects keep working otherwise: the slug still resolves, tokens still authenticate.
    expect((await td.request('GET', '/v1/runs?limit=1')).status).toBe(200);
    expect((await td.request('GET', '/v1/admin/projects', { token: td.adminToken })).json.items.map((p: any) => p.slug)).toEqual(['default']);
  });
});

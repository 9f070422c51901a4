// Sign-in, sign-out, revocation and CSRF, in the browser: the token is exchanged for an HttpOnly
// SameSite=Strict cookie and never kept by the page; a cookie-authenticated mutation needs the
// session's CSRF token and the page's own origin; a revoked token ends its sessions.
import { afterAll, describe, expect, it } from 'vitest';
import { checkPage, newContext, projectUrl, rest, signedIn, world } from './helpers/world.js';
import { watchedPage } from './helpers/browser.js';
import { BROKEN } from './helpers/seed.js';

describe('sign-in and sessions', () => {
  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of closers) await c();
  });

  it('a signed-out visit to a deep link goes to /signin and, once signed in, back to the link', async () => {
    const context = await newContext();
    closers.push(() => context.close());
    const p = await watchedPage(context);
    const target = projectUrl('tests', world().seed.testIds[BROKEN.title]!);
    const first = await p.page.goto(target);
    // The daemon answers a dashboard path with the app and security headers on it.
    expect(first!.status()).toBe(200);
    const headers = first!.headers();
    expect(headers['content-security-policy']).toContain("script-src 'self'");
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(headers['x-content-type-options']).toBe('nosniff');
    expect(headers['x-frame-options']).toBe('DENY');
    await p.page.waitForURL((u) => u.pathname === '/signin');
    expect(new URL(p.page.url()).searchParams.get('next')).toBe(target);

    // A wrong token: an error in words, no cookie.
    await p.page.getByLabel('Token').fill('fh_not-a-real-token');
    await p.page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => p.page.getByRole('alert').count()).toBeGreaterThan(0);
    expect(await context.cookies()).toEqual([]);
    await checkPage({ ...p, problems: p.problems.filter((m) => !/401/.test(m) || !m.includes('/v1/session')) }, 'signin');

    await p.page.getByLabel('Token').fill(world().token);
    await p.page.getByRole('button', { name: 'Sign in' }).click();
    await p.page.waitForURL((u) => u.pathname === target);
    await expect.poll(() => p.page.getByRole('heading', { level: 1 }).textContent()).toBe(BROKEN.title);

    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: 'flakehouse_session', httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie!.value).not.toContain(world().token);
    // The page holds no token: nothing in storage, and the cookie is out of script's reach.
    const stored = await p.page.evaluate(() => {
      const g = globalThis as unknown as { localStorage: { length: number }; sessionStorage: { length: number }; document: { cookie: string } };
      return { local: g.localStorage.length, session: g.sessionStorage.length, cookie: g.document.cookie };
    });
    expect(stored).toEqual({ local: 0, session: 0, cookie: '' });
  });

  it('a signed-out visit logs no console error: the session probe answers 204, not 401', async () => {
    const context = await newContext();
    closers.push(() => context.close());
    const { url } = world();
    for (const entry of [`${url}/signin`, projectUrl('flaky'), `${url}/`]) {
      const p = await watchedPage(context);
      const probes: number[] = [];
      p.page.on('response', (res) => {
        if (new URL(res.url()).pathname === '/v1/session') probes.push(res.status());
      });
      await p.page.goto(entry);
      await p.page.waitForURL((u) => u.pathname === '/signin');
      await p.page.getByLabel('Token').waitFor();
      await p.page.waitForLoadState('networkidle');
      expect(probes, entry).toEqual([204]);
      expect(p.problems, `${entry}: console errors, exceptions or failed requests`).toEqual([]);
      await p.page.close();
    }
  });

  it('refuses a cookie-authenticated mutation without the CSRF token or from another origin (403 csrf_failed)', async () => {
    const s = await signedIn();
    closers.push(() => s.close());
    const { url, seed } = world();
    const input = { testIdentityId: seed.testIds['logs in']!, reason: 'csrf probe' };
    const post = (headers: Record<string, string>) => s.context.request.post(`${url}/trpc/test.quarantine`, { data: input, headers: { 'content-type': 'application/json', ...headers } });

    const missing = await post({ origin: url });
    expect(missing.status()).toBe(403);
    expect(JSON.stringify(await missing.json())).toContain('csrf_failed');
    const wrongToken = await post({ origin: url, 'x-csrf-token': 'not-the-token' });
    expect(wrongToken.status()).toBe(403);
    const otherOrigin = await post({ origin: 'http://evil.example', 'x-csrf-token': s.csrfToken });
    expect(otherOrigin.status()).toBe(403);
    const del = await s.context.request.delete(`${url}/v1/session`, { headers: { origin: url } });
    expect(del.status()).toBe(403);
    // None of them changed anything.
    const t = await rest('GET', `/v1/tests/${input.testIdentityId}`);
    expect(t.json.quarantined).toBe(false);

    // With the header the same call goes through: the refusals above were the CSRF check's.
    const ok = await post({ origin: url, 'x-csrf-token': s.csrfToken });
    expect(ok.status()).toBe(200);
    expect((await rest('GET', `/v1/tests/${input.testIdentityId}`)).json.quarantined).toBe(true);
    const back = await s.context.request.post(`${url}/trpc/test.release`, { data: input, headers: { 'content-type': 'application/json', origin: url, 'x-csrf-token': s.csrfToken } });
    expect(back.status()).toBe(200);
    expect((await rest('GET', `/v1/tests/${input.testIdentityId}`)).json.quarantined).toBe(false);

    // A bearer caller (CI) is not a cookie session: no CSRF header needed.
    const bearer = await rest('POST', '/trpc/test.quarantine', { body: { ...input, reason: 'bearer' } });
    expect(bearer.status).toBe(200);
    expect((await rest('POST', '/trpc/test.release', { body: { ...input, reason: 'bearer' } })).status).toBe(200);
  });

  it('signs out from the header: the session ends on the server and pages go back to /signin', async () => {
    const s = await signedIn();
    closers.push(() => s.close());
    await s.page.goto(projectUrl('flaky'));
    await s.page.locator('table.board tbody tr').first().waitFor();
    await s.page.getByRole('button', { name: 'Sign out' }).click();
    await s.page.waitForURL((u) => u.pathname === '/signin');
    expect((await s.context.request.get(`${world().url}/v1/session`)).status()).toBe(401);
    expect(await s.context.cookies()).toEqual([]);
    await s.page.goto(projectUrl('runs'));
    await s.page.waitForURL((u) => u.pathname === '/signin');
    expect(s.problems.filter((m) => !m.includes('401'))).toEqual([]);
  });

  it('a revoked token ends its sessions: the next request is a 401 and the page asks to sign in', async () => {
    const { adminToken, projectSlug, url } = world();
    const created = await rest('POST', `/v1/admin/projects/${projectSlug}/tokens`, { token: adminToken, body: { scopes: ['read'] } });
    expect(created.status).toBe(201);
    const s = await signedIn(created.json.token);
    closers.push(() => s.close());
    await s.page.goto(projectUrl('runs'));
    await s.page.locator('table tbody tr').first().waitFor();
    expect((await s.context.request.get(`${url}/v1/session`)).status()).toBe(200);

    expect((await rest('DELETE', `/v1/admin/tokens/${created.json.id}`, { token: adminToken })).status).toBeLessThan(300);
    expect((await s.context.request.get(`${url}/v1/session`)).status()).toBe(401);
    await s.page.reload();
    await s.page.waitForURL((u) => u.pathname === '/signin');
  });
});

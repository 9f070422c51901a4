// Dashboard sign-in against the real daemon: a pasted token becomes a server-side session in an
// HttpOnly SameSite=Strict cookie; cookie-authenticated mutations need the CSRF header and a
// same-origin Origin; sign-out, token revocation and expiry each end the session (401).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createProject } from '../helpers/route-examples.js';

const T0 = Date.parse('2026-11-10T08:00:00Z');
const TTL_HOURS = 2;

interface Answer {
  status: number;
  headers: Headers;
  json: any;
}

/** A browser's view: one cookie jar, the Origin a page of this server sends. */
class Browser {
  cookie: string | null = null;
  csrf = '';
  constructor(private readonly base: string) {}

  async call(method: string, path: string, o: { body?: unknown; headers?: Record<string, string>; csrf?: boolean } = {}): Promise<Answer> {
    const headers: Record<string, string> = { origin: this.base, ...o.headers };
    if (this.cookie) headers.cookie = this.cookie;
    if (o.csrf) headers['x-csrf-token'] = this.csrf;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${this.base}${path}`, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
    const set = res.headers.get('set-cookie');
    if (set) {
      const value = /^flakehouse_session=([^;]*)/.exec(set)?.[1] ?? '';
      this.cookie = value === '' ? null : `flakehouse_session=${value}`;
    }
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
  }

  async signIn(token: string): Promise<Answer> {
    const res = await this.call('POST', '/v1/session', { body: { token } });
    if (res.status === 200) this.csrf = res.json.csrfToken;
    return res;
  }

  query(name: string, input?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const q = input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`;
    return this.call('GET', `/trpc/${name}${q}`, { headers });
  }

  mutate(name: string, input: unknown, o: { csrf?: boolean; headers?: Record<string, string> } = { csrf: true }): Promise<Answer> {
    return this.call('POST', `/trpc/${name}`, { body: input, ...o });
  }
}

describe('dashboard sessions', () => {
  let td: TestDaemon;
  let clockOffset = 0;
  let testId: string;

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_DASHBOARD_SESSION_TTL_HOURS: String(TTL_HOURS) }, sessionClock: () => Date.now() + clockOffset });
    await td.ingest({
      contractVersion: '0.1.0',
      idempotencyKey: 'session-run-1',
      resource: { ciProvider: 'github_actions', commitSha: 'abc0001', branch: 'main', trigger: 'push' },
      run: { status: 'failed', startedAt: T0 },
      executions: [{ filePath: 'src/a.test.ts', suite: 'a', title: 'flips', status: 'fail', startedAt: T0, durationMs: 5, error: { message: 'boom' } }],
    });
    const run = (await td.request('GET', '/v1/runs')).json.items[0];
    testId = (await td.request('GET', `/v1/runs/${run.id}`)).json.executions[0].testIdentityId;
  }, 120_000);

  afterAll(async () => td?.close());

  it('signs in with a project token: an HttpOnly, SameSite=Strict session cookie holding a random id, not the token', async () => {
    const b = new Browser(td.url);
    const res = await b.signIn(td.token);
    expect(res.status).toBe(200);
    expect(res.json.principal).toMatchObject({ kind: 'project', projectSlug: 'default', scopes: ['ingest', 'read', 'quarantine', 'sql'] });
    expect(res.json.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(res.json.expiresAt) - Date.now()).toBeGreaterThan(TTL_HOURS * 3_600_000 - 60_000);
    const cookie = res.headers.get('set-cookie')!;
    const attrs = cookie.split(';').map((s) => s.trim());
    expect(attrs[0]).toMatch(/^flakehouse_session=[A-Za-z0-9_-]{43}$/);
    expect(attrs).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Path=/', `Max-Age=${TTL_HOURS * 3600}`]));
    // Plain http here: no Secure (a browser would drop the cookie on http).
    expect(attrs).not.toContain('Secure');
    expect(cookie).not.toContain(td.token);
    // Behind a proxy that ended TLS (it says so, and the browser's origin is https): Secure, and the origin is ours.
    const proxied = new Browser(td.url);
    const viaProxy = await proxied.call('POST', '/v1/session', { body: { token: td.token }, headers: { 'x-forwarded-proto': 'https', origin: td.url.replace('http:', 'https:') } });
    expect(viaProxy.status).toBe(200);
    expect(viaProxy.headers.get('set-cookie')!.split(';').map((s) => s.trim())).toContain('Secure');

    // A reloaded page learns who it is and its CSRF token again.
    const again = await b.call('GET', '/v1/session');
    expect(again.status).toBe(200);
    expect(again.json.csrfToken).toBe(b.csrf);
    const me = await b.query('session.me');
    expect(me.json.result.data).toMatchObject({ via: 'session', principal: { kind: 'project', projectSlug: 'default' } });
    // Reads work with the cookie alone, and give what REST gives the token.
    const runs = await b.query('runs.list', {});
    expect(runs.json.result.data).toEqual((await td.request('GET', '/v1/runs')).json);
  });

  it('refuses a bad token with the catalogue 401, and sets no cookie', async () => {
    const b = new Browser(td.url);
    for (const token of ['fh_' + '0'.repeat(48), 'not-a-token']) {
      const res = await b.signIn(token);
      expect(res.status).toBe(401);
      expect(res.json).toMatchObject({ error: 'unauthorized' });
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    const invalid = await b.call('POST', '/v1/session', { body: { secret: 'x' } });
    expect(invalid.status).toBe(400);
    expect(invalid.json.issues[0].path).toBe('token');
    expect((await b.call('GET', '/v1/session')).status).toBe(401);
    expect((await b.query('runs.list', {})).status).toBe(401);
    // Another site cannot sign this browser in, even with a good token (login CSRF).
    const crossSite = await b.call('POST', '/v1/session', { body: { token: td.token }, headers: { origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect(crossSite.json.error).toBe('csrf_failed');
    expect(crossSite.headers.get('set-cookie')).toBeNull();
  });

  it('GET /v1/session?optional=true: 204 without a session (what the dashboard asks), the session when there is one', async () => {
    const b = new Browser(td.url);
    const none = await b.call('GET', '/v1/session?optional=true');
    expect(none.status).toBe(204);
    expect(none.json).toBeUndefined();
    expect(none.headers.get('set-cookie')).toBeNull();
    // Without the parameter the answer is still 401, as before.
    expect((await b.call('GET', '/v1/session')).status).toBe(401);
    expect((await b.call('GET', '/v1/session?optional=false')).status).toBe(401);
    expect((await b.call('GET', '/v1/session?optional=yes')).status).toBe(400);

    await b.signIn(td.token);
    const signedIn = await b.call('GET', '/v1/session?optional=true');
    expect(signedIn.status).toBe(200);
    expect(signedIn.json).toMatchObject({ csrfToken: b.csrf, principal: { kind: 'project', projectSlug: 'default' } });
    // A cookie whose session ended is no session either.
    const oldCookie = b.cookie!;
    expect((await b.call('DELETE', '/v1/session', { csrf: true })).status).toBe(204);
    b.cookie = oldCookie;
    expect((await b.call('GET', '/v1/session?optional=true')).status).toBe(204);
  });

  it('needs the CSRF header and a same-origin Origin on cookie mutations; bearer callers need neither', async () => {
    const b = new Browser(td.url);
    await b.signIn(td.token);
    const input = { testIdentityId: testId, reason: 'session test' };

    const missing = await b.mutate('test.quarantine', input, { csrf: false });
    expect(missing.status).toBe(403);
    expect(missing.json.error.data).toMatchObject({ httpStatus: 403, error: 'csrf_failed' });
    const wrong = await b.mutate('test.quarantine', input, { headers: { 'x-csrf-token': 'x'.repeat(43) } });
    expect(wrong.json.error.data.error).toBe('csrf_failed');
    const crossSite = await b.mutate('test.quarantine', input, { csrf: true, headers: { origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect(crossSite.json.error.data.error).toBe('csrf_failed');
    // Nothing changed.
    expect((await td.request('GET', `/v1/tests/${testId}`)).json.quarantined).toBe(false);

    const ok = await b.mutate('test.quarantine', input);
    expect(ok.status).toBe(200);
    expect(ok.json.result.data).toEqual({ quarantined: true, override: 'quarantined', changed: true });
    expect((await td.request('GET', `/v1/tests/${testId}`)).json).toMatchObject({ quarantined: true, quarantineReason: 'session test' });
    // The log shows the decision with its reason.
    const log = await b.query('test.quarantineLog', { testIdentityId: testId });
    expect(log.json.result.data).toMatchObject({ quarantined: true, decision: { override: 'quarantined', reason: 'session test' } });
    expect(log.json.result.data.events.map((e: { kind: string }) => e.kind)).toContain('quarantined');

    // A script with the bearer token: no cookie, no CSRF token, no Origin.
    const res = await fetch(`${td.url}/trpc/test.release`, {
      method: 'POST',
      headers: { authorization: `Bearer ${td.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ testIdentityId: testId, reason: 'by script' }),
    });
    expect(res.status).toBe(200);
    expect((await td.request('GET', `/v1/tests/${testId}`)).json.quarantined).toBe(false);
  });

  it('keeps a project session in its project: another project named in x-flakehouse-project is 403', async () => {
    const other = await createProject(td, 'session-other', [['read']]);
    const b = new Browser(td.url);
    await b.signIn(td.token);
    expect((await b.query('runs.list', {}, { 'x-flakehouse-project': 'default' })).status).toBe(200);
    const res = await b.query('runs.list', {}, { 'x-flakehouse-project': 'session-other' });
    expect(res.status).toBe(403);
    // And that project's own session sees its own (empty) runs, not ours.
    const o = new Browser(td.url);
    await o.signIn(other.tokens[0]!);
    expect((await o.query('runs.list', {})).json.result.data).toEqual({ items: [], nextCursor: null });
  });

  it('signs the admin in: every project, picked with x-flakehouse-project; admin-only procedures refuse project sessions', async () => {
    const admin = new Browser(td.url);
    const res = await admin.signIn(td.adminToken);
    expect(res.status).toBe(200);
    expect(res.json.principal).toMatchObject({ kind: 'admin' });
    const projects = await admin.query('projects.list');
    expect(projects.json.result.data.items.map((p: { slug: string }) => p.slug)).toContain('default');
    const noProject = await admin.query('runs.list', {});
    expect(noProject.status).toBe(400);
    expect(noProject.json.error.data.error).toBe('project_required');
    const runs = await admin.query('runs.list', {}, { 'x-flakehouse-project': 'default' });
    expect(runs.json.result.data).toEqual((await td.request('GET', '/v1/runs')).json);
    expect((await admin.query('runs.list', {}, { 'x-flakehouse-project': 'no-such-project' })).status).toBe(404);

    const project = new Browser(td.url);
    await project.signIn(td.token);
    const refused = await project.query('projects.list');
    expect(refused.status).toBe(403);
    expect(refused.json.error.data.error).toBe('admin_required');
  });

  it('signs out: DELETE needs the CSRF header, then clears the cookie, and the old cookie is refused', async () => {
    const b = new Browser(td.url);
    await b.signIn(td.token);
    const oldCookie = b.cookie!;
    expect((await b.call('DELETE', '/v1/session')).status).toBe(403);
    const out = await b.call('DELETE', '/v1/session', { csrf: true });
    expect(out.status).toBe(204);
    const cleared = out.headers.get('set-cookie')!;
    expect(cleared).toMatch(/^flakehouse_session=;/);
    expect(cleared).toContain('Max-Age=0');
    b.cookie = oldCookie; // a stolen copy of the cookie is worth nothing now
    expect((await b.call('GET', '/v1/session')).status).toBe(401);
    expect((await b.query('runs.list', {})).status).toBe(401);
  });

  it('ends the session at the next request once its token is revoked', async () => {
    const created = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    const b = new Browser(td.url);
    await b.signIn(created.json.token);
    expect((await b.query('runs.list', {})).status).toBe(200);
    expect((await td.request('DELETE', `/v1/admin/tokens/${created.json.id}`, { token: td.adminToken })).status).toBe(200);
    const after = await b.query('runs.list', {});
    expect(after.status).toBe(401);
    expect(after.json.error.data.error).toBe('unauthorized');
    expect((await b.call('GET', '/v1/session')).status).toBe(401);
  });

  it('ends the session at its expiry (the session clock moved past the TTL)', async () => {
    const b = new Browser(td.url);
    await b.signIn(td.token);
    clockOffset = TTL_HOURS * 3_600_000 - 1_000;
    expect((await b.query('runs.list', {})).status).toBe(200);
    clockOffset = TTL_HOURS * 3_600_000 + 1_000;
    try {
      expect((await b.query('runs.list', {})).status).toBe(401);
      expect((await b.call('GET', '/v1/session')).status).toBe(401);
    } finally {
      clockOffset = 0;
    }
    // Signing in again works.
    expect((await b.signIn(td.token)).status).toBe(200);
    expect((await b.query('runs.list', {})).status).toBe(200);
  });

  it('lets a session download the export as a plain link (GET, cookie only); other REST routes still want the bearer token', async () => {
    const b = new Browser(td.url);
    await b.signIn(td.token);
    const res = await fetch(`${td.url}/v1/export`, { headers: { cookie: b.cookie! } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('gzip');
    await res.arrayBuffer();
    expect((await b.call('GET', '/v1/runs')).status).toBe(401);
    // The admin's session names the project in the link.
    const admin = new Browser(td.url);
    await admin.signIn(td.adminToken);
    expect((await fetch(`${td.url}/v1/export`, { headers: { cookie: admin.cookie! } })).status).toBe(400);
    const theirs = await fetch(`${td.url}/v1/export?project=default`, { headers: { cookie: admin.cookie! } });
    expect(theirs.status).toBe(200);
    await theirs.arrayBuffer();
  });
});

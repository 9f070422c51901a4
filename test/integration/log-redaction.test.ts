// A whole daemon's log, grepped for every credential it issued or was sent: tokens go in every
// place a client can put them (Bearer header, ?token= and other URL parameters, basic auth,
// ?password= and X-ClickHouse-Key on /clickhouse, the path, the dashboard's cookie and CSRF
// header), right and wrong, and not one of them may appear in a line. The rule is the logger's
// (src/domain/log-redaction.ts), so the test drives the daemon with its own logger at its most talkative.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/telemetry/logger.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createProject } from '../helpers/route-examples.js';

interface LogEntry {
  msg?: string;
  req?: { url?: string };
}

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('the log of a daemon that was sent credentials every way', () => {
  let td: TestDaemon;
  const lines: string[] = [];
  /** Everything that must not be in the log: token strings, their secret parts, cookie values, encoded credentials. */
  const secrets = new Set<string>();
  // Not our token format: only the names it travels under can hide it.
  const adminToken = `admin-${hex(20)}`;

  function secret(...values: string[]): void {
    for (const v of values) {
      secrets.add(v);
      const body = /^fha?_([0-9a-f]{48})$/.exec(v)?.[1];
      if (body) secrets.add(body);
    }
  }

  async function call(method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<{ status: number; headers: Headers; text: string }> {
    const h: Record<string, string> = { ...headers };
    if (body !== undefined) h['content-type'] = 'application/json';
    const res = await fetch(`${td.url}${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }
  const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        cb();
      },
    });
    td = await startTestDaemon({ logger: createLogger('trace', sink), env: { SERVICE_ADMIN_TOKEN: adminToken } });
    secret(td.token, adminToken);
  }, 60_000);

  afterAll(async () => td?.close());

  it('writes none of them, though every request was logged', async () => {
    const b = await createProject(td, 'logs-b', [['ingest'], ['read'], ['sql'], ['ingest', 'read', 'quarantine', 'sql']]);
    const [ingestToken, readToken, sqlToken, allToken] = b.tokens as [string, string, string, string];
    const c = await createProject(td, 'logs-c', [['read']]);
    const revoked = c.tokens[0]!;
    expect((await call('DELETE', `/v1/admin/tokens/${c.tokenIds[0]!}`, bearer(adminToken))).status).toBe(200);
    const unknown = `fh_${hex(24)}`;
    const malformed = `not-a-token-${hex(12)}`;
    const wrongAdmin = `admin-${hex(20)}`;
    secret(ingestToken, readToken, sqlToken, allToken, revoked, unknown, malformed, wrongAdmin);
    const all = [td.token, ingestToken, readToken, sqlToken, allToken, revoked, unknown, malformed, adminToken, wrongAdmin];

    // Bearer headers, right and wrong, on read, ingest and admin routes.
    const batch = nativeBatch({ key: 'log-redaction-1' });
    for (let i = 0; i < 2; i++) {
      const res = await call('POST', '/v1/ingest', bearer(ingestToken), batch);
      expect(res.status, res.text).toBe(202);
    }
    expect((await call('GET', '/v1/runs', bearer(readToken))).status).toBe(200);
    for (const t of [unknown, malformed, adminToken]) expect((await call('GET', '/v1/runs', bearer(t))).status).toBe(401);
    expect((await call('GET', '/v1/admin/projects', bearer(wrongAdmin))).status).toBe(401);
    expect((await call('GET', '/v1/admin/projects', { authorization: basic('admin', adminToken) })).status).toBe(401);
    const badge = (await call('GET', '/v1/badges', bearer(readToken))).text;
    const badgeToken = (JSON.parse(badge) as { badgeToken: string }).badgeToken;

    // In the URL: ?token= and every other name a credential goes by, plain and percent-encoded.
    for (const t of all) {
      const q = encodeURIComponent(t);
      for (const path of [
        `/v1/runs?token=${q}`,
        `/v1/runs?limit=1&access_token=${q}&branch=main`,
        `/v1/runs?api_key=${q}`,
        `/v1/runs?key=${q}`,
        `/v1/runs?tok%65n=${q}`,
        `/v1/runs?Authorization=${encodeURIComponent(`Bearer ${t}`)}`,
        `/v1/badges?token=${q}`,
        `/badge/${badgeToken}/health.svg?token=${q}`,
        `/trpc/runs.list?token=${q}&input=${encodeURIComponent('{}')}`,
        `/v1/admin/projects?token=${q}`,
        `/nowhere?password=${q}`,
      ]) {
        expect((await call('GET', path)).status, path).toBeLessThan(500);
      }
    }
    // Where no route expects one, in the path, a token is known by its format (ours: `fh_`, `fha_`),
    // and the daemon's own admin token, whatever its form, by its value (registered at start).
    for (const t of [...all.filter((t) => t.startsWith('fh_')), adminToken]) {
      for (const path of [`/v1/runs/${t}`, `/nowhere/${t}/x`, `/v1/tests/${t}?includeHistory=1`]) expect((await call('GET', path, bearer(readToken))).status, path).toBeLessThan(500);
    }

    // /clickhouse: basic auth, X-ClickHouse-Key, Bearer, ?password= (refused), right and wrong.
    const sql = (headers: Record<string, string>, params = '') => call('GET', `/clickhouse?query=${encodeURIComponent('SELECT 1')}&database=${td.database}${params}`, headers);
    expect((await sql({ authorization: basic('logs-b', sqlToken) })).status).toBe(200);
    expect((await sql({ authorization: basic('admin', adminToken) })).status).toBe(200);
    expect((await sql(bearer(sqlToken))).status).toBe(200);
    expect((await sql(bearer(adminToken))).status).toBe(200);
    expect((await sql({ 'x-clickhouse-user': 'logs-b', 'x-clickhouse-key': sqlToken })).status).toBe(200);
    for (const t of [unknown, malformed, readToken, wrongAdmin]) {
      expect((await sql({ authorization: basic('logs-b', t) })).status).toBeGreaterThanOrEqual(400);
      expect((await sql({ authorization: basic('admin', t) })).status).toBe(401);
      expect((await sql({ 'x-clickhouse-user': 'logs-b', 'x-clickhouse-key': t })).status).toBeGreaterThanOrEqual(400);
    }
    for (const t of all) {
      expect((await sql({}, `&user=logs-b&password=${encodeURIComponent(t)}`)).status).toBe(400);
      expect((await sql({}, `&user=admin&password=${encodeURIComponent(t)}`)).status).toBe(400);
      expect((await sql({}, `&token=${encodeURIComponent(t)}`)).status).toBe(401);
    }
    secret(...[sqlToken, adminToken, unknown, malformed, readToken, wrongAdmin].flatMap((t) => [basic('logs-b', t), basic('admin', t)].map((h) => h.slice('Basic '.length))));

    // The dashboard: a token becomes a session cookie and a CSRF token, both credentials too.
    for (const t of [allToken, adminToken]) {
      const signIn = await call('POST', '/v1/session', { origin: td.url }, { token: t });
      expect(signIn.status).toBe(200);
      const cookieValue = /^flakehouse_session=([^;]*)/.exec(signIn.headers.get('set-cookie') ?? '')?.[1] ?? '';
      const csrf = (JSON.parse(signIn.text) as { csrfToken: string }).csrfToken;
      expect(cookieValue).not.toBe('');
      secret(cookieValue, csrf);
      const cookie = { cookie: `flakehouse_session=${cookieValue}`, origin: td.url };
      expect((await call('GET', '/v1/session', cookie)).status).toBe(200);
      expect((await call('GET', `/trpc/session.me?csrf=${csrf}&session=${cookieValue}`, cookie)).status).toBe(200);
      expect((await call('GET', `/trpc/runs.list?input=${encodeURIComponent('{}')}`, cookie)).status).toBeLessThan(500);
      expect((await call('DELETE', '/v1/session', { ...cookie, 'x-csrf-token': 'x'.repeat(43) })).status).toBe(403);
      expect((await call('DELETE', '/v1/session', { ...cookie, 'x-csrf-token': csrf })).status).toBe(204);
      expect((await call('GET', '/v1/session', cookie)).status).toBe(401);
    }
    for (const t of [unknown, malformed, wrongAdmin]) expect((await call('POST', '/v1/session', { origin: td.url }, { token: t })).status).toBe(401);
    const forged = `flakehouse_session=${hex(32)}`;
    secret(forged.slice('flakehouse_session='.length));
    expect((await call('GET', '/v1/session', { cookie: forged })).status).toBe(401);

    // Tokens issued and revoked through the admin API (their answers carry the token once).
    const issued = await call('POST', '/v1/admin/projects/logs-b/tokens', bearer(adminToken), { scopes: ['read'] });
    const fresh = JSON.parse(issued.text) as { id: string; token: string };
    secret(fresh.token);
    expect((await call('DELETE', `/v1/admin/tokens/${fresh.id}`, bearer(adminToken))).status).toBe(200);
    expect((await call('GET', '/v1/runs', bearer(fresh.token))).status).toBe(401);
    await td.settled(20_000);

    // No line holds any credential, nor an Authorization value …
    expect(secrets.size).toBeGreaterThan(30);
    const leaks: string[] = [];
    for (const line of lines) {
      for (const s of secrets) if (line.includes(s)) leaks.push(`${s.slice(0, 12)}… in ${line.slice(0, 300)}`);
      if (/bearer\s+(?!\[redacted\])\S/i.test(line)) leaks.push(`a bearer value in ${line.slice(0, 300)}`);
    }
    expect(leaks).toEqual([]);
    // … though the requests were logged, URL and all.
    const urls = lines.map((l) => JSON.parse(l) as LogEntry).map((e) => e.req?.url).filter((u): u is string => u !== undefined);
    expect(urls).toContain('/v1/runs?token=[redacted]');
    expect(urls).toContain('/v1/runs?limit=1&access_token=[redacted]&branch=main');
    expect(urls).toContain(`/clickhouse?query=SELECT%201&database=${td.database}&user=logs-b&password=[redacted]`);
    expect(urls).toContain(`/badge/${badgeToken}/health.svg?token=[redacted]`);
    expect(urls.some((u) => u.startsWith('/v1/runs/fh_[redacted]'))).toBe(true);
    expect(urls.filter((u) => u.startsWith('/v1/session')).length).toBeGreaterThanOrEqual(8);
  }, 120_000);
});

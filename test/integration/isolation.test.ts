// Isolation and hygiene over every route: each route of the route table (and each procedure) is
// called with project A's ids by every kind of credential of project B — none, malformed, revoked,
// each scope — and must answer 401/403/404 (or B's own data), never A's. Every answer carries the
// security headers of docs/contract.md §5, and no log line holds a token or an authorization header.
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCEDURES } from '../../src/api/trpc.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { PROCEDURES_NAMING_A_RECORD, PROCEDURE_EXAMPLES, ROUTE_EXAMPLES, createProject, examplePath, routeKey, type Fixture } from '../helpers/route-examples.js';

const SECRET = 'isolation-secret';

interface Credential {
  name: string;
  token: string | null;
  /** Scopes in effect (a token with none is ingest-only); null: not a valid token at all. */
  scopes: string[] | null;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

describe('isolation and hygiene on every route', () => {
  let td: TestDaemon;
  const logLines: string[] = [];
  let fixture: Fixture;
  let markers: string[];
  let credentials: Credential[];
  let secrets: string[];
  const answers: { where: string; res: Answer; public: boolean }[] = [];

  async function call(method: string, path: string, token: string | null, body?: unknown, gzip = false): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${td.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const bytes = Buffer.from(await res.arrayBuffer());
    const text = gzip && res.status === 200 ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        cb();
      },
    });
    // The daemon's own logger (src/telemetry/logger.ts, redaction included) at its most talkative level.
    td = await startTestDaemon({ logger: createLogger('trace', sink) });

    // Project A (the bootstrap project `default`): a run with a failure and a retried flake.
    await td.ingest({
      contractVersion: '0.1.0',
      idempotencyKey: 'isolation-a-run-1',
      resource: { ciProvider: 'github_actions', commitSha: 'a1a1a1a1', branch: 'main', trigger: 'push' },
      run: { status: 'failed', startedAt: '2026-11-21T10:00:00Z' },
      executions: [
        { filePath: `src/${SECRET}.test.ts`, suite: `${SECRET}-suite`, title: `${SECRET}-title`, status: 'fail', startedAt: '2026-11-21T10:00:01Z', durationMs: 5, error: { message: `${SECRET}-error` } },
        { filePath: `src/${SECRET}.test.ts`, suite: `${SECRET}-suite`, title: `${SECRET}-title`, status: 'pass', attempt: 2, retryOfIndex: 0, startedAt: '2026-11-21T10:00:02Z', durationMs: 5 },
      ],
    });
    const runs = await call('GET', '/v1/runs', td.token);
    const runId: string = runs.json.items[0].id;
    const detail = await call('GET', `/v1/runs/${runId}`, td.token);
    const extra = await call('POST', '/v1/admin/projects/default/tokens', td.adminToken, { scopes: ['read'] });
    const aBadge = (await call('GET', '/v1/badges', td.token)).json.badgeToken as string;

    // Project B: one token per scope set, and one revoked.
    const b = await createProject(td, 'isolation-b', [[], ['ingest'], ['read'], ['quarantine'], ['ingest', 'read', 'quarantine'], ['read']]);
    expect((await call('DELETE', `/v1/admin/tokens/${b.tokenIds[5]}`, td.adminToken)).status).toBe(200);
    const bBadge = (await call('GET', '/v1/badges', b.tokens[4]!)).json.badgeToken as string;

    fixture = {
      slug: 'default',
      runId,
      executionId: detail.json.executions[0].id,
      testIdentityId: detail.json.executions[0].testIdentityId,
      commitSha: 'a1a1a1a1',
      ownBadgeToken: bBadge,
      tokenId: extra.json.id,
    };
    // What of A must never show in an answer to B (the commit sha is left out: a 404 may echo the query).
    markers = [SECRET, fixture.runId, fixture.executionId, fixture.testIdentityId, td.token, extra.json.token, aBadge];
    credentials = [
      { name: 'no token', token: null, scopes: null },
      { name: 'malformed token', token: 'not-a-token', scopes: null },
      { name: 'revoked token', token: b.tokens[5]!, scopes: null },
      { name: 'token without scopes', token: b.tokens[0]!, scopes: ['ingest'] },
      { name: 'ingest token', token: b.tokens[1]!, scopes: ['ingest'] },
      { name: 'read token', token: b.tokens[2]!, scopes: ['read'] },
      { name: 'quarantine token', token: b.tokens[3]!, scopes: ['quarantine'] },
      { name: 'all-scopes token', token: b.tokens[4]!, scopes: ['ingest', 'read', 'quarantine'] },
    ];
    secrets = [td.token, td.adminToken, extra.json.token, ...b.tokens];
  }, 120_000);

  afterAll(async () => td?.close());

  it("can see project A's data with A's own token (the markers below are real)", async () => {
    expect((await call('GET', `/v1/runs/${fixture.runId}`, td.token)).text).toContain(`${SECRET}-title`);
    expect((await call('GET', `/v1/tests/${fixture.testIdentityId}`, td.token)).text).toContain(fixture.executionId);
    expect((await call('GET', '/v1/flaky?includeQuarantined=true', td.token)).text).toContain(fixture.testIdentityId);
  });

  it("answers every route of the route table to project B's credentials with 401/403/404 or B's own data", async () => {
    const routes = td.daemon.app.routes.routes;
    const missing = routes.map(routeKey).filter((k) => !ROUTE_EXAMPLES[k]);
    expect(missing, 'routes without an example in test/helpers/route-examples.ts').toEqual([]);

    for (const route of routes) {
      for (const cred of credentials) {
        const ex = ROUTE_EXAMPLES[routeKey(route)]!(fixture);
        const res = await call(route.method, examplePath(route.url, ex), cred.token, ex.body, ex.gzip === true);
        const where = `${routeKey(route)} with ${cred.name}: ${res.status} ${res.text.slice(0, 160)}`;
        answers.push({ where, res, public: route.auth.kind === 'none' });
        for (const m of markers) expect(res.text.includes(m), `${where} shows project A's ${m}`).toBe(false);

        if (route.auth.kind === 'none') {
          expect(res.status < 500 || (ex.allow5xx ?? []).includes(res.status), where).toBe(true);
        } else if (route.auth.kind === 'admin' || cred.scopes === null) {
          expect(res.status, where).toBe(401);
          expect(res.json.error, where).toBe('unauthorized');
          expect(res.headers.get('www-authenticate'), where).toBe('Bearer');
        } else if (!route.auth.anyOf.some((s) => cred.scopes!.includes(s))) {
          expect(res.status, where).toBe(403);
          expect(res.json.error, where).toBe('insufficient_scope');
        } else if (route.url.includes('/:')) {
          // Every token route with a path param names one of A's records: unknown to B.
          expect(res.status, where).toBe(404);
          expect(res.json.error, where).toBe('not_found');
        } else {
          expect([401, 403], where).not.toContain(res.status);
          expect(res.status < 500 || (ex.allow5xx ?? []).includes(res.status), where).toBe(true);
        }
      }
    }
    expect(answers.length).toBe(routes.length * credentials.length);
  });

  it('answers every procedure likewise', async () => {
    for (const [name, doc] of Object.entries(PROCEDURES)) {
      const example = PROCEDURE_EXAMPLES[name]!(fixture);
      for (const cred of credentials) {
        const res =
          doc.type === 'mutation'
            ? await call('POST', `/trpc/${name}`, cred.token, example ?? {})
            : await call('GET', `/trpc/${name}${example === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(example))}`}`, cred.token);
        const where = `${name} with ${cred.name}: ${res.status} ${res.text.slice(0, 160)}`;
        answers.push({ where, res, public: false });
        for (const m of markers) expect(res.text.includes(m), `${where} shows project A's ${m}`).toBe(false);
        const data = res.json?.error?.data;
        if (cred.scopes === null) expect([res.status, data?.error], where).toEqual([401, 'unauthorized']);
        // The dashboard's admin procedures: no project token may call them.
        else if (doc.scope === 'admin') expect([res.status, data?.error], where).toEqual([403, 'admin_required']);
        else if (doc.scope === 'signed-in') expect(res.status, where).toBe(200);
        else if (!cred.scopes.includes(doc.scope)) expect([res.status, data?.error], where).toEqual([403, 'insufficient_scope']);
        else if (PROCEDURES_NAMING_A_RECORD.has(name)) expect([res.status, data?.code, data?.error], where).toEqual([404, 'NOT_FOUND', 'not_found']);
        else expect(res.status, where).toBe(200);
      }
    }
  });

  it('sends the security headers on every answer', async () => {
    answers.push({ where: 'unknown route', res: await call('GET', '/v1/nothing-here', null), public: false });
    answers.push({ where: 'unknown procedure', res: await call('GET', '/trpc/nothing.here', td.token), public: false });
    expect(answers.length).toBeGreaterThan(250);
    for (const { where, res, public: isPublic } of answers) {
      expect(res.headers.get('x-content-type-options'), where).toBe('nosniff');
      expect(res.headers.get('x-frame-options'), where).toBe('DENY');
      expect(res.headers.get('referrer-policy'), where).toBe('no-referrer');
      expect(res.headers.get('cross-origin-resource-policy'), where).toBeTruthy();
      expect(res.headers.get('cache-control'), where).toBeTruthy();
      // Only public answers (badges, /openapi.json, /health) may choose their own caching.
      if (!isPublic) {
        expect(res.headers.get('cross-origin-resource-policy'), where).toBe('same-origin');
        expect(res.headers.get('cache-control'), where).toBe('no-store');
      }
    }
  });

  it('never writes a token or an authorization header to the log, though every request was logged', () => {
    const entries = logLines.map((l) => JSON.parse(l) as { msg?: string; req?: { url?: string } });
    // The requests above were logged, tokens and all: by URL, e.g. the probes of A's run …
    const logged = entries.filter((e) => e.req?.url?.startsWith(`/v1/runs/${fixture.runId}`));
    expect(logged.length).toBeGreaterThanOrEqual(credentials.length);
    expect(entries.filter((e) => e.req?.url?.startsWith('/trpc/')).length).toBeGreaterThan(0);
    // … but no line holds a token or the header's value.
    for (const line of logLines) {
      for (const s of secrets) expect(line.includes(s), `log line holds a token: ${line.slice(0, 200)}`).toBe(false);
      expect(line).not.toMatch(/bearer\s/i);
      expect(line).not.toMatch(/fh_[0-9a-f]{48}/);
    }
  });
});

// One example request per route of the route table, and per procedure, for the tests that must
// reach every route (isolation, rate limit). A route added to the table without an entry here
// fails those tests, so new routes are covered the day they land.
//
// Examples name the *other* project's resources (the fixture), so calling them with a token of a
// different project must never return that project's data.
import type { AnyRouteDef } from '../../src/api/route.js';
import { nativeBatch, type TestDaemon } from './daemon.js';

/** Ids of the project whose data another project's tokens must not reach. */
export interface Fixture {
  slug: string;
  runId: string;
  executionId: string;
  testIdentityId: string;
  commitSha: string;
  /** Badge token of the *calling* project (the badge token is a credential, not an id). */
  ownBadgeToken: string;
  tokenId: string;
}

export interface RouteExample {
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  /** Statuses ≥ 500 the route legitimately answers (presign without a bucket: 501). */
  allow5xx?: number[];
  /** The answer is gzip: check the markers in the inflated text. */
  gzip?: boolean;
}

const key = (): string => `example-${Math.random().toString(16).slice(2)}-${Date.now()}`;
const resource = { ciProvider: 'github_actions', commitSha: 'feedbeef99', branch: 'main', trigger: 'push' };

export const ROUTE_EXAMPLES: Record<string, (f: Fixture) => RouteExample> = {
  'GET /health': () => ({}),
  'GET /ready': () => ({}),
  'GET /openapi.json': () => ({}),
  'POST /v1/ingest': () => ({ body: nativeBatch({ key: key(), n: 1, resource }) }),
  'POST /v1/ingest/junit': () => ({
    body: { idempotencyKey: key(), resource, xml: '<testsuite name="other"><testcase classname="other.Case" name="works"/></testsuite>' },
  }),
  'POST /v1/traces': () => ({
    body: {
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'vcs.ref.head.revision', value: { stringValue: 'feedbeef99' } }] },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: Buffer.from(key().padEnd(16, 'x').slice(0, 16)).toString('hex'),
                  spanId: 'eee19b7ec3c1b174',
                  name: 'test.run',
                  startTimeUnixNano: '1795255200000000000',
                  endTimeUnixNano: '1795255201000000000',
                },
              ],
            },
          ],
        },
      ],
    },
  }),
  'GET /v1/runs': () => ({ query: { limit: '100' } }),
  'GET /v1/runs/:runId': (f) => ({ params: { runId: f.runId } }),
  'GET /v1/runs/summary': (f) => ({ query: { commitSha: f.commitSha } }),
  'GET /v1/runs/gate': (f) => ({ query: { commitSha: f.commitSha, baseBranch: 'main' } }),
  'GET /v1/flaky': () => ({ query: { limit: '500', includeQuarantined: 'true' } }),
  'GET /v1/tests/:testIdentityId': (f) => ({ params: { testIdentityId: f.testIdentityId } }),
  'POST /v1/tests/:testIdentityId/quarantine': (f) => ({ params: { testIdentityId: f.testIdentityId }, body: { decision: 'quarantined', reason: 'probe' } }),
  'GET /v1/quarantine': () => ({}),
  'POST /v1/tests/known': () => ({ body: { branch: 'main', fingerprints: ['0'.repeat(64)] } }),
  'GET /v1/executions/:executionId/rca': (f) => ({ params: { executionId: f.executionId } }),
  'GET /v1/health': () => ({ query: { days: '30' } }),
  'PUT /v1/codeowners': () => ({ body: { content: '* @other/team\n' } }),
  'POST /v1/artifacts/presign': () => ({
    body: { idempotencyKey: key(), artifacts: [{ executionIndex: 0, name: 'shot.png', contentType: 'image/png', sizeBytes: 10 }] },
    allow5xx: [501],
  }),
  'PUT /v1/notifications/routing': () => ({ body: { channels: [] } }),
  'GET /v1/notifications/channels': () => ({}),
  'GET /v1/export': () => ({ gzip: true }),
  'GET /v1/badges': () => ({}),
  'POST /v1/splits': () => ({ body: { buildId: `example-${key()}`, total: 2, index: 0, files: ['src/a.test.ts', 'src/b.test.ts'] } }),
  'GET /badge/:badgeToken/:variant': (f) => ({ params: { badgeToken: f.ownBadgeToken, variant: 'worst.svg' } }),
  'POST /v1/admin/projects': () => ({ body: { slug: `probe-${Math.random().toString(16).slice(2, 8)}` } }),
  'GET /v1/admin/projects': () => ({}),
  'POST /v1/admin/projects/:slug/tokens': (f) => ({ params: { slug: f.slug }, body: { scopes: ['read'] } }),
  'DELETE /v1/admin/tokens/:id': (f) => ({ params: { id: f.tokenId } }),
  'GET /v1/admin/stats': () => ({}),
  'GET /v1/admin/dead-jobs': () => ({ query: { limit: '5' } }),
  'GET /v1/admin/dead-jobs/:id': () => ({ params: { id: '01900000-0000-7000-8000-000000000000' } }),
  'POST /v1/admin/dead-jobs/:id/requeue': () => ({ params: { id: '01900000-0000-7000-8000-000000000000' } }),
  'DELETE /v1/admin/dead-jobs/:id': () => ({ params: { id: '01900000-0000-7000-8000-000000000000' } }),
  'POST /v1/admin/identities/merge-junit-twins': (f) => ({ query: { project: f.slug, dryRun: 'true' } }),
  'GET /metrics': () => ({}),
  'GET /v1/admin/projects/:slug/settings': (f) => ({ params: { slug: f.slug } }),
  'PUT /v1/admin/projects/:slug/settings': (f) => ({ params: { slug: f.slug }, body: {} }),
  'PATCH /v1/admin/projects/:slug/settings': (f) => ({ params: { slug: f.slug }, body: {} }),
  'POST /v1/admin/projects/:slug/badge-token': (f) => ({ params: { slug: f.slug } }),
  // The other project's rows, as any table the SQL could name.
  'GET /clickhouse': () => ({ query: { query: 'SELECT title, error_message, run_id, id, test_id FROM executions', default_format: 'JSONEachRow' } }),
  'POST /clickhouse': () => ({ query: { query: 'SELECT id, slug, badge_token FROM projects', default_format: 'JSONEachRow' } }),
  'GET /clickhouse/ping': () => ({}),
  // Dashboard sign-in: a bearer header plays no part (the body's token does; here not a valid one).
  'POST /v1/session': () => ({ body: { token: 'not-a-token' } }),
  'GET /v1/session': () => ({}),
  'DELETE /v1/session': () => ({}),
};

/** Procedure inputs naming the fixture's resources. */
export const PROCEDURE_EXAMPLES: Record<string, (f: Fixture) => unknown> = {
  'runs.list': () => ({ limit: 100 }),
  'run.get': (f) => ({ runId: f.runId }),
  'test.get': (f) => ({ testIdentityId: f.testIdentityId }),
  'flaky.board': () => ({ limit: 500, includeQuarantined: true }),
  'rca.get': (f) => ({ executionId: f.executionId }),
  'health.metrics': () => ({ days: 30 }),
  'session.me': () => undefined,
  'projects.list': () => undefined,
  'test.history': (f) => ({ testIdentityId: f.testIdentityId }),
  'test.quarantineLog': (f) => ({ testIdentityId: f.testIdentityId }),
  'test.clusters': (f) => ({ testIdentityId: f.testIdentityId }),
  'test.quarantine': (f) => ({ testIdentityId: f.testIdentityId, reason: 'probe' }),
  'test.release': (f) => ({ testIdentityId: f.testIdentityId, reason: 'probe' }),
  'execution.get': (f) => ({ executionId: f.executionId }),
  'pr.summary': (f) => ({ commitSha: f.commitSha }),
  // A PR number lists that PR's commits in the caller's project (none: an empty list).
  'pr.commits': () => ({ prNumber: 42 }),
  'health.suites': () => ({ days: 30 }),
  'health.flakyTests': () => ({ days: 30 }),
  'flaky.slowed': (f) => ({ testIdentityIds: [f.testIdentityId] }),
  'test.trends': (f) => ({ testIdentityId: f.testIdentityId }),
  'clusters.list': () => ({ days: 30 }),
  'settings.get': () => undefined,
  'settings.update': () => ({ patch: {} }),
  'channels.list': () => undefined,
  'channels.sendTest': () => ({ channelId: 'env:slack' }),
  'tokens.list': () => undefined,
  'tokens.create': () => ({ scopes: ['read'] }),
  'tokens.revoke': (f) => ({ tokenId: f.tokenId }),
  'badges.get': () => undefined,
  'pipeline.graph': () => undefined,
};

/** Project-scoped procedures whose example names one of the fixture project's records: unknown (404) to another project. */
export const PROCEDURES_NAMING_A_RECORD = new Set(['run.get', 'test.get', 'rca.get', 'test.history', 'test.quarantineLog', 'test.clusters', 'test.quarantine', 'test.release', 'execution.get', 'pr.summary', 'test.trends']);

export function routeKey(r: Pick<AnyRouteDef, 'method' | 'url'>): string {
  return `${r.method} ${r.url}`;
}

/** The URL of an example: path params filled in, query appended. */
export function examplePath(url: string, ex: RouteExample): string {
  const filled = url.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    const v = ex.params?.[name];
    if (v === undefined) throw new Error(`example for ${url} lacks the path param ${name}`);
    return encodeURIComponent(v);
  });
  const q = new URLSearchParams(ex.query ?? {}).toString();
  return q ? `${filled}?${q}` : filled;
}

/** A new project with one token per scope set, through the admin API. */
export async function createProject(td: TestDaemon, slug: string, scopeSets: string[][]): Promise<{ slug: string; tokens: string[]; tokenIds: string[] }> {
  const p = await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug } });
  if (p.status !== 201) throw new Error(`create project ${slug}: ${p.status} ${p.text}`);
  const tokens: string[] = [];
  const tokenIds: string[] = [];
  for (const scopes of scopeSets) {
    const t = await td.request('POST', `/v1/admin/projects/${slug}/tokens`, { token: td.adminToken, body: { scopes } });
    if (t.status !== 201) throw new Error(`create token: ${t.status} ${t.text}`);
    tokens.push(t.json.token);
    tokenIds.push(t.json.id);
  }
  return { slug, tokens, tokenIds };
}

/** Calls a procedure over the tRPC wire format (GET ?input=), as a stock client would. */
export async function callProcedure(td: TestDaemon, name: string, input: unknown, token: string | null, type: 'query' | 'mutation' = 'query') {
  if (type === 'mutation') return td.request('POST', `/trpc/${name}`, { token, body: input ?? {} });
  return td.request('GET', `/trpc/${name}${input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`}`, { token });
}

// GET /v1/export through the real daemon: runs ingested over HTTP in two projects, project A
// exported, gunzipped and parsed line by line; the counts are checked against ClickHouse (round
// trip), project B and every secret must be absent. Then the stream's life cycle: a client that
// hangs up mid-export cancels it, and one export per project runs at a time. With an artifact
// bucket (s3rver), the project's objects are listed after the rows.
import { randomBytes } from 'node:crypto';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { constants, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATASETS, NOT_EXPORTED } from '../../src/project-export/datasets.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startTestS3, type TestS3 } from '../helpers/s3.js';

interface Line {
  type: string;
  dataset?: string;
  data?: Record<string, unknown>;
  [k: string]: unknown;
}

const T0 = Date.parse('2026-11-10T08:00:00Z');
let runSeq = 0;

function batch(executions: Record<string, unknown>[], resource: Record<string, unknown> = {}): Record<string, unknown> {
  const at = T0 + runSeq++ * 3_600_000;
  return nativeBatch({
    resource,
    run: { status: executions.some((e) => e.status === 'fail') ? 'failed' : 'passed', startedAt: at },
    executions: executions.map((e, i) => ({ status: 'pass', startedAt: at + 1 + i, durationMs: 7 + i, ...e })),
  });
}

async function exportOf(td: TestDaemon, token: string): Promise<{ res: Response; text: string; lines: Line[] }> {
  const res = await fetch(`${td.url}/v1/export`, { headers: { authorization: `Bearer ${token}` } });
  const text = gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8');
  expect(text.endsWith('\n')).toBe(true);
  const lines = text
    .slice(0, -1)
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
  return { res, text, lines };
}

describe('GET /v1/export', () => {
  let td: TestDaemon;
  let projectA: string;
  let projectB: string;
  let tokenB: string;
  let exported: { res: Response; text: string; lines: Line[] };
  const SIGNING_SECRET = `whsec_${randomBytes(16).toString('hex')}`;
  const SLACK_PATH_SECRET = `T0AAA/B0BBB/${randomBytes(12).toString('hex')}`;

  const count = async (sql: string, projectId: string): Promise<number> =>
    Number((await td.daemon.store.query<{ n: number | string }>(sql, { p: projectId }))[0]!.n);

  beforeAll(async () => {
    td = await startTestDaemon();
    const created = await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug: 'team-b', name: 'Team B' } });
    expect(created.status).toBe(201);
    projectB = created.json.id as string;
    const minted = await td.request('POST', '/v1/admin/projects/team-b/tokens', { token: td.adminToken, body: { scopes: ['ingest', 'read'] } });
    tokenB = minted.json.token as string;

    // Project A: passes, a failure with an error, a retry that passed, then the cart file moves (an
    // L2 stitch and an alias), CODEOWNERS, a person's quarantine decision, a Slack channel.
    const cart = (filePath: string): Record<string, unknown>[] => [
      { filePath, suite: 'Cart', title: 'adds an item' },
      { filePath: 'src/coupon.test.ts', suite: 'Coupon', title: 'applies a coupon', status: 'fail', error: { type: 'AssertionError', message: 'expected 90 to be 80' } },
      { filePath: 'src/coupon.test.ts', suite: 'Coupon', title: 'applies a coupon', attempt: 2, retryOfIndex: 1 },
      { filePath: 'src/search.test.ts', suite: 'Search', title: 'finds by name', status: 'fail', error: { type: 'TimeoutError', message: 'Timeout of 5000ms exceeded' } },
    ];
    // One at a time: a move is recognised against identities already stored, not in the same lease.
    // Each run its own commit: a test seen on the same commit as its old name is no move (identity).
    const files = ['src/cart.test.ts', 'src/cart.test.ts', 'src/shop/cart.test.ts'];
    for (const [i, file] of files.entries()) await td.ingest(batch(cart(file), { commitSha: `c0ffee${i}` }));
    expect((await td.request('PUT', '/v1/codeowners', { body: { content: 'src/ @org/shop\n' } })).status).toBe(200);
    const search = (await td.daemon.store.query<{ id: string }>(`SELECT toString(id) AS id FROM ${td.daemon.store.table('test_identities')} WHERE title = 'finds by name'`))[0]!;
    expect((await td.request('POST', `/v1/tests/${search.id}/quarantine`, { body: { decision: 'quarantined', reason: 'fails on CI only' } })).status).toBe(200);
    const routing = await td.request('PUT', '/v1/notifications/routing', {
      body: { channels: [{ kind: 'slack', target: `https://hooks.slack.com/services/${SLACK_PATH_SECRET}` }] },
    });
    expect(routing.status).toBe(200);
    projectA = (await td.daemon.store.query<{ id: string }>(`SELECT toString(id) AS id FROM ${td.daemon.store.table('projects')} FINAL WHERE slug = 'default'`))[0]!.id;
    // A dashboard channel with a webhook signing secret (no route writes one yet): straight into its table.
    await td.daemon.store.insert(
      'notification_channels',
      [{ project_id: projectA, id: '00000000-0000-4000-8000-00000000c0de', source: 'settings', kind: 'webhook', target: 'https://hooks.example.com/flaky', events: [], signing_secret: SIGNING_SECRET, created_at: Date.now(), updated_at: Date.now(), version: 1, deleted: 0 }],
      `export-test-channel:${projectA}`,
    );

    // Project B: its own tests, with names that must never show up in A's export.
    const bRes = await fetch(`${td.url}/v1/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokenB}`, 'content-type': 'application/json' },
      body: JSON.stringify(batch([{ filePath: 'b-only/ledger.test.ts', suite: 'Ledger', title: 'b-only balances', status: 'fail', error: { message: 'b-only failure' } }])),
    });
    expect(bRes.status).toBe(202);
    await td.waitFor(async () => (await count(`SELECT count() AS n FROM ${td.daemon.store.table('test_state')} WHERE project_id = {p:UUID}`, projectB)) > 0, 30_000);

    exported = await exportOf(td, td.token);
  }, 120_000);

  afterAll(async () => td?.close());

  it('answers a gzip attachment named after the project and the day', () => {
    expect(exported.res.status).toBe(200);
    expect(exported.res.headers.get('content-type')).toBe('application/gzip');
    const today = new Date().toISOString().slice(0, 10);
    expect(exported.res.headers.get('content-disposition')).toBe(`attachment; filename="service-default-${today}.ndjson.gz"`);
  });

  it('is a manifest, rows of the listed datasets, then a summary whose counts are the rows', () => {
    const { lines } = exported;
    const manifest = lines[0]!;
    expect(manifest).toMatchObject({ type: 'manifest', version: 1, projectId: projectA, project: 'default', artifactInventory: false });
    expect(Number.isNaN(Date.parse(String(manifest.exportedAt)))).toBe(false);
    const datasets = manifest.datasets as string[];
    expect(datasets).toEqual(DATASETS.map((d) => d.name));

    const summary = lines.at(-1)!;
    expect(summary.type).toBe('summary');
    const rows = lines.slice(1, -1);
    expect(rows.every((l) => l.type === 'row' && datasets.includes(l.dataset!))).toBe(true);
    const seen: Record<string, number> = Object.fromEntries(datasets.map((d) => [d, 0]));
    for (const l of rows) seen[l.dataset!]!++;
    expect(summary).toEqual({ type: 'summary', rows: rows.length, artifacts: 0, counts: seen });
    // Each row carries exactly the dataset's allow-listed columns.
    const columns = manifest.columns as Record<string, string[]>;
    for (const l of rows) expect(Object.keys(l.data!)).toEqual(columns[l.dataset!]);
  });

  it("round-trips: every dataset's count is the project's rows in ClickHouse, none empty", async () => {
    const store = td.daemon.store;
    const counts = exported.lines.at(-1)!.counts as Record<string, number>;
    const expected: Record<string, number> = {};
    for (const d of DATASETS) {
      const where = [`${d.projectColumn} = {p:UUID}`, ...(d.where ? [d.where] : [])].join(' AND ');
      expected[d.name] = await count(`SELECT count() AS n FROM ${store.table(d.table)}${d.final ? ' FINAL' : ''} WHERE ${where}`, projectA);
    }
    expect(counts).toEqual(expected);
    // What was ingested, independently: 3 runs of 4 executions, the bootstrap token, the moved
    // test's stitch, one override, CODEOWNERS, two channels.
    expect(counts).toMatchObject({ project: 1, tokens: 1, runs: 3, receipts: 3, executions: 12, identity_stitches: 1, quarantine_overrides: 1, codeowners: 1, notification_channels: 2 });
    // Every other dataset has rows here, so the round trip above is not comparing zeros (test_merges:
    // merged JUnit twins, test/integration/junit-twin-merge.test.ts).
    const notMadeHere = new Set(['project_settings', 'rca_analyses', 'ai_token_usage', 'ai_budget_notices', 'test_merges']);
    for (const [name, n] of Object.entries(counts)) {
      if (!notMadeHere.has(name)) expect([name, n > 0]).toEqual([name, true]);
    }
  });

  it('holds the rows as stored: ids, values and ISO times', async () => {
    const store = td.daemon.store;
    const rows = exported.lines.filter((l) => l.type === 'row');
    const exec = rows.filter((l) => l.dataset === 'executions').map((l) => l.data!);
    const ids = await store.query<{ id: string }>(`SELECT toString(id) AS id FROM ${store.table('executions')} WHERE project_id = {p:UUID}`, { p: projectA });
    expect(exec.map((e) => e.id).sort()).toEqual(ids.map((r) => r.id).sort());
    const coupon = exec.find((e) => e.title === 'applies a coupon' && e.attempt === 1)!;
    expect(coupon).toMatchObject({ status: 'fail', file_path: 'src/coupon.test.ts', error_type: 'AssertionError', error_message: 'expected 90 to be 80', branch: 'main' });
    expect(coupon.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(typeof coupon.duration_ms).toBe('number');
    const retry = exec.find((e) => e.title === 'applies a coupon' && e.attempt === 2 && e.run_id === coupon.run_id)!;
    expect(retry.retry_of).toBe(coupon.id);

    const runIds = (await store.query<{ id: string }>(`SELECT toString(id) AS id FROM ${store.table('runs')} FINAL WHERE project_id = {p:UUID}`, { p: projectA })).map((r) => r.id);
    expect(rows.filter((l) => l.dataset === 'runs').map((l) => l.data!.id).sort()).toEqual(runIds.sort());
    const stitch = rows.find((l) => l.dataset === 'identity_stitches')!.data!;
    expect(stitch).toMatchObject({ level: 'L2', from_file_path: 'src/cart.test.ts', to_file_path: 'src/shop/cart.test.ts' });
    expect(rows.find((l) => l.dataset === 'quarantine_overrides')!.data).toMatchObject({ override: 'quarantined', reason: 'fails on CI only' });
    const trend = rows.find((l) => l.dataset === 'flaky_trends')!.data!;
    expect(trend.failing_tests).toBe(2); // the coupon and the search test failed on that day
    // Test states travel with the export: the search test failed every run, from the first commit.
    const search = rows.find((l) => l.dataset === 'test_state' && l.data!.title === 'finds by name')!.data!;
    expect(search).toMatchObject({ state: 'broken', state_commit: 'c0ffee0', state_branch: 'main', flake_rate: 0 });
    expect(search.state_at).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('holds nothing of project B and no secret', async () => {
    const { text, lines } = exported;
    expect(text).not.toContain(projectB);
    expect(text).not.toContain('b-only');
    const store = td.daemon.store;
    const hashes = await store.query<{ token_hash: string }>(`SELECT token_hash FROM ${store.table('tokens')}`);
    expect(hashes.length).toBeGreaterThanOrEqual(2);
    for (const { token_hash } of hashes) expect(text).not.toContain(token_hash);
    for (const token of [td.token, tokenB, td.adminToken]) {
      expect(text).not.toContain(token);
      expect(text).not.toContain(token.slice(0, 10)); // nor the display prefix
    }
    const badges = await store.query<{ badge_token: string }>(`SELECT badge_token FROM ${store.table('projects')}`);
    for (const { badge_token } of badges) expect(text).not.toContain(badge_token);
    expect(text).not.toContain(SIGNING_SECRET);
    expect(text).not.toContain(SLACK_PATH_SECRET);
    expect(text).not.toMatch(/token_hash|signing_secret|badge_token/);
    const channels = lines.filter((l) => l.dataset === 'notification_channels').map((l) => l.data!.target);
    expect(channels.sort()).toEqual(['https://hooks.example.com', 'https://hooks.slack.com']);
  });

  it('exports every project-scoped table or says why not', async () => {
    const store = td.daemon.store;
    const scoped = await store.query<{ table: string }>(
      `SELECT DISTINCT c.table AS table FROM system.columns AS c INNER JOIN system.tables AS t ON t.database = c.database AND t.name = c.table
       WHERE c.database = {db:String} AND c.name = 'project_id' AND t.engine != 'MaterializedView'`,
      { db: store.database },
    );
    const covered = new Set([...DATASETS.map((d) => d.table), ...Object.keys(NOT_EXPORTED)]);
    expect(scoped.map((r) => r.table).filter((t) => !covered.has(t))).toEqual([]);
  });

  it('needs a token with the read scope', async () => {
    expect((await td.request('GET', '/v1/export', { token: null })).status).toBe(401);
    const ingestOnly = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['ingest'] } });
    const res = await td.request('GET', '/v1/export', { token: ingestOnly.json.token as string });
    expect(res.status).toBe(403);
    expect(res.json.error).toBe('insufficient_scope');
  });

  it("exports project B's own rows to B's token", async () => {
    const { lines, text } = await exportOf(td, tokenB);
    expect(lines[0]).toMatchObject({ type: 'manifest', projectId: projectB, project: 'team-b' });
    expect(lines.at(-1)!.counts).toMatchObject({ runs: 1, executions: 1 });
    expect(text).not.toContain(projectA);
    expect(text).toContain('b-only balances');
  });

  describe('a large export', () => {
    const ROWS = 30_000;
    let tokenC: string;

    beforeAll(async () => {
      const created = await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug: 'team-c' } });
      const c = created.json.id as string;
      tokenC = (await td.request('POST', '/v1/admin/projects/team-c/tokens', { token: td.adminToken, body: { scopes: ['read'] } })).json.token as string;
      const store = td.daemon.store;
      await store.command(
        `INSERT INTO ${store.table('executions')} (project_id, test_id, started_at, id, run_id, day, status, attempt, duration_ms, file_path, suite, title, error_message)
         SELECT toUUID({p:String}), generateUUIDv4(number % 500), toDateTime64('2026-11-10 08:00:00', 3, 'UTC') + number, generateUUIDv4(number), generateUUIDv4(intDiv(number, 1000)),
                toDate('2026-11-10'), 'pass', 1, number % 900, concat('src/area', toString(number % 40), '/feature.test.ts'), 'Suite', concat('case ', toString(number % 500)),
                -- Incompressible enough that the export outgrows every socket buffer on the way: 55 MB
                -- gzipped where loopback buffers hold up to 37.5 MB (tcp_rmem 32 MiB + tcp_wmem 4 MiB).
                randomPrintableASCII(2000)
         FROM numbers(${ROWS})
         SETTINGS insert_deduplicate = 0, deduplicate_insert_select = 'disable', insert_deduplication_token = 'export-test-${randomBytes(4).toString('hex')}'`,
        { p: c },
      );
    }, 120_000);

    it('streams every row, and a client that hangs up mid-way frees the export', async () => {
      // Read a little, then hang up: the daemon must not keep the export (or its stream) open.
      const abort = new AbortController();
      const first = await fetch(`${td.url}/v1/export`, { headers: { authorization: `Bearer ${tokenC}` }, signal: abort.signal });
      expect(first.status).toBe(200);
      const reader = first.body!.getReader();
      // A few hundred KB in, well inside the executions, the client stops reading for a while.
      for (let n = 0; n < 256 * 1024; ) n += (await reader.read()).value!.length;
      // While it runs, its query is open in the engine, and a second export of the project is refused.
      const exportQueries = async (): Promise<number> =>
        count(
          `SELECT count() AS n FROM system.processes WHERE query LIKE '%AS dataset%' AND position(query, {p:String}) > 0 AND query NOT LIKE '%system.processes%'`,
          td.daemon.store.database,
        );
      expect(await exportQueries()).toBe(1);
      const second = await td.request('GET', '/v1/export', { token: tokenC });
      expect(second.status).toBe(429);
      abort.abort();
      await reader.cancel().catch(() => {});
      // Hanging up cancels the query.
      await td.waitFor(async () => (await exportQueries()) === 0, 30_000);

      const full = await td.waitFor(async () => {
        const res = await fetch(`${td.url}/v1/export`, { headers: { authorization: `Bearer ${tokenC}` } });
        if (res.status === 429) {
          await res.body?.cancel();
          return null;
        }
        return res;
      }, 30_000);
      expect(full.status).toBe(200);
      const text = gunzipSync(Buffer.from(await full.arrayBuffer())).toString('utf8');
      const lines = text.slice(0, -1).split('\n');
      const summary = JSON.parse(lines.at(-1)!) as Line;
      expect((summary.counts as Record<string, number>).executions).toBe(ROWS);
      expect(lines.filter((l) => l.startsWith('{"type":"row","dataset":"executions"')).length).toBe(ROWS);
      expect((await td.request('GET', '/health')).status).toBe(200);
    }, 120_000);

    it('is cut short by a shutdown instead of holding the daemon open for a stalled client', async () => {
      const res = await fetch(`${td.url}/v1/export`, { headers: { authorization: `Bearer ${tokenC}` } });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      // A few hundred KB in, the client stops reading; the daemon must still stop.
      const got: Uint8Array[] = [];
      for (let n = 0; n < 256 * 1024; ) {
        const chunk = (await reader.read()).value!;
        got.push(chunk);
        n += chunk.length;
      }
      await td.stop();
      for (;;) {
        const r = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (r.done) break;
        got.push(r.value);
      }
      const partial = gunzipSync(Buffer.concat(got), { finishFlush: constants.Z_SYNC_FLUSH }).toString('utf8');
      expect(partial.startsWith('{"type":"manifest"')).toBe(true);
      expect(partial).not.toContain('"type":"summary"');
    }, 120_000);
  });
});

describe('GET /v1/export with an artifact bucket', () => {
  let s3: TestS3;
  let td: TestDaemon;

  beforeAll(async () => {
    s3 = await startTestS3();
    td = await startTestDaemon({ env: s3.env });
  }, 60_000);

  afterAll(async () => {
    await td?.close();
    await s3?.close();
  });

  it("lists the objects under the project's prefix, and only those", async () => {
    const projectId = (await td.daemon.store.query<{ id: string }>(`SELECT toString(id) AS id FROM ${td.daemon.store.table('projects')} FINAL WHERE slug = 'default'`))[0]!.id;
    const client = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } });
    const objects = { [`proj/${projectId}/run/ci-1/0/screenshot.png`]: 'x'.repeat(1234), [`proj/${projectId}/run/ci-1/1/trace.zip`]: 'y'.repeat(77) };
    for (const [key, body] of Object.entries({ ...objects, 'proj/00000000-0000-4000-8000-00000000000b/run/k/0/other.png': 'z' })) {
      await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));
    }
    client.destroy();

    const { lines } = await exportOf(td, td.token);
    expect(lines[0]).toMatchObject({ type: 'manifest', artifactInventory: true });
    const artifacts = lines.filter((l) => l.type === 'artifact');
    expect(artifacts.map((a) => [a.key, a.size]).sort()).toEqual(Object.entries(objects).map(([k, v]) => [k, v.length]).sort());
    for (const a of artifacts) expect(Number.isNaN(Date.parse(String(a.lastModified)))).toBe(false);
    // Artifact lines come after the rows and before the summary, which counts them.
    const firstArtifact = lines.findIndex((l) => l.type === 'artifact');
    expect(lines.slice(firstArtifact, -1).every((l) => l.type === 'artifact')).toBe(true);
    expect(lines.at(-1)).toMatchObject({ type: 'summary', artifacts: 2 });
  });
});

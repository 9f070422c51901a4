// Retention end to end on the real daemon (chDB, HTTP, s3rver): a project with a 7-day window
// loses its older executions (whole partitions where nothing else lives, row deletes elsewhere),
// a project without a window keeps everything, the rollups stay exactly as they were; the
// environment's global window applies where a project has none and a project's own beats it; the
// sweep also runs on its own schedule; artifact objects are pruned by the (clamped) artifact window;
// artifacts turned off for one project answer 404 there only.
import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProjectRepo } from '../../src/store/projects.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startTestS3, type TestS3 } from '../helpers/s3.js';

const DAY = 86_400_000;
const NOW = Date.now();
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

let s3: TestS3;
let td: TestDaemon;
const processed = new Set<string>();

function listen(d: TestDaemon): void {
  d.daemon.runtime.onEvent((e) => {
    if (e.type === 'run.processed') processed.add(String(e.data.receiptId));
  });
}

beforeAll(async () => {
  s3 = await startTestS3();
  td = await startTestDaemon({ env: { ...s3.env, SERVICE_RATE_LIMIT_MAX: '100000' } });
  listen(td);
});
afterAll(async () => {
  await td?.close();
  await s3?.close();
});

const admin = (method: string, url: string, body?: unknown) => td.request(method, url, { token: td.adminToken, body });

async function project(slug: string, settings?: Record<string, unknown>): Promise<{ slug: string; id: string; token: string }> {
  const created = await admin('POST', '/v1/admin/projects', { slug });
  expect(created.status).toBe(201);
  const t = await admin('POST', `/v1/admin/projects/${slug}/tokens`, { scopes: ['ingest', 'read'] });
  if (settings) expect((await admin('PUT', `/v1/admin/projects/${slug}/settings`, settings)).status).toBe(200);
  return { slug, id: created.json.id as string, token: t.json.token as string };
}

/** One run `daysAgo` days before now: three tests, one flaky (fail, then pass on the retry). */
function runAt(daysAgo: number): Record<string, unknown> {
  const at = NOW - daysAgo * DAY - 3_600_000;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `ret-${daysAgo}-${randomBytes(4).toString('hex')}`,
    resource: { ciProvider: 'github_actions', commitSha: 'abcdef1', branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: at },
    executions: [
      { filePath: 'src/a.test.ts', suite: 'a', title: 'one', status: 'pass', startedAt: at, durationMs: 10 },
      { filePath: 'src/a.test.ts', suite: 'a', title: 'two', status: 'fail', startedAt: at + 1, durationMs: 20, error: { message: 'boom' } },
      { filePath: 'src/a.test.ts', suite: 'a', title: 'two', status: 'pass', attempt: 2, retryOfIndex: 1, startedAt: at + 2, durationMs: 20 },
    ],
  };
}

async function ingestAs(token: string, ...batches: Record<string, unknown>[]): Promise<void> {
  const receipts: string[] = [];
  for (const b of batches) {
    const res = await td.request('POST', '/v1/ingest', { token, body: b });
    expect(res.status, res.text).toBe(202);
    receipts.push(String(res.json.receiptId));
  }
  await td.waitFor(async () => receipts.every((r) => processed.has(r)), 30_000);
}

async function q<T>(sql: string, projectId: string): Promise<T[]> {
  return td.daemon.store.query<T>(sql.replaceAll('{db}', `\`${td.database}\``), { projectId });
}

/** Days that still have executions (and test_recent rows) for a project. */
async function days(projectId: string): Promise<{ executions: string[]; testRecent: string[] }> {
  const e = await q<{ day: string }>(`SELECT DISTINCT toString(day) AS day FROM {db}.executions WHERE project_id = {projectId:UUID} ORDER BY day`, projectId);
  const r = await q<{ day: string }>(`SELECT DISTINCT toString(toDate(started_at)) AS day FROM {db}.test_recent WHERE project_id = {projectId:UUID} ORDER BY day`, projectId);
  return { executions: e.map((x) => x.day), testRecent: r.map((x) => x.day) };
}

/** Every rollup of a project, as plain rows. */
async function rollups(projectId: string): Promise<unknown[]> {
  return [
    ...(await q(`SELECT toString(day) AS d, test_id, sum(executions) e, sum(failed) f, sum(flaky) fl, sum(retries) r, sum(duration_ms_sum) ms FROM {db}.daily_test_stats WHERE project_id = {projectId:UUID} GROUP BY d, test_id ORDER BY d, test_id`, projectId)),
    ...(await q(`SELECT toString(day) AS d, suite, sum(executions) e, sum(failed) f, sum(flaky) fl FROM {db}.suite_daily WHERE project_id = {projectId:UUID} GROUP BY d, suite ORDER BY d, suite`, projectId)),
    ...(await q(`SELECT toString(day) AS d, sum(executions) e, sum(flaky_executions) fl, uniqMerge(flaky_tests) ft, uniqMerge(failing_tests) ff FROM {db}.flaky_trends WHERE project_id = {projectId:UUID} GROUP BY d ORDER BY d`, projectId)),
  ];
}

describe('retention sweep', () => {
  let seven: { slug: string; id: string; token: string };
  let keep: { slug: string; id: string; token: string };
  let lonely: { slug: string; id: string; token: string };
  let before: Map<string, unknown[]>;

  it('prunes only past a project’s window; a project without one keeps everything; rollups are untouched', async () => {
    seven = await project('ret-seven', { retention: { rawDays: 7 } });
    keep = await project('ret-keep');
    // The only project with rows ~400 days back: that month's partition holds nothing anyone keeps.
    lonely = await project('ret-lonely', { retention: { rawDays: 7 } });
    await ingestAs(seven.token, runAt(40), runAt(20), runAt(3), runAt(0));
    await ingestAs(keep.token, runAt(40), runAt(20), runAt(3), runAt(0));
    await ingestAs(lonely.token, runAt(400), runAt(1));
    before = new Map(await Promise.all([seven, keep, lonely].map(async (p) => [p.id, await rollups(p.id)] as const)));
    expect(before.get(seven.id)!.length).toBeGreaterThan(0);
    const all = [40, 20, 3, 0].map((d) => dayOf(NOW - d * DAY - 3_600_000));
    expect((await days(seven.id)).executions).toEqual(all);

    const result = await td.daemon.retention!.sweep(NOW);

    const kept = [3, 0].map((d) => dayOf(NOW - d * DAY - 3_600_000));
    expect(await days(seven.id)).toEqual({ executions: kept, testRecent: kept });
    expect(await days(keep.id)).toEqual({ executions: all, testRecent: all });
    expect((await days(lonely.id)).executions).toEqual([dayOf(NOW - DAY - 3_600_000)]);
    const month400 = dayOf(NOW - 400 * DAY - 3_600_000).slice(0, 7).replace('-', '');
    expect(result.droppedPartitions).toEqual([month400]);
    const bySlug = new Map(result.projects.map((p) => [p.slug, p]));
    expect(bySlug.get('ret-seven')).toMatchObject({ executionDays: 7, executions: 6, testRecent: 6 });
    expect(bySlug.get('ret-keep')).toMatchObject({ executionDays: null, executions: 0, testRecent: 0 });
    expect(bySlug.get('ret-lonely')).toMatchObject({ executionDays: 7, executions: 3 });
    for (const p of [seven, keep, lonely]) expect(await rollups(p.id)).toEqual(before.get(p.id));

    // A second sweep finds nothing more.
    const again = await td.daemon.retention!.sweep(NOW);
    expect(again.droppedPartitions).toEqual([]);
    expect(again.projects.every((p) => p.executions === 0 && p.testRecent === 0)).toBe(true);
  });

  it('runs on its own schedule; the environment’s window applies where a project has none, a project’s own beats it', async () => {
    await ingestAs(seven.token, runAt(10));
    // Restart with a global 30-day window and a fast sweep; no sweep is called by hand.
    td = await td.restart({ env: { SERVICE_EXECUTION_RETENTION_DAYS: '30', SERVICE_RETENTION_SWEEP_MS: '200' } });
    listen(td);
    const sevenKept = [3, 0].map((d) => dayOf(NOW - d * DAY - 3_600_000));
    const keepKept = [20, 3, 0].map((d) => dayOf(NOW - d * DAY - 3_600_000));
    // ret-seven's own 7 days beat the env's 30 (its 10-day-old run goes); ret-keep now has the env's 30.
    await td.waitFor(async () => (await days(seven.id)).executions.length === 2 && (await days(keep.id)).executions.length === 3, 30_000);
    expect((await days(seven.id)).executions).toEqual(sevenKept);
    expect(await days(keep.id)).toEqual({ executions: keepKept, testRecent: keepKept });
    for (const p of [keep, lonely]) expect(await rollups(p.id)).toEqual(before.get(p.id));
    const settings = await admin('GET', `/v1/admin/projects/${keep.slug}/settings`);
    expect(settings.json.retention).toEqual({ executionDays: 30, artifactDays: null });
    expect(settings.json.resolved.sources['retention.rawDays']).toBe('env');
  });
});

describe('artifacts and retention', () => {
  async function upload(token: string, name: string): Promise<number> {
    const bytes = randomBytes(64);
    const res = await td.request('POST', '/v1/artifacts/presign', {
      token,
      body: { idempotencyKey: `art-${randomBytes(4).toString('hex')}`, artifacts: [{ executionIndex: 0, name, contentType: 'image/png', sizeBytes: bytes.length }] },
    });
    if (res.status !== 200) return res.status;
    const put = await fetch(res.json.url, { method: 'PUT', headers: res.json.headers, body: bytes });
    expect(put.status).toBe(200);
    return 200;
  }

  async function objects(projectId: string): Promise<number> {
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const page = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `proj/${projectId}/` }));
    client.destroy();
    return page.KeyCount ?? 0;
  }

  it('turns presign off for one project (404) and prunes objects past the artifact window', async () => {
    // rawDays too: the artifact window is clamped up to the execution window (here the env's 30 otherwise).
    const short = await project('art-short', { retention: { rawDays: 1, artifactDays: 1 } });
    const forever = await project('art-forever');
    const off = await project('art-off', { artifacts: { enabled: false } });
    expect(await upload(short.token, 'a.png')).toBe(200);
    expect(await upload(short.token, 'b.png')).toBe(200);
    expect(await upload(forever.token, 'c.png')).toBe(200);
    expect(await upload(off.token, 'd.png')).toBe(404);
    expect(await objects(short.id)).toBe(2);

    // Today's objects are inside a 1-day window: nothing goes.
    const today = await td.daemon.retention!.sweep(Date.now());
    expect(today.projects.find((p) => p.slug === 'art-short')).toMatchObject({ artifactDays: 1, artifacts: 0 });
    expect(await objects(short.id)).toBe(2);
    // Three days on, they are past it; a project without an artifact window keeps its object.
    const later = await td.daemon.retention!.sweep(Date.now() + 3 * DAY);
    expect(later.projects.find((p) => p.slug === 'art-short')).toMatchObject({ artifacts: 2 });
    expect(later.projects.find((p) => p.slug === 'art-forever')).toMatchObject({ artifactDays: null, artifacts: null });
    expect(await objects(short.id)).toBe(0);
    expect(await objects(forever.id)).toBe(1);
    expect(await new ProjectRepo(td.daemon.store).bySlug('art-off')).not.toBeNull();
  });
});

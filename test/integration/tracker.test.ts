// Tracker issues end to end, against a local HTTP peer playing GitHub's issues API: a test flaky
// for tracker.afterDays gets one issue (POST), the issue follows the score (PATCH), and after a
// restart a second flaky spell of the same test updates that issue instead of opening another; a
// closed issue is reopened when its test flakes again. The restart starts from the tracker's state
// as releases before the storage extension kept it (an LMDB of its own under <data dir>/tracker):
// moved over once, so the issue is still known.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startHttpSink, type HttpSink, type SinkRequest } from '../helpers/peers.js';

const HOUR = 3_600_000;
const START = Date.now() - 5 * 24 * HOUR;
const TESTS = ['cart adds', 'cart total', 'search finds'];
const [A, D] = ['cart adds', 'search finds'];
type Status = 'pass' | 'fail';

let seq = 0;
function run(at: number, statuses: Record<string, Status>, commitSha = 'def5678'): Record<string, unknown> {
  const executions = TESTS.map((title, i) => {
    const status = statuses[title] ?? 'pass';
    return { filePath: `src/${title.split(' ')[0]}.test.ts`, suite: 'checkout', title, status, startedAt: at + i, durationMs: 12, ...(status === 'fail' ? { error: { message: 'boom' } } : {}) };
  });
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `tracker-${process.pid}-${++seq}`,
    resource: { ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push', repository: 'acme/shop' },
    run: { status: executions.some((e) => e.status === 'fail') ? 'failed' : 'passed', startedAt: at },
    executions,
  };
}

/** GitHub's issues API, as much as the tracker uses. */
function github(): Promise<HttpSink> {
  let next = 1;
  return startHttpSink((req) => {
    if (req.method === 'POST' && req.path === '/repos/acme/shop/issues') {
      const number = next++;
      return { status: 201, body: { number, html_url: `https://github.example/acme/shop/issues/${number}`, state: 'open', body: req.json.body } };
    }
    const m = /^\/repos\/acme\/shop\/issues\/(\d+)(\/comments)?$/.exec(req.path);
    if (m && req.method === 'PATCH') return { status: 200, body: { number: Number(m[1]), state: req.json.state ?? 'open' } };
    if (m && req.method === 'POST') return { status: 201, body: { id: 1 } };
    if (req.method === 'GET' && req.path.startsWith('/repos/acme/shop/issues?')) return { status: 200, body: [] };
    return { status: 404, body: { message: 'Not Found' } };
  });
}

/** The tracker's state written back as the tracker kept it before file_storage; component-state removed. */
async function toLegacyLayout(dataDir: string): Promise<void> {
  const stateDir = path.join(dataDir, 'component-state');
  const state = open({ path: stateDir, maxDbs: 1024 });
  const rows = [...state.openDB<unknown, string>({ name: 'exporter_tracker', encoding: 'json' }).getRange()].map(({ key, value }) => ({ key, value }));
  await state.close();
  expect(rows.length).toBeGreaterThan(0);
  const legacy = open({ path: path.join(dataDir, 'tracker'), maxDbs: 2, mapSize: 1024 * 1024 * 1024 });
  const tests = legacy.openDB<unknown, string>({ name: 'tests', encoding: 'json' });
  await legacy.transaction(() => {
    for (const r of rows) void tests.put(r.key, r.value);
  });
  await legacy.close();
  rmSync(stateDir, { recursive: true, force: true });
}

describe('tracker: GitHub issues for persistent flakes', () => {
  let gh: HttpSink;
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  let pipelineFile: string;

  beforeAll(async () => {
    gh = await github();
    // A short sweep so the test need not wait an hour for the wall-clock check.
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-tracker-pipeline-'));
    pipelineFile = path.join(dir, 'pipeline.yaml');
    const yaml = readFileSync(path.resolve(import.meta.dirname, '../../pipelines/default.yaml'), 'utf8').replace(/^ {2}tracker: \{\}.*$/m, '  tracker: { sweepIntervalMs: 100, quietMs: 0 }');
    expect(yaml).toContain('sweepIntervalMs: 100');
    writeFileSync(pipelineFile, yaml);
    td = await startTestDaemon({
      pipelineFile,
      env: { SERVICE_TRACKER_TOKEN: 'ghp_test_token', SERVICE_TRACKER_URL: gh.url, SERVICE_DASHBOARD_URL: 'https://flakes.example.com' },
    });
  });
  afterAll(async () => {
    await td?.close();
    await gh?.close();
    rmSync(path.dirname(pipelineFile), { recursive: true, force: true });
  });

  const posts = (): SinkRequest[] => gh.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/shop/issues');
  const patches = (): SinkRequest[] => gh.requests.filter((r) => r.method === 'PATCH');
  const scoreOf = (r: SinkRequest): number => Number(/\*\*(\d\.\d\d)\*\*/.exec(String(r.json.body))![1]);

  it('opens one issue after afterDays flaky, updates it as the score moves, and never opens a second', async () => {
    td.daemon.runtime.onEvent((e) => events.push(e));
    // Enabled for this project in its settings (the token alone is not enough).
    const enable = await td.request('PATCH', '/v1/admin/projects/default/settings', { token: td.adminToken, body: { tracker: { enabled: true } } });
    expect(enable.status).toBe(200);

    // Five days of history, a run every four hours: A flakes throughout, D only in its last day.
    // One run at a time: a lease's events carry the time of its newest run, so a burst taken in one
    // lease would date the start of A's spell to the end of the burst.
    for (let at = START, i = 0; at < Date.now() - 8 * HOUR; at += 4 * HOUR, i++) {
      const late = at > Date.now() - 30 * HOUR;
      await td.ingest(run(at, { [A]: i % 2 ? 'fail' : 'pass', ...(late ? { [D]: i % 2 ? 'fail' : 'pass' } : {}) }));
    }
    const detected = events.filter((e) => e.type === 'flaky.detected');
    const testA = detected.find((e) => e.data.title === A)!.data.testIdentityId as string;
    expect(detected.some((e) => e.data.title === D)).toBe(true);

    await td.waitFor(async () => posts().length > 0);
    const post = posts()[0]!;
    expect(post.headers.authorization).toBe('Bearer ghp_test_token');
    expect(post.json.title).toBe(`Flaky test: checkout › ${A}`);
    expect(post.json.labels).toEqual(['flaky-test']);
    expect(post.json.body).toContain('`src/cart.test.ts`');
    expect(post.json.body).toContain(`<!-- flakehouse:test:${testA} -->`);
    expect(post.json.body).toContain(`(https://flakes.example.com/projects/default/tests/${testA})`);
    expect(post.json.body).toMatch(/after 3 day\(s\) flaky/);

    // A is fixed: clean runs bring its score down (each is evidence against a ~2% flake rate, so it
    // takes some), and the issue body follows (no state change yet: not proven fixed).
    await td.ingest(...Array.from({ length: 40 }, (_, k) => run(Date.now() - 7 * HOUR + k * 10 * 60_000, {})));
    const update = await td.waitFor(async () => patches().find((p) => p.path === '/repos/acme/shop/issues/1'));
    expect(update.json.state).toBeUndefined();
    expect(update.json.title).toBe(`Flaky test: checkout › ${A}`);
    expect(scoreOf(update)).toBeLessThan(scoreOf(post) - 0.04);

    // After a restart, A breaks (fails every run of new commits: broken, no longer a candidate), then
    // flakes again on a new commit: a second flaky.detected for the same test. The daemon restarts
    // on the old layout: the tracker's state in <data dir>/tracker, no file_storage yet.
    await td.daemon.close();
    await toLegacyLayout(td.dataDir);
    td = await td.restart();
    expect(existsSync(path.join(td.dataDir, 'tracker'))).toBe(false);
    expect(existsSync(path.join(td.dataDir, 'tracker.migrated', 'data.mdb'))).toBe(true);
    td.daemon.runtime.onEvent((e) => events.push(e));
    const before = patches().length;
    for (let k = 0; k < 8; k++) await td.ingest(run(Date.now() - 60_000 + k, { [A]: 'fail' }, `bad${k}000`));
    for (let k = 0; k < 4; k++) await td.ingest(run(Date.now() - 30_000 + k, { [A]: k % 2 ? 'fail' : 'pass' }, 'fed9876'));
    expect(events.filter((e) => e.type === 'flaky.detected' && e.data.testIdentityId === testA).length).toBeGreaterThanOrEqual(2);
    const flakedAgain = events.filter((e) => e.type === 'score.updated' && e.data.testIdentityId === testA).at(-1)!.data.score as number;
    expect(flakedAgain).toBeGreaterThanOrEqual(0.8);
    // The issue the tracker remembered across the restart shows it; nothing new is filed.
    await td.waitFor(async () => patches().slice(before).find((p) => Math.abs(scoreOf(p) - flakedAgain) < 0.006));
    expect(patches().slice(before).every((p) => p.path === '/repos/acme/shop/issues/1')).toBe(true);
    expect(posts()).toHaveLength(1);
    expect(gh.requests.some((r) => r.body.includes(D))).toBe(false);
  }, 120_000);
});

describe('tracker: closing after recoveryDays stable, reopening when it flakes again', () => {
  let gh: HttpSink;
  let td: TestDaemon;
  let pipelineFile: string;

  beforeAll(async () => {
    gh = await github();
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-tracker-close-'));
    pipelineFile = path.join(dir, 'pipeline.yaml');
    writeFileSync(pipelineFile, readFileSync(path.resolve(import.meta.dirname, '../../pipelines/default.yaml'), 'utf8').replace(/^ {2}tracker: \{\}.*$/m, '  tracker: { sweepIntervalMs: 100, quietMs: 0 }'));
    td = await startTestDaemon({ pipelineFile, env: { SERVICE_TRACKER_TOKEN: 'ghp_test_token', SERVICE_TRACKER_URL: gh.url } });
  });
  afterAll(async () => {
    await td?.close();
    await gh?.close();
    rmSync(path.dirname(pipelineFile), { recursive: true, force: true });
  });

  it('closes the issue with a comment once the test has not been flaky for recoveryDays, and reopens that issue', async () => {
    const settings = (body: unknown) => td.request('PATCH', '/v1/admin/projects/default/settings', { token: td.adminToken, body });
    expect((await settings({ tracker: { enabled: true, afterDays: 1, recoveryDays: 1 } })).status).toBe(200);
    // Three days of flaking, six days ago: opened after one day.
    const from = Date.now() - 6 * 24 * HOUR;
    for (let at = from, i = 0; at < from + 3 * 24 * HOUR; at += 4 * HOUR, i++) await td.ingest(run(at, { [A]: i % 2 ? 'fail' : 'pass' }));
    await td.waitFor(async () => gh.requests.some((r) => r.method === 'POST' && r.path === '/repos/acme/shop/issues'), 30_000);
    expect(gh.requests.some((r) => r.method === 'PATCH' && r.json.state === 'closed')).toBe(false);

    // The team decides a score can no longer make a test a candidate: A stops being flaky with its
    // next run, two days ago, which is more than recoveryDays before now.
    expect((await settings({ flaky: { threshold: 1 } })).status).toBe(200);
    await td.ingest(run(Date.now() - 2 * 24 * HOUR, {}));
    const closed = await td.waitFor(async () => gh.requests.find((r) => r.method === 'PATCH' && r.path === '/repos/acme/shop/issues/1' && r.json.state === 'closed'), 30_000);
    expect(closed.headers.authorization).toBe('Bearer ghp_test_token');
    // The closing comment follows the PATCH (a request of its own).
    const comment = await td.waitFor(async () => gh.requests.find((r) => r.method === 'POST' && r.path === '/repos/acme/shop/issues/1/comments'), 30_000);
    expect(comment.json.body).toContain('Stable for 1 day(s)');
    expect(gh.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/shop/issues')).toHaveLength(1);

    // The threshold goes back to inherited and A flakes again on a new commit, from 36 hours ago
    // (more than afterDays): its closed issue is reopened with a comment, never a second issue.
    expect((await settings({ flaky: { threshold: null } })).status).toBe(200);
    const again = Date.now() - 36 * HOUR;
    for (let k = 0; k < 8; k++) await td.ingest(run(again + k * HOUR, { [A]: k % 2 ? 'fail' : 'pass' }, 'fed9876'));
    const reopened = await td.waitFor(async () => gh.requests.find((r) => r.method === 'PATCH' && r.path === '/repos/acme/shop/issues/1' && r.json.state === 'open'), 30_000);
    expect(reopened.json.state_reason).toBe('reopened');
    const reopenComment = await td.waitFor(async () => gh.requests.find((r) => r.method === 'POST' && r.path === '/repos/acme/shop/issues/1/comments' && String(r.json.body).startsWith('Flaky again')), 30_000);
    expect(reopenComment.json.body).toMatch(/^Flaky again \(score [01]\.\d\d\): reopening\.$/);
    expect(gh.requests.filter((r) => r.method === 'POST' && r.path === '/repos/acme/shop/issues')).toHaveLength(1);
  }, 120_000);
});

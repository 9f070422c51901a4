// Project settings (the dashboard layer) end to end: the admin API validates, stores and resolves
// them; a setting changed for one project changes what the pipeline does for that project only,
// through real ingest; dashboard channels live beside the service.yml-synced ones.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

let td: TestDaemon;
const processed = new Set<string>();

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000', SERVICE_ALLOW_PRIVATE_WEBHOOKS: 'true' } });
  td.daemon.runtime.onEvent((e) => {
    if (e.type === 'run.processed') processed.add(String(e.data.receiptId));
  });
});
afterAll(async () => td?.close());

const admin = (method: string, url: string, body?: unknown) => td.request(method, url, { token: td.adminToken, body });

async function project(slug: string): Promise<{ slug: string; token: string }> {
  expect((await admin('POST', '/v1/admin/projects', { slug })).status).toBe(201);
  const t = await admin('POST', `/v1/admin/projects/${slug}/tokens`, { scopes: ['ingest', 'read', 'quarantine'] });
  expect(t.status).toBe(201);
  return { slug, token: t.json.token as string };
}

/** Posts batches with a project's token and waits until the worker has committed every one. */
async function ingestAs(token: string, ...batches: Record<string, unknown>[]): Promise<void> {
  const receipts: string[] = [];
  for (const b of batches) {
    const res = await td.request('POST', '/v1/ingest', { token, body: b });
    expect(res.status, res.text).toBe(202);
    receipts.push(String(res.json.receiptId));
  }
  await td.waitFor(async () => receipts.every((r) => processed.has(r)), 30_000);
}

const T0 = Date.parse('2026-11-10T08:00:00Z');

/** Run r: a test that fails its first attempt and passes the retry in odd runs, a stable test, and one under src/ignored/. */
function run(r: number): Record<string, unknown> {
  const at = T0 + r * 3_600_000;
  const executions: Record<string, unknown>[] = [{ filePath: 'src/stable.test.ts', suite: 's', title: 'stable', status: 'pass', startedAt: at, durationMs: 5 }];
  if (r % 2 === 1) {
    executions.push({ filePath: 'src/flaky.test.ts', suite: 's', title: 'retry flake', status: 'fail', startedAt: at + 1, durationMs: 5, error: { message: 'timeout' } });
    executions.push({ filePath: 'src/flaky.test.ts', suite: 's', title: 'retry flake', status: 'pass', attempt: 2, retryOfIndex: 1, startedAt: at + 2, durationMs: 5 });
  } else executions.push({ filePath: 'src/flaky.test.ts', suite: 's', title: 'retry flake', status: 'pass', startedAt: at + 1, durationMs: 5 });
  executions.push({ filePath: 'src/ignored/legacy.test.ts', suite: 's', title: 'legacy', status: 'pass', startedAt: at + 3, durationMs: 5 });
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `settings-run-${r}-${randomBytes(4).toString('hex')}`,
    resource: { ciProvider: 'github_actions', commitSha: (0xabc000 + r).toString(16).padStart(7, '0'), branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: at },
    executions,
  };
}

async function flakyBoard(token: string): Promise<Map<string, { quarantineCandidate: boolean; quarantined: boolean }>> {
  const res = await td.request('GET', '/v1/flaky?includeQuarantined=true&minScore=0&limit=50', { token });
  expect(res.status).toBe(200);
  return new Map(res.json.items.map((i: { title: string; quarantineCandidate: boolean; quarantined: boolean }) => [i.title, i]));
}

async function lastRunTitles(token: string): Promise<string[]> {
  const runs = await td.request('GET', '/v1/runs?limit=1', { token });
  const detail = await td.request('GET', `/v1/runs/${runs.json.items[0].id}`, { token });
  return [...new Set<string>(detail.json.executions.map((e: { title: string }) => e.title))].sort();
}

describe('admin settings API', () => {
  it('starts empty: every key from the defaults, no retention window', async () => {
    const res = await admin('GET', '/v1/admin/projects/default/settings');
    expect(res.status).toBe(200);
    expect(res.json.settings).toEqual({});
    expect(res.json.version).toBe(0);
    expect(res.json.resolved.config.flaky).toEqual({ threshold: 0.8, minSamples: 5 });
    expect(res.json.resolved.sources['flaky.threshold']).toBe('default');
    expect(res.json.retention).toEqual({ executionDays: null, artifactDays: null });
  });

  it('rejects unknown keys and bad values with 400 invalid_payload naming the path', async () => {
    const unknown = await admin('PUT', '/v1/admin/projects/default/settings', { flaky: { treshold: 0.5 } });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toBe('invalid_payload');
    expect(unknown.json.issues).toEqual([{ path: 'flaky.treshold', message: 'unknown key' }]);
    const bad = await admin('PATCH', '/v1/admin/projects/default/settings', { retention: { rawDays: 0 }, quarantine: { enabled: 'yes' } });
    expect(bad.status).toBe(400);
    expect(bad.json.issues.map((i: { path: string }) => i.path).sort()).toEqual(['quarantine.enabled', 'retention.rawDays']);
    const reporterKey = await admin('PATCH', '/v1/admin/projects/default/settings', { endpoint: 'https://x.example.com' });
    expect(reporterKey.json.issues).toEqual([{ path: 'endpoint', message: 'unknown key' }]);
    // Nothing was stored by the refused writes.
    expect((await admin('GET', '/v1/admin/projects/default/settings')).json.settings).toEqual({});
  });

  it('answers 404 for an unknown project and 401 without the admin token', async () => {
    expect((await admin('GET', '/v1/admin/projects/nope/settings')).status).toBe(404);
    expect((await admin('PATCH', '/v1/admin/projects/nope/settings', { flaky: { threshold: 0.5 } })).json.error).toBe('not_found');
    expect((await td.request('GET', '/v1/admin/projects/default/settings')).status).toBe(401); // a project token is not the admin token
  });

  it('PATCH deep-merges, replaces arrays, null inherits again; PUT replaces; sources follow', async () => {
    const { slug } = await project('settings-api');
    const url = `/v1/admin/projects/${slug}/settings`;
    let res = await admin('PATCH', url, { flaky: { threshold: 0.6 }, ignore: ['a/**', 'b/**'] });
    expect(res.status).toBe(200);
    res = await admin('PATCH', url, { flaky: { minSamples: 3 }, ignore: ['c/**'] });
    expect(res.json.settings).toEqual({ flaky: { threshold: 0.6, minSamples: 3 }, ignore: ['c/**'] });
    expect(res.json.resolved.config.flaky).toEqual({ threshold: 0.6, minSamples: 3 });
    expect(res.json.resolved.sources).toMatchObject({ 'flaky.threshold': 'settings', ignore: 'settings', 'quarantine.enabled': 'default' });
    res = await admin('PATCH', url, { flaky: { threshold: null } });
    expect(res.json.settings).toEqual({ flaky: { minSamples: 3 }, ignore: ['c/**'] });
    expect(res.json.resolved.config.flaky.threshold).toBe(0.8);
    expect(res.json.resolved.sources['flaky.threshold']).toBe('default');
    const version = res.json.version as number;
    res = await admin('PUT', url, { tracker: { enabled: true } });
    expect(res.json.settings).toEqual({ tracker: { enabled: true } });
    expect(res.json.version).toBeGreaterThan(version);
    expect((await admin('GET', url)).json.settings).toEqual({ tracker: { enabled: true } });
  });

  it('keeps dashboard channels in the channel table (source settings), untouched by a config sync', async () => {
    const p = await project('settings-channels');
    const url = `/v1/admin/projects/${p.slug}/settings`;
    const hook = { kind: 'webhook', target: 'https://hooks.example.com/flakes', events: ['flaky_detected'] };
    let res = await admin('PATCH', url, { notifications: { channels: [hook] } });
    expect(res.status).toBe(200);
    expect(res.json.settings.notifications.channels).toEqual([hook]);
    expect(res.json.channels[0].signingSecret).toMatch(/^whsec_[0-9a-f]{48}$/);
    const secret = res.json.channels[0].signingSecret as string;
    expect(res.json.resolved.sources['notifications.channels']).toBe('settings');

    const sync = await td.request('PUT', '/v1/notifications/routing', { token: p.token, body: { channels: [{ kind: 'slack', target: 'https://hooks.slack.com/services/T/B/X' }] } });
    expect(sync.status).toBe(200);
    let list = await td.request('GET', '/v1/notifications/channels', { token: p.token });
    expect(list.json.items.map((c: { source: string; kind: string; signed: boolean }) => [c.source, c.kind, c.signed]).sort()).toEqual([
      ['config', 'slack', false],
      ['settings', 'webhook', true],
    ]);
    // Another PATCH keeps the channel (and its secret); null removes it, the config channel stays.
    res = await admin('PATCH', url, { tracker: { afterDays: 5 } });
    expect(res.json.channels.map((c: { signingSecret: string }) => c.signingSecret)).toEqual([secret]);
    res = await admin('PATCH', url, { notifications: { channels: null } });
    expect(res.json.settings).toEqual({ tracker: { afterDays: 5 } });
    list = await td.request('GET', '/v1/notifications/channels', { token: p.token });
    expect(list.json.items.map((c: { source: string }) => c.source)).toEqual(['config']);
  });

  it('gives a webhook synced from service.yml a signing secret, kept across syncs and shown to the admin', async () => {
    const p = await project('config-webhook');
    const hook = { kind: 'webhook', target: 'https://hooks.example.com/from-config' };
    expect((await td.request('PUT', '/v1/notifications/routing', { token: p.token, body: { channels: [hook] } })).status).toBe(200);
    const first = await admin('GET', `/v1/admin/projects/${p.slug}/settings`);
    expect(first.json.configChannels).toHaveLength(1);
    const secret = first.json.configChannels[0].signingSecret as string;
    expect(secret).toMatch(/^whsec_[0-9a-f]{48}$/);
    // The next CI run syncs the same file: same channel, same secret; the public list never shows it.
    expect((await td.request('PUT', '/v1/notifications/routing', { token: p.token, body: { channels: [hook, { kind: 'slack', target: 'https://hooks.slack.com/services/T/B/Y' }] } })).status).toBe(200);
    const second = await admin('GET', `/v1/admin/projects/${p.slug}/settings`);
    expect(second.json.configChannels.find((c: { kind: string }) => c.kind === 'webhook').signingSecret).toBe(secret);
    expect(second.json.configChannels.find((c: { kind: string }) => c.kind === 'slack').signingSecret).toBeNull();
    const list = await td.request('GET', '/v1/notifications/channels', { token: p.token });
    expect(JSON.stringify(list.json)).not.toContain(secret);
  });
});

describe('per-project policy through real ingest', () => {
  it('quarantine, minSamples and ignore set for one project change that project only', async () => {
    // A: automatic quarantine on, and src/ignored/ left out. B: quarantine on too, but it wants 50
    // samples before trusting a score. `default` keeps service.yml (quarantine off).
    const a = await project('policy-a');
    const b = await project('policy-b');
    expect((await admin('PATCH', `/v1/admin/projects/${a.slug}/settings`, { quarantine: { enabled: true }, ignore: ['src/ignored/**'] })).status).toBe(200);
    expect((await admin('PATCH', `/v1/admin/projects/${b.slug}/settings`, { quarantine: { enabled: true }, flaky: { minSamples: 50 } })).status).toBe(200);
    for (const token of [a.token, b.token, td.token]) await ingestAs(token, ...Array.from({ length: 8 }, (_, i) => run(i + 1)));

    const boardA = await flakyBoard(a.token);
    const boardB = await flakyBoard(b.token);
    const boardDefault = await flakyBoard(td.token);
    expect(boardA.get('retry flake')).toMatchObject({ quarantineCandidate: true, quarantined: true });
    expect(boardB.get('retry flake')).toMatchObject({ quarantineCandidate: false, quarantined: false });
    expect(boardDefault.get('retry flake')).toMatchObject({ quarantineCandidate: true, quarantined: false });
    // The ignored file never reached storage in A; the others have it.
    expect(await lastRunTitles(a.token)).toEqual(['retry flake', 'stable']);
    expect(await lastRunTitles(b.token)).toEqual(['legacy', 'retry flake', 'stable']);
    expect(await lastRunTitles(td.token)).toEqual(['legacy', 'retry flake', 'stable']);

    // A's cost rates price A's health page; B keeps the defaults.
    await admin('PATCH', `/v1/admin/projects/${a.slug}/settings`, { cost: { developerHour: 150 } });
    const costA = (await td.request('GET', '/v1/health?days=30', { token: a.token })).json.cost;
    const costB = (await td.request('GET', '/v1/health?days=30', { token: b.token })).json.cost;
    expect(costA.rates.developerHour).toBe(150);
    expect(costB.rates.developerHour).toBe(75);
    expect(costA.flakyOccurrences).toBeGreaterThan(0);
    expect(costA.peopleSpend).toBeCloseTo(2 * costB.peopleSpend, 4); // same history, double the rate

    // B's minSamples back to the default (null inherits): its next scoring makes the test a candidate, quarantined.
    await admin('PATCH', `/v1/admin/projects/${b.slug}/settings`, { flaky: { minSamples: null } });
    await ingestAs(b.token, run(9));
    expect((await flakyBoard(b.token)).get('retry flake')).toMatchObject({ quarantineCandidate: true, quarantined: true });
  });
});

// GET /v1/quarantine: the tests quarantined by hand and by the scorer, with the keys a runner
// matches on (the fingerprints equal what the client computes from an execution), a strong ETag
// answered by 304, the ingest or read scope, and released tests gone from the list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionFingerprint } from '../../client/src/contract/mute.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const T0 = Date.parse('2026-11-01T08:00:00Z');
const FILE = 'src/checkout.test.ts';
const PW = { project: 'chromium' };

type Exec = Record<string, unknown>;
const exec = (title: string, status: string, at: number, extra: Exec = {}): Exec => ({ filePath: FILE, suite: 'checkout', title, status, startedAt: at, durationMs: 20, ...(status === 'fail' ? { error: { message: `${title} failed` } } : {}), ...extra });

/** Run r: `retry flake` fails its first attempt every other run and passes on the retry. */
function runBody(r: number): Record<string, unknown> {
  const at = T0 + r * 3_600_000;
  const executions: Exec[] = [exec('stable', 'pass', at), exec('pays by card', 'pass', at + 1, { params: PW })];
  if (r % 2 === 1) executions.push(exec('retry flake', 'fail', at + 2), exec('retry flake', 'pass', at + 3, { attempt: 2, retryOfIndex: 2 }));
  else executions.push(exec('retry flake', 'pass', at + 2));
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `quarantine-list-${r}`,
    resource: { ciProvider: 'github_actions', commitSha: (0xabc0000 + r).toString(16), branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: at },
    executions,
  };
}

describe('GET /v1/quarantine', () => {
  let td: TestDaemon;
  const ids = new Map<string, string>();
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_QUARANTINE_ENABLED: 'true' } });
    // Posted together: the scorer folds the runs in by start time whether one lease takes them or
    // many, and `retry flake` (flaky in every other run: never two clean runs in a row, against a cooldown of 20) ends up
    // automatically quarantined either way; the cases read only that end state.
    await td.ingest(...Array.from({ length: 30 }, (_, i) => runBody(i + 1)));
    const runs = await td.request('GET', '/v1/runs?limit=1');
    const detail = await td.request('GET', `/v1/runs/${runs.json.items[0].id}`);
    for (const e of detail.json.executions) ids.set(e.title, e.testIdentityId);
    for (const scope of ['ingest', 'read', 'quarantine']) {
      const res = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: [scope] } });
      expect(res.status).toBe(201);
      tokens[scope] = res.json.token;
    }
  }, 120_000);

  afterAll(async () => td?.close());

  it('answers the ingest and read scopes, refuses others and no token', async () => {
    expect((await td.request('GET', '/v1/quarantine', { token: tokens.ingest })).status).toBe(200);
    expect((await td.request('GET', '/v1/quarantine', { token: tokens.read })).status).toBe(200);
    const wrong = await td.request('GET', '/v1/quarantine', { token: tokens.quarantine });
    expect(wrong.status).toBe(403);
    expect(wrong.json.error).toBe('insufficient_scope');
    expect((await td.request('GET', '/v1/quarantine', { token: null })).status).toBe(401);
  });

  it('lists the automatic and the manual quarantines with their keys, reason, source and since', async () => {
    // The scorer quarantined the flake on its own.
    const auto = await td.request('GET', `/v1/tests/${ids.get('retry flake')}`);
    expect(auto.json).toMatchObject({ quarantined: true, quarantineOverride: null });
    const decided = await td.request('POST', `/v1/tests/${ids.get('pays by card')}/quarantine`, { body: { decision: 'quarantined', reason: 'card sandbox is down' } });
    expect(decided.status).toBe(200);

    const res = await td.request('GET', '/v1/quarantine', { token: tokens.ingest });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const items = res.json.items;
    expect(items.map((i: any) => i.title)).toEqual(['pays by card', 'retry flake']);
    const [manual, flake] = items;
    expect(manual).toMatchObject({ testIdentityId: ids.get('pays by card'), filePath: FILE, suite: 'checkout', params: PW, reason: 'card sandbox is down', source: 'manual' });
    expect(Date.parse(manual.since)).toBeGreaterThan(Date.now() - 60_000);
    expect(flake).toMatchObject({ testIdentityId: ids.get('retry flake'), filePath: FILE, suite: 'checkout', params: null, source: 'auto' });
    expect(flake.reason).toMatch(/^auto/);
    expect(flake.since).toEqual(expect.any(String));
    // A runner matches by computing the same fingerprint from its own result.
    expect(manual.fingerprints[0]).toBe(executionFingerprint({ filePath: FILE, suite: 'checkout', title: 'pays by card', params: PW }));
    expect(flake.fingerprints[0]).toBe(executionFingerprint({ filePath: `./${FILE}`, suite: 'checkout', title: 'retry flake' }));
    // The stable test is not on the list.
    expect(items.some((i: any) => i.testIdentityId === ids.get('stable'))).toBe(false);
  });

  it('sends a strong ETag from the content: If-None-Match answers 304 until the list changes', async () => {
    const first = await td.request('GET', '/v1/quarantine');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]{32}"$/);
    expect((await td.request('GET', '/v1/quarantine')).headers.get('etag')).toBe(etag);
    const same = await td.request('GET', '/v1/quarantine', { headers: { 'if-none-match': etag } });
    expect(same.status).toBe(304);
    expect(same.text).toBe('');
    expect(same.headers.get('etag')).toBe(etag);
    expect((await td.request('GET', '/v1/quarantine', { headers: { 'if-none-match': `"other", W/${etag}` } })).status).toBe(304);
    expect((await td.request('GET', '/v1/quarantine', { headers: { 'if-none-match': '"other"' } })).status).toBe(200);

    // Released by hand: the manual one leaves the list, the old tag no longer matches.
    expect((await td.request('POST', `/v1/tests/${ids.get('pays by card')}/quarantine`, { body: { decision: 'released' } })).status).toBe(200);
    const changed = await td.request('GET', '/v1/quarantine', { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.json.items.map((i: any) => i.title)).toEqual(['retry flake']);

    // A person releases the automatic one too: the list is empty.
    expect((await td.request('POST', `/v1/tests/${ids.get('retry flake')}/quarantine`, { body: { decision: 'released' } })).status).toBe(200);
    const empty = await td.request('GET', '/v1/quarantine');
    expect(empty.json).toEqual({ items: [] });
    // Quarantined by hand again: back on the list, as manual; the list agrees with the test page.
    expect((await td.request('POST', `/v1/tests/${ids.get('retry flake')}/quarantine`, { body: { decision: 'quarantined' } })).status).toBe(200);
    const back = await td.request('GET', '/v1/quarantine');
    expect(back.json.items.map((i: any) => [i.title, i.source, i.reason])).toEqual([['retry flake', 'manual', 'manual']]);
    // Handed back to the scorer: whatever it decides, the list says what the test page says.
    expect((await td.request('POST', `/v1/tests/${ids.get('retry flake')}/quarantine`, { body: { decision: 'auto' } })).status).toBe(200);
    await td.ingest(runBody(31));
    const page = await td.request('GET', `/v1/tests/${ids.get('retry flake')}`);
    const listed = (await td.request('GET', '/v1/quarantine')).json.items.map((i: any) => i.title);
    expect(listed).toEqual(page.json.quarantined ? ['retry flake'] : []);
  });

  it("shows no other project's quarantines", async () => {
    const other = await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug: 'other' } });
    expect(other.status).toBeLessThan(300);
    const tok = await td.request('POST', '/v1/admin/projects/other/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    const res = await td.request('GET', '/v1/quarantine', { token: tok.json.token });
    expect(res.json).toEqual({ items: [] });
  });
});

// A 40-run history through the API: the flaky tests top /v1/flaky as candidates with reason codes,
// the broken test and the victims of outages do not; quarantine by hand and automatically.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const T0 = Date.parse('2026-11-01T08:00:00Z');
const STABLE = Array.from({ length: 12 }, (_, i) => `stable ${i}`);
const OUTAGE_RUNS = new Set([15, 27]);

type Exec = { filePath: string; suite: string; title: string; status: string; attempt?: number; retryOfIndex?: number; startedAt: number; durationMs: number; error?: { message: string } };

function exec(title: string, status: string, at: number, extra: Partial<Exec> = {}): Exec {
  return {
    filePath: title.startsWith('stable') ? 'src/stable.test.ts' : `src/${title.split(' ')[0]}.test.ts`,
    suite: 'suite',
    title,
    status,
    startedAt: at,
    durationMs: 20,
    ...(status === 'fail' ? { error: { message: `${title} failed: expected 1 to be 2` } } : {}),
    ...extra,
  };
}

/** Run r of the history; `rerun` repeats the commit of the run before. */
function runBody(r: number, opts: { rerun?: boolean; key?: string } = {}): Record<string, unknown> {
  const at = T0 + r * 3_600_000 + (opts.rerun ? 600_000 : 0);
  const commit = (0xabc0000 + (opts.rerun ? r - 1 : r)).toString(16);
  const outage = OUTAGE_RUNS.has(r);
  const executions: Exec[] = STABLE.map((t, i) => exec(t, outage && i < 9 ? 'fail' : 'pass', at + i));
  // retry flake: fails on its first attempt every 4th run, passes on the retry
  if (r % 4 === 1) {
    executions.push(exec('retry flake', 'fail', at + 100));
    executions.push(exec('retry flake', 'pass', at + 101, { attempt: 2, retryOfIndex: executions.length - 1 }));
  } else executions.push(exec('retry flake', outage ? 'fail' : 'pass', at + 100));
  // commit flake: its result differs between a run and the rerun of the same commit
  executions.push(exec('commit flake', opts.rerun ? 'pass' : r % 5 === 0 ? 'fail' : 'pass', at + 200));
  // broken from run 10 on
  executions.push(exec('broken test', r >= 10 ? 'fail' : 'pass', at + 300));
  const failed = executions.some((e) => e.status === 'fail' && !executions.some((x) => x.retryOfIndex !== undefined && executions[x.retryOfIndex] === e));
  return {
    contractVersion: '0.1.0',
    idempotencyKey: opts.key ?? `history-${r}${opts.rerun ? '-rerun' : ''}`,
    resource: { ciProvider: 'github_actions', commitSha: commit.padStart(7, '0'), branch: 'main', trigger: 'push' },
    run: { status: failed ? 'failed' : 'passed', startedAt: at },
    executions,
  };
}

describe('flakiness intelligence through the API', () => {
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  const ids = new Map<string, string>();

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_QUARANTINE_ENABLED: 'true' } });
    td.daemon.runtime.onEvent((e) => events.push(e));
    for (let r = 1; r <= 40; r++) {
      expect((await td.request('POST', '/v1/ingest', { body: runBody(r) })).status).toBe(202);
      if (r % 5 === 0) expect((await td.request('POST', '/v1/ingest', { body: runBody(r + 1, { rerun: true, key: `history-${r}-rerun` }) })).status).toBe(202);
    }
    await td.waitFor(async () => td.daemon.queue.depth() === 0 && events.filter((e) => e.type === 'run.processed').length >= 48, 60_000);
    const runs = await td.request('GET', '/v1/runs?limit=1');
    const detail = await td.request('GET', `/v1/runs/${runs.json.items[0].id}`);
    for (const e of detail.json.executions) ids.set(e.title, e.testIdentityId);
  }, 120_000);

  afterAll(async () => td?.close());

  it('puts exactly the flaky tests on top of /v1/flaky as candidates, with reason codes', async () => {
    const res = await td.request('GET', '/v1/flaky?includeQuarantined=true&limit=50');
    expect(res.status).toBe(200);
    const candidates = res.json.items.filter((i: { quarantineCandidate: boolean }) => i.quarantineCandidate).map((i: { title: string }) => i.title);
    expect(candidates.sort()).toEqual(['commit flake', 'retry flake']);
    expect(res.json.items.slice(0, 2).map((i: { title: string }) => i.title).sort()).toEqual(['commit flake', 'retry flake']);
    const retry = await td.request('GET', `/v1/tests/${ids.get('retry flake')}`);
    expect(retry.json.reasonCodes.map((r: { code: string }) => r.code)).toContain('PASS_ON_RERUN');
    const commit = await td.request('GET', `/v1/tests/${ids.get('commit flake')}`);
    expect(commit.json.reasonCodes.map((r: { code: string }) => r.code)).toContain('SAME_SHA_VARIANCE');
    expect(events.filter((e) => e.type === 'flaky.detected').map((e) => e.data.title).sort()).toEqual(['commit flake', 'retry flake']);
  });

  it('keeps the broken test and the victims of outages off the candidates', async () => {
    for (const title of ['broken test', 'stable 0', 'stable 5']) {
      const t = await td.request('GET', `/v1/tests/${ids.get(title)}`);
      expect(t.status).toBe(200);
      expect(t.json.score).toBeLessThan(0.8);
      expect(t.json.quarantined).toBe(false);
    }
  });

  it('shows a test with history, oldest first, and 404s for unknown or malformed ids', async () => {
    const t = await td.request('GET', `/v1/tests/${ids.get('retry flake')}?historyLimit=5`);
    expect(t.json.history).toHaveLength(5);
    const times = t.json.history.map((h: { startedAt: string }) => Date.parse(h.startedAt));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect((await td.request('GET', '/v1/tests/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await td.request('GET', '/v1/tests/nope')).status).toBe(404);
  });

  it('auto-quarantines the candidates (quarantine.enabled); the board lists them unless includeQuarantined=false', async () => {
    const t = await td.request('GET', `/v1/tests/${ids.get('retry flake')}`);
    expect(t.json.quarantined).toBe(true);
    expect(t.json.quarantineReason).toMatch(/^auto/);
    expect(t.json.quarantineOverride).toBeNull();
    // Flakemetry's default: quarantined tests are on the board, marked.
    const board = await td.request('GET', '/v1/flaky');
    expect(board.json.items.find((i: { title: string }) => i.title === 'retry flake')).toMatchObject({ quarantined: true });
    const unquarantined = await td.request('GET', '/v1/flaky?includeQuarantined=false');
    expect(unquarantined.json.items.map((i: { title: string }) => i.title)).not.toContain('retry flake');
    expect(events.some((e) => e.type === 'quarantine.changed' && e.data.testIdentityId === ids.get('retry flake') && e.data.quarantined === true)).toBe(true);
  });

  it('releases an auto-quarantined test after cooldownRuns clean runs (a retry-pass is not clean)', async () => {
    td = await td.restart({ env: { SERVICE_QUARANTINE_COOLDOWN_RUNS: '3' } });
    td.daemon.runtime.onEvent((e) => events.push(e));
    const id = ids.get('retry flake')!;
    const clean = (r: number, retry: boolean): Record<string, unknown> => {
      const at = T0 + r * 3_600_000;
      const executions: Exec[] = retry
        ? [exec('retry flake', 'fail', at), exec('retry flake', 'pass', at + 1, { attempt: 2, retryOfIndex: 0 })]
        : [exec('retry flake', 'pass', at)];
      return { contractVersion: '0.1.0', idempotencyKey: `clean-${r}`, resource: { ciProvider: 'github_actions', commitSha: (0xdef0000 + r).toString(16), branch: 'main', trigger: 'push' }, run: { status: 'passed', startedAt: at }, executions };
    };
    let r = 100;
    for (const retry of [false, false, true, false, false]) {
      await td.request('POST', '/v1/ingest', { body: clean(r++, retry) });
      await td.settled();
    }
    // 2 clean, a retry-pass resets, 2 clean: still quarantined (cooldown 3).
    expect((await td.request('GET', `/v1/tests/${id}`)).json.quarantined).toBe(true);
    await td.request('POST', '/v1/ingest', { body: clean(r++, false) });
    await td.waitFor(async () => (await td.request('GET', `/v1/tests/${id}`)).json.quarantined === false);
    await td.waitFor(async () => events.some((e) => e.type === 'quarantine.changed' && e.data.testIdentityId === id && e.data.quarantined === false));
    // Still a candidate on the old evidence, but not quarantined again until it flakes anew.
    await td.request('POST', '/v1/ingest', { body: clean(r++, false) });
    await td.settled();
    expect((await td.request('GET', `/v1/tests/${id}`)).json.quarantined).toBe(false);
    await td.request('POST', '/v1/ingest', { body: clean(r++, true) });
    await td.waitFor(async () => (await td.request('GET', `/v1/tests/${id}`)).json.quarantined === true);
  });

  it('quarantines by hand with the quarantine scope; overrides stop the scorer until auto', async () => {
    const id = ids.get('stable 3')!;
    const readOnly = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    const denied = await td.request('POST', `/v1/tests/${id}/quarantine`, { token: readOnly.json.token, body: { decision: 'quarantined' } });
    expect(denied.status).toBe(403);
    expect(denied.json.error).toBe('insufficient_scope');

    const q = await td.request('POST', `/v1/tests/${id}/quarantine`, { body: { decision: 'quarantined', reason: 'flaky on CI only' } });
    expect(q.json).toEqual({ quarantined: true, override: 'quarantined', changed: true });
    expect((await td.request('POST', `/v1/tests/${id}/quarantine`, { body: { decision: 'quarantined' } })).json.changed).toBe(false);
    const shown = await td.request('GET', `/v1/tests/${id}`);
    expect(shown.json).toMatchObject({ quarantined: true, quarantineReason: 'flaky on CI only', quarantineOverride: 'quarantined' });
    expect(shown.json.quarantineOverrideAt).toMatch(/Z$/);

    // `auto` hands it back: the state stays until the scorer runs again.
    const auto = await td.request('POST', `/v1/tests/${id}/quarantine`, { body: { decision: 'auto' } });
    expect(auto.json).toEqual({ quarantined: true, override: null, changed: true });
    const released = await td.request('POST', `/v1/tests/${id}/quarantine`, { body: { decision: 'released' } });
    expect(released.json).toEqual({ quarantined: false, override: 'released', changed: true });

    expect((await td.request('POST', `/v1/tests/${id}/quarantine`, { body: { decision: 'maybe' } })).status).toBe(400);
    expect((await td.request('POST', '/v1/tests/00000000-0000-4000-8000-000000000000/quarantine', { body: { decision: 'quarantined' } })).status).toBe(404);
  });

  it('never shows another project its tests (404)', async () => {
    await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug: 'other' } });
    const other = await td.request('POST', '/v1/admin/projects/other/tokens', { token: td.adminToken, body: { scopes: ['read', 'quarantine'] } });
    const id = ids.get('retry flake')!;
    expect((await td.request('GET', `/v1/tests/${id}`, { token: other.json.token })).status).toBe(404);
    expect((await td.request('POST', `/v1/tests/${id}/quarantine`, { token: other.json.token, body: { decision: 'released' } })).status).toBe(404);
    expect((await td.request('GET', '/v1/flaky', { token: other.json.token })).json.items).toEqual([]);
  });
});

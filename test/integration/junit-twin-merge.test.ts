// Legacy JUnit twins already stored are merged (issue 39, "duplicates already stored are stitched"),
// through the real daemon (real chDB, real HTTP). A project that sent both the reporter's results
// and its JUnit file before client/src/contract/junit-names.ts has each such test twice: under the reporters'
// names (file `src/math.test.ts`, suite `math > division`, title `divides`) and under the pre-fix
// JUnit reading (file `src/math/test/ts`, suite `src/math.test.ts`, title `math > division >
// divides`). Both are stored here through the native API (the reporter's names first, so the
// identity processor's join on first sight does not apply), the old twin is quarantined, then
// POST /v1/admin/identities/merge-junit-twins merges them (a dry run first), and the start-up pass
// merges another pair on a restart.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { fingerprint } from '../../client/src/contract/identity.js';
import { main } from '../../src/main/cli.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { captureLogs } from '../helpers/observe.js';

const LEGACY = { filePath: 'src/math/test/ts', suite: 'src/math.test.ts', title: 'math > division > divides' };
const CURRENT = { filePath: 'src/math.test.ts', suite: 'math > division', title: 'divides' };
// Playwright's JUnit, read before the fix: the same with ' › '. Merged by the start-up pass.
const PW_LEGACY = { filePath: 'e2e/cart/spec/ts', suite: 'e2e/cart.spec.ts', title: 'cart › checkout › pays' };
const PW_CURRENT = { filePath: 'e2e/cart.spec.ts', suite: 'cart > checkout', title: 'pays' };
// A test with no twin: never part of a pair.
const OTHER = { filePath: 'src/other.test.ts', suite: 'other', title: 'works' };

const HOUR = 3_600_000;
let shaSeq = 0;
const sha = (): string => (0xbe77e00 + shaSeq++).toString(16).padEnd(40, '0');

type Names = typeof LEGACY;
interface RunExecution extends Names {
  testIdentityId: string;
}
interface BoardItem extends Names {
  testIdentityId: string;
}
interface MergeBody {
  project: string;
  dryRun: boolean;
  found: number;
  merged: number;
  pairs: { from: Names & { testIdentityId: string }; into: Names & { testIdentityId: string }; quarantineCarried: boolean }[];
}

describe('legacy JUnit twins already stored are merged into the test the reporters name', () => {
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  let keptId = '';
  let twinId = '';
  /** A PR commit stored before the merge, both names failing in it (two shards). */
  const prCommitBefore = sha();
  const PR = { branch: 'feature/before', baseBranch: 'main', prNumber: 8, trigger: 'pull_request' };
  const runs: { legacy: string[]; reporter: string[] } = { legacy: [], reporter: [] };

  beforeAll(async () => {
    td = await startTestDaemon();
    td.daemon.runtime.onEvent((e) => events.push(e));
  });
  afterAll(async () => td?.close());

  function native(commitSha: string, at: number, executions: (Names & { status: string })[], resource: object = {}): Record<string, unknown> {
    return nativeBatch({
      resource: { commitSha, branch: 'main', trigger: 'push', ...resource },
      run: { status: executions.some((e) => e.status === 'fail') ? 'failed' : 'passed', startedAt: new Date(at).toISOString() },
      executions: executions.map((e, i) => ({ ...e, startedAt: new Date(at + 1 + i).toISOString(), durationMs: 5 })),
    });
  }

  async function ingestNative(batch: Record<string, unknown>): Promise<string> {
    const [receiptId] = await td.ingest(batch);
    const processed = await td.waitFor(async () => events.find((e) => e.type === 'run.processed' && e.data.receiptId === receiptId), 30_000);
    await td.settled(30_000);
    return processed.data.runId as string;
  }

  async function executionsOf(runId: string): Promise<RunExecution[]> {
    const res = await td.request('GET', `/v1/runs/${runId}`);
    expect(res.status).toBe(200);
    return res.json.executions as RunExecution[];
  }

  async function idOf(runId: string, title: string): Promise<string> {
    return (await executionsOf(runId)).find((e) => e.title === title)!.testIdentityId;
  }

  async function board(): Promise<BoardItem[]> {
    const res = await td.request('GET', '/v1/flaky?limit=500&includeQuarantined=true');
    expect(res.status, res.text).toBe(200);
    return res.json.items as BoardItem[];
  }

  async function merge(query: string): Promise<MergeBody> {
    const res = await td.request('POST', `/v1/admin/identities/merge-junit-twins?${query}`, { token: td.adminToken });
    expect(res.status, res.text).toBe(200);
    return res.json as MergeBody;
  }

  async function cli(...args: string[]): Promise<{ code: number; out: string }> {
    const stdout = new PassThrough();
    const chunks: Buffer[] = [];
    stdout.on('data', (c: Buffer) => chunks.push(c));
    const io = { stdin: new PassThrough(), stdout, stderr: new PassThrough() };
    const code = await main(args, { SERVICE_ENDPOINT: td.url, SERVICE_ADMIN_TOKEN: td.adminToken, SERVICE_DATA_DIR: td.dataDir }, td.dataDir, io);
    return { code, out: Buffer.concat(chunks).toString('utf8') };
  }

  it('stores both identities: the reporter’s names and the pre-fix JUnit reading, the twin quarantined', async () => {
    const start = Date.now() - 20 * HOUR;
    // The reporter first: its names are stored before the old reading, as in a project that sent both.
    runs.reporter.push(await ingestNative(native(sha(), start, [{ ...CURRENT, status: 'pass' }, { ...OTHER, status: 'pass' }])));
    for (let i = 0; i < 3; i++) {
      runs.legacy.push(await ingestNative(native(sha(), start + (i + 1) * HOUR, [{ ...LEGACY, status: i === 1 ? 'fail' : 'pass' }])));
      runs.reporter.push(await ingestNative(native(sha(), start + (i + 1) * HOUR + 60_000, [{ ...CURRENT, status: 'pass' }, { ...OTHER, status: 'pass' }])));
    }
    await ingestNative(native(prCommitBefore, start + 5 * HOUR, [{ ...LEGACY, status: 'fail' }], { ...PR, shardIndex: 1, shardTotal: 2 }));
    await ingestNative(native(prCommitBefore, start + 5 * HOUR + 1000, [{ ...CURRENT, status: 'fail' }], { ...PR, shardIndex: 2, shardTotal: 2 }));
    keptId = await idOf(runs.reporter[0]!, CURRENT.title);
    twinId = await idOf(runs.legacy[0]!, LEGACY.title);
    expect(twinId).not.toBe(keptId);
    const q = await td.request('POST', `/v1/tests/${twinId}/quarantine`, { body: { decision: 'quarantined', reason: 'flaky on CI' } });
    expect(q.status).toBe(200);
    // Two tests on the board: the gap this closes.
    const before = (await board()).filter((t) => t.title === CURRENT.title || t.title === LEGACY.title);
    expect(before.map((t) => t.testIdentityId).sort()).toEqual([keptId, twinId].sort());
  });

  it('refuses an unknown project and a project token', async () => {
    const unknown = await td.request('POST', '/v1/admin/identities/merge-junit-twins?project=nope', { token: td.adminToken });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ error: 'not_found' });
    const notAdmin = await td.request('POST', '/v1/admin/identities/merge-junit-twins?project=default');
    expect(notAdmin.status).toBe(401);
  });

  it('a dry run lists the pair and changes nothing', async () => {
    const dry = await merge('project=default&dryRun=true');
    expect(dry).toEqual({
      project: 'default',
      dryRun: true,
      found: 1,
      merged: 0,
      pairs: [{ from: { testIdentityId: twinId, ...LEGACY }, into: { testIdentityId: keptId, ...CURRENT }, quarantineCarried: true }],
    });
    const after = (await board()).filter((t) => t.title === CURRENT.title || t.title === LEGACY.title);
    expect(after).toHaveLength(2);
    expect((await td.request('GET', `/v1/tests/${keptId}`)).json.quarantined).toBe(false);
    // The CLI calls the same route.
    const viaCli = await cli('identities', 'merge-junit-twins', '--project', 'default', '--dry-run');
    expect(viaCli.code).toBe(0);
    expect(viaCli.out).toContain(`${LEGACY.filePath} | ${LEGACY.suite} | ${LEGACY.title}  →  ${CURRENT.filePath} | ${CURRENT.suite} | ${CURRENT.title}  (quarantine carried)`);
    expect(viaCli.out).toContain('1 pair(s) would be merged (dry run: nothing changed)');
    expect((await board()).filter((t) => t.title === CURRENT.title || t.title === LEGACY.title)).toHaveLength(2);
  });

  it('merges: one test on the board, the quarantine carried, both histories on the kept test', async () => {
    const applied = await merge('project=default');
    expect(applied).toMatchObject({ dryRun: false, found: 1, merged: 1, pairs: [{ from: { testIdentityId: twinId }, into: { testIdentityId: keptId }, quarantineCarried: true }] });

    const divides = (await board()).filter((t) => t.title === CURRENT.title || t.title === LEGACY.title);
    expect(divides).toEqual([expect.objectContaining({ testIdentityId: keptId, ...CURRENT })]);
    expect((await board()).some((t) => t.title === OTHER.title)).toBe(true);

    const list = (await td.request('GET', '/v1/quarantine')).json.items as (BoardItem & { fingerprints: string[]; reason: string })[];
    const entries = list.filter((q) => q.title === CURRENT.title || q.title === LEGACY.title);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ testIdentityId: keptId, ...CURRENT });
    // The runner matches the old JUnit names too.
    expect(entries[0]!.fingerprints).toEqual(expect.arrayContaining([fingerprint(CURRENT), fingerprint(LEGACY)]));
    expect(entries[0]!.reason).toContain('legacy JUnit twin');
    expect(entries[0]!.reason).toContain('flaky on CI');

    const detail = (await td.request('GET', `/v1/tests/${keptId}?historyLimit=200`)).json;
    expect(detail).toMatchObject({ ...CURRENT, quarantined: true, quarantineOverride: 'quarantined' });
    const historyRuns = new Set((detail.history as { runId: string }[]).map((h) => h.runId));
    for (const r of [...runs.legacy, ...runs.reporter]) expect(historyRuns.has(r), r).toBe(true);
    // The dashboard's quarantine log: the product's own write path, an event with the reason.
    const log = await td.request('GET', `/trpc/test.quarantineLog?input=${encodeURIComponent(JSON.stringify({ testIdentityId: keptId }))}`);
    expect(log.status, log.text).toBe(200);
    expect(log.json.result.data).toMatchObject({ quarantined: true, decision: { override: 'quarantined' } });
    expect((log.json.result.data.events as { kind: string }[]).some((e) => e.kind === 'quarantined')).toBe(true);
    expect(events.some((e) => e.type === 'quarantine.changed' && e.data.testIdentityId === keptId && e.data.quarantined === true)).toBe(true);
    // The health page and the badges count the test once: the backlog holds one quarantined test.
    const health = await td.request('GET', '/v1/health?days=30');
    expect(health.status, health.text).toBe(200);
    expect(health.json.quarantine.currentBacklog).toBe(1);
  });

  it('resolves a new execution under the old JUnit names to the kept test', async () => {
    const run = await ingestNative(native(sha(), Date.now() - 2 * HOUR, [{ ...LEGACY, status: 'pass' }]));
    expect(await idOf(run, LEGACY.title)).toBe(keptId);
    const detail = (await td.request('GET', `/v1/tests/${keptId}?historyLimit=200`)).json;
    expect((detail.history as { runId: string }[]).some((h) => h.runId === run)).toBe(true);
  });

  it('has the PR gate count it once, quarantined', async () => {
    const commit = sha();
    const pr = { branch: 'feature/z', baseBranch: 'main', prNumber: 9, trigger: 'pull_request' };
    await ingestNative(native(commit, Date.now() - HOUR, [{ ...LEGACY, status: 'fail' }], { ...pr, shardIndex: 1, shardTotal: 2 }));
    await ingestNative(native(commit, Date.now() - HOUR + 1000, [{ ...CURRENT, status: 'fail' }], { ...pr, shardIndex: 2, shardTotal: 2 }));
    const res = await td.request('GET', `/v1/runs/gate?commitSha=${commit}`);
    expect(res.status, res.text).toBe(200);
    const tests = (res.json.gate.tests as { testIdentityId: string; title: string; quarantined: boolean }[]).filter(
      (t) => t.title === CURRENT.title || t.title === LEGACY.title,
    );
    expect(tests).toEqual([expect.objectContaining({ testIdentityId: keptId, quarantined: true })]);
    expect(res.json.gate.newFailures).toBe(0);
    // A commit stored before the merge, both names failing: counted once too, under the kept test.
    const before = await td.request('GET', `/v1/runs/gate?commitSha=${prCommitBefore}`);
    expect(before.status, before.text).toBe(200);
    const beforeTests = (before.json.gate.tests as { testIdentityId: string; title: string }[]).filter((t) => t.title === CURRENT.title || t.title === LEGACY.title);
    expect(beforeTests).toEqual([expect.objectContaining({ testIdentityId: keptId, quarantined: true })]);
    expect(before.json.gate).toMatchObject({ newFailures: 0, knownFlakes: 1, quarantined: 1 });
  });

  it('merges nothing on a second pass', async () => {
    expect(await merge('project=default')).toEqual({ project: 'default', dryRun: false, found: 0, merged: 0, pairs: [] });
    const viaCli = await cli('identities', 'merge-junit-twins', '--project', 'default');
    expect(viaCli).toEqual({ code: 0, out: '0 pair(s) merged\n' });
    expect((await cli('identities', 'merge', '--project', 'default')).code).toBe(2);
  });

  it('merges stored twins at start-up, with one log line', async () => {
    const at = Date.now() - 3 * HOUR;
    const current = await ingestNative(native(sha(), at, [{ ...PW_CURRENT, status: 'pass' }]));
    const legacy = await ingestNative(native(sha(), at + HOUR, [{ ...PW_LEGACY, status: 'pass' }]));
    const pwKept = await idOf(current, PW_CURRENT.title);
    expect(await idOf(legacy, PW_LEGACY.title)).not.toBe(pwKept);

    const { logger, lines } = captureLogs();
    const merged = (): { msg?: string; merged?: number }[] =>
      lines.map((l) => JSON.parse(l) as { msg?: string; merged?: number }).filter((l) => l.msg?.startsWith('identity: stored legacy JUnit twins merged'));

    const { dataDir, database } = td;
    await td.stop();
    td = await startTestDaemon({ dataDir, database, logger });
    await td.waitFor(async () => merged().length > 0, 30_000);
    expect(merged()).toEqual([expect.objectContaining({ merged: 1 })]);
    const pays = (await board()).filter((t) => t.title === PW_CURRENT.title || t.title === PW_LEGACY.title);
    expect(pays).toEqual([expect.objectContaining({ testIdentityId: pwKept, ...PW_CURRENT })]);
  });
});

// Legacy JUnit twins (issue 39, "Duplicates already stored are stitched"), through the real daemon
// (real chDB, real HTTP). Before client/src/contract/junit-names.ts, Vitest's JUnit was stored as file
// `src/math/test/ts`, suite `src/math.test.ts`, title `math > division > divides`; the reporter and
// the JUnit receiver now both name it file `src/math.test.ts`, suite `math > division`, title
// `divides`. The old rows are stored here as the old receiver wrote them (a native batch with its
// names), the old twin is quarantined, then the test comes in through the new JUnit reading and the
// reporter's names: it must be one test, with both histories, still quarantined, and counted once
// by the PR gate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { fingerprint } from '../../client/src/contract/identity.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const LEGACY = { filePath: 'src/math/test/ts', suite: 'src/math.test.ts', title: 'math > division > divides' };
const CURRENT = { filePath: 'src/math.test.ts', suite: 'math > division', title: 'divides' };
// Playwright's JUnit, read before the fix: the same with ' › '.
const PW_LEGACY = { filePath: 'e2e/cart/spec/ts', suite: 'e2e/cart.spec.ts', title: 'cart › checkout › pays' };
const PW_CURRENT = { filePath: 'e2e/cart.spec.ts', suite: 'cart > checkout', title: 'pays' };

const HOUR = 3_600_000;
let shaSeq = 0;
const sha = (): string => (0xa11ce00 + shaSeq++).toString(16).padEnd(40, '0');

function vitestJUnit(status: 'pass' | 'fail'): string {
  const failure = status === 'fail' ? '<failure message="expected 2 to be 3" type="AssertionError">AssertionError: expected 2 to be 3</failure>' : '';
  return `<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="2" failures="${status === 'fail' ? 1 : 0}" errors="0" time="0.01">
  <testsuite name="src/math.test.ts" timestamp="${new Date().toISOString()}" hostname="ci" tests="2" failures="0" errors="0" skipped="0" time="0.01">
    <testcase classname="src/math.test.ts" name="math &gt; division &gt; divides" time="0.001">${failure}</testcase>
    <testcase classname="src/math.test.ts" name="math &gt; adds" time="0.001"></testcase>
  </testsuite>
</testsuites>`;
}

interface RunExecution {
  testIdentityId: string;
  filePath: string;
  suite: string;
  title: string;
}

describe('tests stored under the JUnit reading before the fix join the test the reporters name', () => {
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  let oldId = '';
  const runs: { legacy: string[]; junit: string[]; reporter: string[] } = { legacy: [], junit: [], reporter: [] };

  beforeAll(async () => {
    td = await startTestDaemon();
    td.daemon.runtime.onEvent((e) => events.push(e));
  });
  afterAll(async () => td?.close());

  function native(commitSha: string, at: number, executions: (typeof LEGACY & { status: string })[], resource: object = {}): Record<string, unknown> {
    return nativeBatch({
      resource: { commitSha, branch: 'main', trigger: 'push', ...resource },
      run: { status: executions.some((e) => e.status === 'fail') ? 'failed' : 'passed', startedAt: new Date(at).toISOString() },
      executions: executions.map((e, i) => ({ ...e, startedAt: new Date(at + 1 + i).toISOString(), durationMs: 5 })),
    });
  }

  async function runOf(receiptId: string): Promise<string> {
    const processed = await td.waitFor(async () => events.find((e) => e.type === 'run.processed' && e.data.receiptId === receiptId), 30_000);
    await td.settled(30_000);
    return processed.data.runId as string;
  }

  async function postJUnit(commitSha: string, status: 'pass' | 'fail', resource: object = {}): Promise<string> {
    const res = await td.request('POST', '/v1/ingest/junit', {
      body: { idempotencyKey: `junit-${commitSha}`, resource: { ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push', ...resource }, xml: vitestJUnit(status) },
    });
    expect(res.status, res.text).toBe(202);
    return runOf(res.json.receiptId as string);
  }

  async function ingestNative(batch: Record<string, unknown>): Promise<string> {
    const [receiptId] = await td.ingest(batch);
    return runOf(receiptId!);
  }

  async function executionsOf(runId: string): Promise<RunExecution[]> {
    const res = await td.request('GET', `/v1/runs/${runId}`);
    expect(res.status).toBe(200);
    return res.json.executions as RunExecution[];
  }

  it('stores the old twin as the JUnit receiver wrote it before the fix, and quarantines it', async () => {
    const start = Date.now() - 10 * HOUR;
    for (let i = 0; i < 3; i++) {
      runs.legacy.push(await ingestNative(native(sha(), start + i * HOUR, [{ ...LEGACY, status: i === 1 ? 'fail' : 'pass' }, { ...PW_LEGACY, status: 'pass' }])));
    }
    const execs = await executionsOf(runs.legacy[0]!);
    oldId = execs.find((e) => e.title === LEGACY.title)!.testIdentityId;
    expect(oldId).toMatch(/^[0-9a-f-]{36}$/);
    const q = await td.request('POST', `/v1/tests/${oldId}/quarantine`, { body: { decision: 'quarantined', reason: 'flaky on CI' } });
    expect(q.status).toBe(200);
    expect(q.json).toMatchObject({ quarantined: true });
  });

  it('resolves the new JUnit reading and the reporter’s names to the old twin: one test, both histories, the stitch', async () => {
    const at = Date.now() - 5 * HOUR;
    runs.junit.push(await postJUnit(sha(), 'pass'));
    const fromJUnit = await executionsOf(runs.junit[0]!);
    expect(fromJUnit.find((e) => e.title === 'divides')).toMatchObject({ ...CURRENT, testIdentityId: oldId });
    // A test the old receiver never stored is a new test, as before.
    const adds = fromJUnit.find((e) => e.title === 'adds')!;
    expect(adds.testIdentityId).not.toBe(oldId);

    runs.reporter.push(await ingestNative(native(sha(), at, [{ ...CURRENT, status: 'pass' }, { ...PW_CURRENT, status: 'pass' }])));
    const fromReporter = await executionsOf(runs.reporter[0]!);
    expect(fromReporter.find((e) => e.title === 'divides')!.testIdentityId).toBe(oldId);
    const pwOld = (await executionsOf(runs.legacy[0]!)).find((e) => e.title === PW_LEGACY.title)!.testIdentityId;
    expect(fromReporter.find((e) => e.title === 'pays')!.testIdentityId).toBe(pwOld);

    const detail = (await td.request('GET', `/v1/tests/${oldId}?historyLimit=200`)).json;
    expect(detail).toMatchObject({ ...CURRENT, quarantined: true, quarantineOverride: 'quarantined' });
    const historyRuns = new Set((detail.history as { runId: string }[]).map((h) => h.runId));
    for (const r of [...runs.legacy, ...runs.junit, ...runs.reporter]) expect(historyRuns.has(r), r).toBe(true);
    expect(detail.stitches).toEqual([expect.objectContaining({ level: 'L2', fromFilePath: LEGACY.filePath, fromTitle: LEGACY.title, toFilePath: CURRENT.filePath, toTitle: CURRENT.title, confidence: 1 })]);
    expect(detail.aliases).toEqual([fingerprint(CURRENT)]);
    expect(events.filter((e) => e.type === 'identity.moved' && e.data.testIdentityId === oldId)).toHaveLength(1);
    // The new reading's fingerprint never got an identity of its own.
    expect(events.filter((e) => e.type === 'identity.created' && e.data.fingerprint === fingerprint(CURRENT))).toHaveLength(0);
  });

  it('shows one test on the board and in the quarantine list, under its current name', async () => {
    const board = (await td.request('GET', '/v1/flaky?limit=100')).json.items as { testIdentityId: string; filePath: string; title: string }[];
    const divides = board.filter((t) => t.title === CURRENT.title || t.title === LEGACY.title);
    expect(divides).toEqual([expect.objectContaining({ testIdentityId: oldId, filePath: CURRENT.filePath, title: CURRENT.title })]);
    const list = (await td.request('GET', '/v1/quarantine')).json.items as { testIdentityId: string; fingerprints: string[]; filePath: string; suite: string; title: string }[];
    const entry = list.filter((q) => q.testIdentityId === oldId);
    expect(entry).toHaveLength(1);
    expect(entry[0]).toMatchObject(CURRENT);
    expect(entry[0]!.fingerprints).toContain(fingerprint(CURRENT));
  });

  it('has the PR gate count it once, quarantined: not a new failure', async () => {
    const commit = sha();
    const pr = { branch: 'feature/y', baseBranch: 'main', prNumber: 7, trigger: 'pull_request' };
    await postJUnit(commit, 'fail', pr);
    await ingestNative(native(commit, Date.now() - HOUR, [{ ...CURRENT, status: 'fail' }], { ...pr, shardIndex: 2, shardTotal: 2 }));
    const res = await td.request('GET', `/v1/runs/gate?commitSha=${commit}`);
    expect(res.status).toBe(200);
    const tests = (res.json.gate.tests as { testIdentityId: string; title: string; quarantined: boolean; classification: string }[]).filter((t) => t.title === CURRENT.title);
    expect(tests).toEqual([expect.objectContaining({ testIdentityId: oldId, quarantined: true })]);
    expect(tests[0]!.classification).not.toBe('new_failure');
    expect(res.json.gate.newFailures).toBe(0);
  });

  it('keeps the join when the old names run again beside the new ones on one commit (no revocation), and stitches once', async () => {
    const commit = sha();
    const at = Date.now() - 30 * 60_000;
    const a = await ingestNative(native(commit, at, [{ ...CURRENT, status: 'pass' }]));
    const b = await ingestNative(native(commit, at + 1000, [{ ...LEGACY, status: 'pass' }]));
    const c = await postJUnit(sha(), 'pass');
    for (const r of [a, b, c]) expect((await executionsOf(r)).find((e) => e.title === CURRENT.title || e.title === LEGACY.title)!.testIdentityId).toBe(oldId);
    const detail = (await td.request('GET', `/v1/tests/${oldId}`)).json;
    expect(detail.stitches).toHaveLength(1);
    expect(events.filter((e) => e.type === 'identity.created' && e.data.fingerprint === fingerprint(CURRENT))).toHaveLength(0);
  });
});

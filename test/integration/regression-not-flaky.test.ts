// Never call a real break flaky, end to end, as a new user's CI sends it (`flakehouse report` of
// JUnit files with GitHub Actions' variables, 204 tests): a regression on main, with PR branches
// forked before the break passing in between, is `broken` from its first failing main run and never
// a candidate; the gate calls the breaking commit a new failure and later
// commits "already broken on main since ed3d460", never a known flake. And a PR's new failure keeps
// blocking after other branches pass the test.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { runCli } from '../helpers/process.js';

const HOUR = 3_600_000;
const T0 = Date.now() - 10 * 24 * HOUR;
/** A project of 204 tests, as in the report that found the problem. */
const TESTS = Array.from({ length: 202 }, (_, i) => `computes case ${i}`);
const EXPRESS = 'calculates express rate';
const NEWBIE = 'applies the loyalty discount';
const RETRY = 'quotes the parcel size';
/** The commit that breaks EXPRESS on main. */
const BREAK = 'ed3d460'.padEnd(40, 'a');

let seq = 0;
const shaOf = (n: number): string => n.toString(16).padStart(7, '0').padEnd(40, 'b');
const xmlEscape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

/**
 * One CI run's JUnit report: every test passes unless `fail` names it; a failing test was retried
 * twice by the runner (three <testcase> entries, which the reporter reads as three attempts).
 */
function junitReport(at: number, fail: readonly string[], flake: readonly string[] = []): string {
  const cases: string[] = [];
  const failed = (name: string): string => `<testcase classname="shipping service" name="${name}" file="src/shipping.test.ts" time="0.005"><failure message="expected 12.5 to be 9.99">AssertionError: expected 12.5 to be 9.99</failure></testcase>`;
  const passed = (name: string): string => `<testcase classname="shipping service" name="${name}" file="src/shipping.test.ts" time="0.005"/>`;
  for (const title of [...TESTS, EXPRESS, NEWBIE, RETRY]) {
    const name = xmlEscape(title);
    if (fail.includes(title)) for (let a = 0; a < 3; a++) cases.push(failed(name));
    else if (flake.includes(title)) cases.push(failed(name), passed(name)); // failed, then passed on the retry
    else cases.push(passed(name));
  }
  const failures = fail.length * 3 + flake.length;
  return `<?xml version="1.0"?>\n<testsuites><testsuite name="shipping service" timestamp="${new Date(at).toISOString()}" tests="${cases.length}" failures="${failures}">${cases.join('')}</testsuite></testsuites>\n`;
}

/** Where a run is: a push to main, or a pull request's branch with its merge base. */
type Where = { main: true } | { pr: number; mergeBase?: string };
describe('a real break is never called flaky', () => {
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  let expressId = '';
  const mainShas: string[] = [];
  let run = 0;
  const at = (): number => T0 + run++ * 2 * HOUR;
  const dir = mkdtempSync(path.join(tmpdir(), 'fh-regression-'));

  /** `flakehouse report` of one CI run, with GitHub Actions' variables, as a new user's CI sends it. */
  async function report(commitSha: string, where: Where, fail: readonly string[], flake: readonly string[] = []): Promise<void> {
    const file = path.join(dir, `run-${++seq}.xml`);
    writeFileSync(file, junitReport(at(), fail, flake));
    const github = 'main' in where
      ? { GITHUB_EVENT_NAME: 'push', GITHUB_REF: 'refs/heads/main', GITHUB_REF_NAME: 'main' }
      : { GITHUB_EVENT_NAME: 'pull_request', GITHUB_REF: `refs/pull/${where.pr}/merge`, GITHUB_HEAD_REF: `feat/${where.pr}`, GITHUB_BASE_REF: 'main', ...(where.mergeBase ? { SERVICE_MERGE_BASE: where.mergeBase } : {}) };
    const res = await runCli(['report', '--strict', file], {
      cwd: dir,
      env: { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token, SERVICE_BUFFER_DIR: path.join(dir, 'buffer'), GITHUB_ACTIONS: 'true', GITHUB_SHA: commitSha, GITHUB_RUN_ID: String(seq), GITHUB_REPOSITORY: 'acme/shop', ...github },
    });
    expect(res.code, res.stderr).toBe(0);
    await td.settled();
  }
  const main: Where = { main: true };
  const pr = (n: number, mergeBase?: string): Where => ({ pr: n, ...(mergeBase ? { mergeBase } : {}) });

  const state = async (): Promise<{ state: string; stateSince: { commitSha: string } | null; quarantined: boolean; score: number }> =>
    (await td.request('GET', `/v1/tests/${expressId}`)).json;

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_QUARANTINE_ENABLED: 'true' } });
    td.daemon.runtime.onEvent((e) => events.push(e));
    // Ten green main pushes; PR branches fork from them.
    for (let i = 0; i < 10; i++) {
      mainShas.push(shaOf(i + 1));
      await report(mainShas.at(-1)!, main, []);
    }
    const detail = await td.request('GET', `/v1/runs/${(await td.request('GET', '/v1/runs?limit=1')).json.items[0].id}`);
    expressId = detail.json.executions.find((e: { title: string }) => e.title === EXPRESS).testIdentityId;
  }, 60_000);
  afterAll(async () => {
    await td?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is broken from its first failing main run, stays broken while older PR branches pass, never a candidate or quarantined', async () => {
    await report(BREAK, main, [EXPRESS]);
    mainShas.push(BREAK);
    const first = await state();
    expect(first.state).toBe('broken');
    expect(first.stateSince?.commitSha).toBe(BREAK);

    // 20 more runs: PR branches forked before the break pass the test; main keeps failing it.
    for (let i = 0; i < 10; i++) {
      await report(shaOf(100 + i), pr(100 + i, mainShas[5]), []);
      mainShas.push(shaOf(200 + i));
      await report(mainShas.at(-1)!, main, [EXPRESS]);
      const s = await state();
      expect(s).toMatchObject({ state: 'broken', quarantined: false });
      expect(s.stateSince?.commitSha).toBe(BREAK);
    }
    const board = await td.request('GET', '/v1/flaky?limit=500');
    const row = board.json.items.find((r: { testIdentityId: string }) => r.testIdentityId === expressId);
    expect(row).toMatchObject({ state: 'broken', quarantineCandidate: false, quarantined: false });
    expect(row.score).toBeLessThan(0.5);
    expect(events.some((e) => e.type === 'flaky.detected' && e.data.testIdentityId === expressId)).toBe(false);
    expect(events.some((e) => e.type === 'quarantine.changed' && e.data.testIdentityId === expressId)).toBe(false);
  }, 90_000);

  it('the gate calls the breaking commit a new failure and later main commits already broken since ed3d460, never a known flake', async () => {
    const onBreak = (await td.request('GET', `/v1/runs/gate?commitSha=${BREAK}&baseBranch=main`)).json.gate;
    const t0 = onBreak.tests.find((t: { title: string }) => t.title === EXPRESS);
    expect(t0.classification).toBe('new_failure');
    expect(onBreak.verdict).toBe('block');

    const later = (await td.request('GET', `/v1/runs/gate?commitSha=${mainShas.at(-1)}&baseBranch=main`)).json;
    const t1 = later.gate.tests.find((t: { title: string }) => t.title === EXPRESS);
    expect(t1).toMatchObject({ classification: 'broken_on_base', state: 'broken', knownFlake: false, brokenSince: { commitSha: BREAK } });
    expect(later.gate).toMatchObject({ newFailures: 0, brokenOnBase: 1, knownFlakes: 0 });
    expect(later.markdown).toContain('broken on `main` since ed3d460');
    expect(later.markdown).not.toMatch(/known flake \|/);

    // `flakehouse gate`, as CI runs it: blocks the breaking commit, names the break after it.
    const cliEnv = { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token };
    const gateOnBreak = await runCli(['gate', '--commit', BREAK, '--base', 'main', '--wait', '0'], { env: cliEnv });
    expect(gateOnBreak.code).toBe(1);
    expect(gateOnBreak.stdout).toMatch(/BLOCKED/);
    expect(gateOnBreak.stdout).toMatch(/NEW FAILURE\s+shipping service › calculates express rate/);
    const gateLater = await runCli(['gate', '--commit', mainShas.at(-1)!, '--base', 'main', '--wait', '0'], { env: cliEnv });
    expect(gateLater.code).toBe(0);
    expect(gateLater.stdout).toMatch(/ALREADY BROKEN\s+shipping service › calculates express rate .*broken on main since ed3d460/);
    expect(gateLater.stdout).not.toMatch(/known flake\s+shipping/);

    // A PR forked after the break fails it too: already broken on main; one forked before the
    // break (merge base older than ed3d460) that fails it has a failure of its own: new.
    await report(shaOf(300), pr(300, mainShas.at(-2)), [EXPRESS]);
    const after = (await td.request('GET', `/v1/runs/gate?commitSha=${shaOf(300)}`)).json.gate;
    expect(after.tests[0]).toMatchObject({ title: EXPRESS, classification: 'broken_on_base' });
    expect(after.verdict).toBe('pass');
    await report(shaOf(301), pr(301, mainShas[3]), [EXPRESS]);
    const before = (await td.request('GET', `/v1/runs/gate?commitSha=${shaOf(301)}`)).json.gate;
    expect(before.tests[0]).toMatchObject({ title: EXPRESS, classification: 'new_failure' });
    expect(before.verdict).toBe('block');
  }, 60_000);

  it('is fixed since the fixing commit, and was never flaky', async () => {
    const fix = shaOf(400);
    await report(fix, main, []);
    const s = await state();
    expect(s.state).toBe('fixed');
    expect(s.stateSince?.commitSha).toBe(fix);
    expect(events.some((e) => e.type === 'flaky.detected' && e.data.testIdentityId === expressId)).toBe(false);
  }, 30_000);

  it("a PR's new failure keeps blocking after other branches pass the test", async () => {
    const pr9 = shaOf(900);
    await report(pr9, pr(9, mainShas.at(-1)), [NEWBIE]);
    const gate = async (): Promise<{ verdict: string; tests: { title: string; classification: string; score: number }[] }> =>
      (await td.request('GET', `/v1/runs/gate?commitSha=${pr9}`)).json.gate;
    const blocked = await gate();
    expect(blocked.verdict).toBe('block');
    expect(blocked.tests.find((t) => t.title === NEWBIE)?.classification).toBe('new_failure');
    // Other branches (and main) pass the test afterwards.
    for (let i = 0; i < 4; i++) await report(shaOf(910 + i), pr(10 + i, mainShas.at(-1)), []);
    await report(shaOf(920), main, []);
    const still = await gate();
    expect(still.verdict).toBe('block');
    const t = still.tests.find((x) => x.title === NEWBIE)!;
    expect(t.classification).toBe('new_failure');
    expect(t.score).toBeLessThan(0.5);
  }, 60_000);

  it('an automatically quarantined flake that breaks is released at once, with a quarantine.changed and a log entry', async () => {
    for (let i = 0; i < 6; i++) await report(shaOf(1000 + i), main, [], [RETRY]);
    const runs = await td.request('GET', '/v1/runs?limit=1');
    const detail = await td.request('GET', `/v1/runs/${runs.json.items[0].id}`);
    const retryId = detail.json.executions.find((e: { title: string }) => e.title === RETRY).testIdentityId as string;
    const page = async (): Promise<{ state: string; quarantined: boolean; stateSince: { commitSha: string } | null }> => (await td.request('GET', `/v1/tests/${retryId}`)).json;
    expect(await page()).toMatchObject({ state: 'flaky', quarantined: true });

    // It now fails every attempt on every new main commit: a break, no longer its flake rate's bad luck.
    for (let i = 0; i < 6 && (await page()).state !== 'broken'; i++) await report(shaOf(1100 + i), main, [RETRY]);
    const after = await page();
    expect(after).toMatchObject({ state: 'broken', quarantined: false });
    const released = events.filter((e) => e.type === 'quarantine.changed' && e.data.testIdentityId === retryId).at(-1)!;
    expect(released.data).toMatchObject({ quarantined: false, source: 'auto' });
    expect(String(released.data.reason)).toMatch(/^auto: released, broken since [0-9a-f]{7} /);
    const log = await td.request('GET', `/trpc/test.quarantineLog?input=${encodeURIComponent(JSON.stringify({ testIdentityId: retryId }))}`);
    const kinds = (log.json.result.data.events as { kind: string }[]).map((e) => e.kind);
    expect(kinds).toEqual(expect.arrayContaining(['flaked', 'quarantined', 'broke', 'released']));
  }, 90_000);
});

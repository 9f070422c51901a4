// Issue 38: the gate never waves a real break through as a "known flake" on thin evidence. Against
// the real daemon and chDB: a failure of a flaky test is a known flake only when the same code also
// passed it here, or when its flakiness is established and the failures here fit the low end of
// its rate; anything else is unproven and blocks under `new` (JSON, markdown, the CLI's text).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gateText } from '../../client/src/contract/pr-markdown.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const MIN = 60_000;
const sha = (): string => randomBytes(20).toString('hex');

/** One test's attempts in one run, as Flakemetry's Vitest/Jest reporters send them: `flaky` is one execution. */
function batch(file: string, commitSha: string, at: number, attempts: readonly ('pass' | 'fail' | 'flaky')[], resource: object): Record<string, unknown> {
  return nativeBatch({
    resource: { commitSha, branch: 'main', trigger: 'push', ...resource },
    run: { status: attempts.at(-1) === 'fail' ? 'failed' : 'passed', startedAt: new Date(at).toISOString() },
    executions: [
      ...attempts.map((status, k) => ({
        filePath: file,
        // A title of its own per scenario: the same title in another file would be stitched to it (a rename).
        suite: 'gate',
        title: `T ${file}`,
        status,
        attempt: k + 1,
        ...(k > 0 ? { retryOfIndex: 0 } : {}),
        startedAt: new Date(at + k * 10).toISOString(),
        durationMs: 10,
        ...(status !== 'pass' ? { error: { message: 'expected 200, got 500' } } : {}),
      })),
      { filePath: file, suite: 'gate', title: `steady ${file}`, status: 'pass', startedAt: new Date(at).toISOString(), durationMs: 5 },
    ],
  });
}

const pr = (n: number, branch: string) => ({ branch, baseBranch: 'main', prNumber: n, trigger: 'pull_request' });

describe('the gate: a known flake needs proof', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon();
  });
  afterAll(async () => td?.close());

  async function gate(commit: string): Promise<any> {
    const res = await td.request('GET', `/v1/runs/gate?commitSha=${commit}&baseBranch=main&strictness=new`);
    expect(res.status).toBe(200);
    return res.json;
  }

  /** T passing on main in `n` runs a minute apart from `start`, each on a commit of its own. */
  const mainPasses = (file: string, start: number, n: number): Record<string, unknown>[] => Array.from({ length: n }, (_, i) => batch(file, sha(), start + i * MIN, ['pass'], {}));

  /**
   * main: T passes 5 runs; feature/w: T fails once and passes on retry (one `flaky` execution).
   * Posted together (the scorer folds a test's runs in by start time, one lease or many: the same
   * state); what the tests check is the gate read afterwards.
   */
  async function thinHistory(file: string, start: number): Promise<void> {
    await td.ingest(...mainPasses(file, start, 5), batch(file, sha(), start + 6 * MIN, ['flaky'], pr(7, 'feature/w')));
  }

  it('thin evidence, a PR failing T on 1 attempt: unproven, blocks (JSON, markdown, CLI text)', async () => {
    const file = 'src/thin-one.test.ts';
    const start = Date.now() - 3 * 3_600_000;
    await thinHistory(file, start);
    const commit = sha();
    await td.ingest(batch(file, commit, start + 10 * MIN, ['fail'], pr(8, 'feature/x')));
    const { gate: g, markdown } = await gate(commit);
    const t = g.tests.find((x: any) => x.filePath === file);
    expect(t).toMatchObject({ state: 'flaky', classification: 'new_failure', knownFlake: false, flakeProof: 'unproven' });
    expect(t.proofHint).toBe('failed 1 of 1 attempt; its flakiness rests on one event — re-run the test on this commit');
    expect(g).toMatchObject({ verdict: 'block', newFailures: 1, knownFlakes: 0 });
    expect(markdown).toContain('❔ unproven flake');
    expect(markdown).toContain('re-run the test on this commit');
    expect(markdown).not.toContain('🔁 known flake |');
    expect(gateText(g)).toMatch(/UNPROVEN FLAKE {2}gate › T src\/thin-one/);
    // strictness any blocks too; off never does.
    expect((await td.request('GET', `/v1/runs/gate?commitSha=${commit}&strictness=any`)).json.gate.verdict).toBe('block');
  });

  it('thin evidence, a PR failing T on 2 attempts: blocks', async () => {
    const file = 'src/thin-two.test.ts';
    const start = Date.now() - 3 * 3_600_000;
    await thinHistory(file, start);
    const commit = sha();
    await td.ingest(batch(file, commit, start + 10 * MIN, ['fail', 'fail'], pr(9, 'feature/x')));
    const { gate: g } = await gate(commit);
    expect(g.tests.find((x: any) => x.filePath === file)).toMatchObject({ classification: 'new_failure', flakeProof: 'unproven' });
    expect(g.verdict).toBe('block');
  });

  it('order does not matter: a flake on another branch after the PR ran leaves its gate blocked', async () => {
    const file = 'src/thin-later.test.ts';
    const start = Date.now() - 3 * 3_600_000;
    await td.ingest(...mainPasses(file, start, 5));
    const commit = sha();
    await td.ingest(batch(file, commit, start + 6 * MIN, ['fail'], pr(10, 'feature/x')));
    expect((await gate(commit)).gate.verdict).toBe('block');
    await td.ingest(batch(file, sha(), start + 8 * MIN, ['flaky'], pr(11, 'feature/w')));
    const { gate: g } = await gate(commit);
    expect(g.tests.find((x: any) => x.filePath === file)).toMatchObject({ state: 'flaky', flakeProof: 'unproven' });
    expect(g.verdict).toBe('block');
  });

  it('without a commit, only the newest run\'s CI run is this code: another CI run\'s pass proves nothing, its re-run does', async () => {
    const file = 'src/no-commit.test.ts';
    const start = Date.now() - 4 * 3_600_000;
    const nc = (ciRunId: string, extra: object = {}) => ({ ciProvider: 'github_actions', ciRunId, ...extra });
    await td.ingest(
      ...Array.from({ length: 5 }, (_, i) => batch(file, '0000000', start + i * MIN, ['pass'], nc(`nc-${i}`))),
      batch(file, '0000000', start + 6 * MIN, ['flaky'], nc('nc-6', pr(30, 'feature/w'))),
    );
    await td.ingest(batch(file, '0000000', start + 8 * MIN, ['fail'], nc('nc-8', pr(31, 'feature/x'))));
    const { gate: g } = await gate('0000000');
    expect(g.tests.find((x: any) => x.filePath === file)).toMatchObject({ status: 'fail', state: 'flaky', classification: 'new_failure', flakeProof: 'unproven' });
    expect(g.verdict).toBe('block');
    // GitHub's "re-run failed jobs": the same run id; the test passes this time.
    await td.ingest(batch(file, '0000000', start + 9 * MIN, ['pass'], nc('nc-8', pr(31, 'feature/x'))));
    const { gate: again } = await gate('0000000');
    expect(again.tests.find((x: any) => x.filePath === file)).toMatchObject({ status: 'flaky', classification: 'known_flake', flakeProof: 'same_code' });
    expect(again.verdict).toBe('pass');
  });

  describe('an established flake: failed, then passed on a retry, in 4 of 12 main runs', () => {
    let n = 0;
    /** A fresh test with that history; returns its file. */
    async function established(): Promise<string> {
      const file = `src/established-${n++}.test.ts`;
      const start = Date.now() - 5 * 3_600_000;
      await td.ingest(...Array.from({ length: 12 }, (_, i) => batch(file, sha(), start + i * MIN, i % 3 === 1 ? ['fail', 'pass'] : ['pass'], {})));
      return file;
    }
    const prAt = Date.now() - 3_600_000;

    it('failing once on a PR: a known flake (established), passes', async () => {
      const file = await established();
      const commit = sha();
      await td.ingest(batch(file, commit, prAt, ['fail'], pr(20, 'feature/e1')));
      const { gate: g, markdown } = await gate(commit);
      expect(g.tests.find((x: any) => x.filePath === file)).toMatchObject({ state: 'flaky', classification: 'known_flake', knownFlake: true, flakeProof: 'established', proofHint: null });
      expect(g).toMatchObject({ verdict: 'pass', newFailures: 0, knownFlakes: 1 });
      expect(markdown).toContain('🔁 known flake');
    });

    it('failing, then passing on a retry on a PR: a known flake (same code), passes', async () => {
      const file = await established();
      const commit = sha();
      await td.ingest(batch(file, commit, prAt, ['fail', 'pass'], pr(21, 'feature/e2')));
      const { gate: g } = await gate(commit);
      expect(g.tests.find((x: any) => x.filePath === file)).toMatchObject({ status: 'flaky', classification: 'known_flake', flakeProof: 'same_code' });
      expect(g.verdict).toBe('pass');
    });

    it('failing 4 of 4 attempts on a PR: unproven, blocks', async () => {
      const file = await established();
      const commit = sha();
      await td.ingest(batch(file, commit, prAt, ['fail', 'fail', 'fail', 'fail'], pr(22, 'feature/e3')));
      const { gate: g } = await gate(commit);
      const t = g.tests.find((x: any) => x.filePath === file);
      expect(t).toMatchObject({ state: 'flaky', classification: 'new_failure', flakeProof: 'unproven' });
      expect(t.proofHint).toMatch(/^failed 4 of 4 attempts; that many failures in a row are unlikely even for a flake of \d+(\.\d)?% — re-run the test on this commit$/);
      expect(g.verdict).toBe('block');
    });
  });
});

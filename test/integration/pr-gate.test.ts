// PR summary and merge gate against the real daemon: runs of a commit (shards, reruns) merged per
// test, and failures classified as new versus known from the base branch's recent history.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const HOUR = 3_600_000;

function sha(): string {
  return randomBytes(20).toString('hex');
}

interface Exec {
  filePath: string;
  suite: string;
  title: string;
  status: 'pass' | 'fail' | 'skip' | 'flaky';
  attempt?: number;
  retryOfIndex?: number;
  startedAt: number;
  durationMs: number;
  error?: { message: string };
}

/** One run's executions from a compact spec: `fail>pass` is a failure passed on retry. */
function execs(at: number, spec: Record<string, string>, file = 'src/pr.test.ts'): Exec[] {
  const out: Exec[] = [];
  let i = 0;
  for (const [title, outcome] of Object.entries(spec)) {
    const attempts = outcome.split('>') as Exec['status'][];
    const first = out.length;
    attempts.forEach((status, k) => {
      out.push({
        filePath: file,
        suite: 'pr',
        title,
        status,
        attempt: k + 1,
        ...(k > 0 ? { retryOfIndex: first } : {}),
        startedAt: at + i++ * 10,
        durationMs: 20 + k,
        ...(status === 'fail' ? { error: { message: `${title} broke: expected 1 to be 2` } } : {}),
      });
    });
  }
  return out;
}

describe('PR summary and gate', () => {
  let td: TestDaemon;

  beforeAll(async () => {
    td = await startTestDaemon();
  });
  afterAll(async () => td?.close());


  function run(commitSha: string, at: number, spec: Record<string, string>, resource: object = {}, status = 'failed', file?: string): Record<string, unknown> {
    return nativeBatch({
      resource: { commitSha, branch: 'main', trigger: 'push', ...resource },
      run: { status, startedAt: new Date(at).toISOString() },
      executions: execs(at, spec, file),
    });
  }

  const pr = { branch: 'feature/x', baseBranch: 'main', prNumber: 42, trigger: 'pull_request' };

  describe('GET /v1/runs/summary', () => {
    it('rejects a malformed sha and answers 404 for a commit never ingested', async () => {
      for (const bad of ['xyz1234', '123456', 'g'.repeat(40), 'a'.repeat(41)]) {
        const res = await td.request('GET', `/v1/runs/summary?commitSha=${bad}`);
        expect(res.status).toBe(400);
        expect(res.json).toMatchObject({ error: 'invalid_commit_sha' });
      }
      expect((await td.request('GET', '/v1/runs/summary')).json).toMatchObject({ error: 'invalid_commit_sha' });
      const missing = await td.request('GET', `/v1/runs/summary?commitSha=${sha()}`);
      expect(missing.status).toBe(404);
      expect(missing.json).toMatchObject({ error: 'not_found' });
      expect((await td.request('GET', `/v1/runs/summary?commitSha=${sha()}`, { token: null })).status).toBe(401);
    });

    it('merges the shards of a commit: fails first, flaky after, with a PR comment', async () => {
      const commit = sha();
      const at = Date.now() - 2 * HOUR;
      await td.ingest(
        run(commit, at, { alpha: 'fail', beta: 'pass', gamma: 'fail>pass' }, { ...pr, shardIndex: 1, shardTotal: 2 }),
        run(commit, at + 1000, { delta: 'fail', epsilon: 'pass', zeta: 'skip' }, { ...pr, shardIndex: 2, shardTotal: 2 }, 'failed', 'src/other.test.ts'),
      );
      // An abbreviated sha finds the full one.
      const res = await td.request('GET', `/v1/runs/summary?commitSha=${commit.slice(0, 7).toUpperCase()}`);
      expect(res.status).toBe(200);
      expect(res.json.found).toBe(true);
      const s = res.json.summary;
      expect(s).toMatchObject({ commitSha: commit, branch: 'feature/x', prNumber: 42, runStatus: 'failed', failed: 2, flaky: 1 });
      expect(s.tests.map((t: any) => `${t.title}:${t.status}`)).toEqual([
        expect.stringMatching(/^(alpha|delta):fail$/),
        expect.stringMatching(/^(alpha|delta):fail$/),
        'gamma:flaky',
      ]);
      const alpha = s.tests.find((t: any) => t.title === 'alpha');
      expect(alpha).toMatchObject({ filePath: 'src/pr.test.ts', suite: 'pr', errorMessage: 'alpha broke: expected 1 to be 2', quarantined: false });
      expect(alpha.testIdentityId).toMatch(/^[0-9a-f-]{36}$/);
      expect(typeof alpha.score).toBe('number');
      expect(s.tests.find((t: any) => t.title === 'delta').filePath).toBe('src/other.test.ts');

      const md: string = res.json.markdown;
      expect(md.startsWith('<!-- service:pr-comment -->\n<!-- flakemetry:pr-comment -->\n')).toBe(true);
      expect(md).toContain('2 failed, 1 flaky');
      expect(md).toContain('PR #42');
      expect(md).toMatch(/\| .*alpha/);
      expect(md).toContain('<details>');
      expect(md.indexOf('gamma')).toBeGreaterThan(md.indexOf('<details>'));
    });

    it('merges reruns: a test that failed in one run and passed in the next is flaky; a stored short sha matches a full query', async () => {
      const full = sha();
      const short = full.slice(0, 8);
      const at = Date.now() - HOUR;
      await td.ingest(
        run(short, at, { rerun: 'fail', solid: 'fail' }, pr),
        run(full, at + 60_000, { rerun: 'pass', solid: 'fail' }, pr, 'failed'),
      );
      const res = await td.request('GET', `/v1/runs/summary?commitSha=${full}`);
      expect(res.status).toBe(200);
      expect(res.json.summary).toMatchObject({ commitSha: full, failed: 1, flaky: 1 });
      expect(res.json.summary.tests.map((t: any) => [t.title, t.status])).toEqual([
        ['solid', 'fail'],
        ['rerun', 'flaky'],
      ]);
      // The short form alone finds the same commit.
      expect((await td.request('GET', `/v1/runs/summary?commitSha=${short}`)).json.summary.commitSha).toBe(full);
    });

    it('caps the comment at 50 rows with "and N more"', async () => {
      const commit = sha();
      const spec: Record<string, string> = {};
      for (let i = 0; i < 60; i++) spec[`many ${String(i).padStart(2, '0')}`] = 'fail';
      await td.ingest(run(commit, Date.now() - HOUR, spec, pr));
      const res = await td.request('GET', `/v1/runs/summary?commitSha=${commit}`);
      expect(res.json.summary.failed).toBe(60);
      expect(res.json.summary.tests).toHaveLength(60);
      expect(res.json.markdown).toContain('and 10 more');
      expect((res.json.markdown as string).split('\n').filter((l) => l.includes('many ')).length).toBe(50);
    });

    it('answers an ingest-only token (ingest or read)', async () => {
      const admin = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['ingest'] } });
      expect(admin.status).toBe(201);
      const res = await td.request('GET', `/v1/runs/summary?commitSha=${sha()}`, { token: admin.json.token });
      expect(res.status).toBe(404);
      const gate = await td.request('GET', `/v1/runs/gate?commitSha=${sha()}`, { token: admin.json.token });
      expect(gate.status).toBe(200);
    });
  });

  describe('GET /v1/runs/gate', () => {
    let known: string;

    beforeAll(async () => {
      // Base history: `known` failed and passed on a retry in 3 of the last 5 runs on main (distinct
      // commits): a known flake on same-code evidence. `newbie`, `quar` and `retry` always passed.
      const outcomes = ['fail>pass', 'pass', 'fail>pass', 'pass', 'fail>pass'];
      const batches = outcomes.map((o, i) =>
        run(sha(), Date.now() - (5 - i) * 24 * HOUR, { known: o, newbie: 'pass', quar: 'pass', retry: 'pass', other: 'pass' }, {}, 'passed', 'src/gate.test.ts'),
      );
      // Older than 14 days: not part of the base sample.
      batches.unshift(run(sha(), Date.now() - 20 * 24 * HOUR, { newbie: 'pass', known: 'pass' }, {}, 'passed', 'src/gate.test.ts'));
      await td.ingest(...batches);
    });

    it('validates its parameters and answers {found:false} for a commit never ingested', async () => {
      expect((await td.request('GET', '/v1/runs/gate?commitSha=nothex!')).json).toMatchObject({ error: 'invalid_commit_sha' });
      for (const bad of ['has space', 'semi;colon', 'x'.repeat(256), '']) {
        const res = await td.request('GET', `/v1/runs/gate?commitSha=${sha()}&baseBranch=${encodeURIComponent(bad)}`);
        expect(res.status).toBe(400);
        expect(res.json).toMatchObject({ error: 'invalid_base_branch' });
      }
      // An unknown strictness is `new` (Flakemetry), not a 400: see the blocking case below.
      const strict = await td.request('GET', `/v1/runs/gate?commitSha=${sha()}&strictness=paranoid`);
      expect(strict.status).toBe(200);
      expect(strict.json).toEqual({ found: false });
      const res = await td.request('GET', `/v1/runs/gate?commitSha=${sha()}&baseBranch=release/1.x`);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ found: false });
    });

    it('blocks a PR run with one new failure and one known flake (newFailures: 1)', async () => {
      const commit = sha();
      await td.ingest(run(commit, Date.now() - HOUR, { known: 'fail', newbie: 'fail', other: 'pass' }, pr, 'failed', 'src/gate.test.ts'));
      const res = await td.request('GET', `/v1/runs/gate?commitSha=${commit}`);
      expect(res.status).toBe(200);
      const g = res.json.gate;
      expect(g).toMatchObject({ commitSha: commit, branch: 'feature/x', baseBranch: 'main', prNumber: 42, runStatus: 'failed', strictness: 'new', newFailures: 1, knownFlakes: 1, brokenOnBase: 0, verdict: 'block' });
      expect(g.tests.map((t: any) => [t.title, t.classification])).toEqual([
        ['newbie', 'new_failure'],
        ['known', 'known_flake'],
      ]);
      const k = g.tests.find((t: any) => t.title === 'known');
      known = k.testIdentityId;
      expect(k).toMatchObject({ status: 'fail', baseFailRate: 0.6, baseSampleSize: 5, quarantined: false, state: 'flaky', knownFlake: true, brokenSince: null });
      // The 20-day-old run is outside the window: 5 samples, not 6.
      expect(g.tests.find((t: any) => t.title === 'newbie')).toMatchObject({ status: 'fail', baseFailRate: 0, baseSampleSize: 5 });
      expect(res.json.markdown.startsWith('<!-- service:pr-gate -->\n<!-- flakemetry:pr-gate -->\n')).toBe(true);
      expect(res.json.markdown).toContain('blocked');
      expect(res.json.markdown).toContain('new failure');

      const off = await td.request('GET', `/v1/runs/gate?commitSha=${commit}&strictness=off`);
      expect(off.json.gate).toMatchObject({ verdict: 'pass', newFailures: 1, strictness: 'off' });
      const any = await td.request('GET', `/v1/runs/gate?commitSha=${commit}&strictness=any`);
      expect(any.json.gate).toMatchObject({ verdict: 'block', strictness: 'any' });
      // Unknown strictness (a typo in FLAKEMETRY_STRICTNESS): `new`, which blocks this PR.
      const typo = await td.request('GET', `/v1/runs/gate?commitSha=${commit}&strictness=NEW`);
      expect(typo.status).toBe(200);
      expect(typo.json.gate).toMatchObject({ verdict: 'block', strictness: 'new', newFailures: 1 });

      // Against a base branch with no history: a known flake is still one (its evidence is its own), the rest is new.
      const other = await td.request('GET', `/v1/runs/gate?commitSha=${commit}&baseBranch=develop`);
      expect(other.json.gate.baseBranch).toBe('develop');
      for (const t of other.json.gate.tests) {
        expect(t.baseSampleSize).toBe(0);
        expect(t.classification).toBe(t.knownFlake ? 'known_flake' : 'new_failure');
      }
    });

    it('does not count a quarantined failure as new; a pass on retry of a test never flaky before is new (the change may have made it flaky); strictness any ignores quarantined and flaky-status tests', async () => {
      const commit = sha();
      await td.ingest(run(commit, Date.now() - HOUR, { quar: 'fail', retry: 'fail>pass', other: 'pass' }, pr, 'passed', 'src/gate.test.ts'));
      const before = await td.request('GET', `/v1/runs/gate?commitSha=${commit}`);
      const quarId = before.json.gate.tests.find((t: any) => t.title === 'quar').testIdentityId as string;
      expect(before.json.gate.tests.find((t: any) => t.title === 'retry')).toMatchObject({ status: 'flaky', classification: 'new_failure', knownFlake: false });

      const q = await td.request('POST', `/v1/tests/${quarId}/quarantine`, { body: { decision: 'quarantined', reason: 'flaky on CI' } });
      expect(q.status).toBe(200);
      expect(q.json).toMatchObject({ quarantined: true, override: 'quarantined' });

      const res = await td.request('GET', `/v1/runs/gate?commitSha=${commit}`);
      const g = res.json.gate;
      // A quarantined failure is a known flake, and `quarantined` says how many of them are (docs/pull-requests.md, "What a pull request shows").
      expect(g).toMatchObject({ verdict: 'block', status: 'blocked', newFailures: 1, knownFlakes: 1, quarantined: 1, brokenOnBase: 0, failed: 1, flaky: 1, countsText: '1 new failure, 1 known flake (1 quarantined)' });
      expect(g.tests.map((t: any) => [t.title, t.status, t.classification])).toEqual([
        ['retry', 'flaky', 'new_failure'],
        ['quar', 'fail', 'quarantined'],
      ]);
      expect(g.tests.find((t: any) => t.title === 'quar').quarantined).toBe(true);
      expect(res.json.markdown).toContain('blocked — 1 new failure, 1 known flake (1 quarantined)');
      expect((await td.request('GET', `/v1/runs/gate?commitSha=${commit}&strictness=any`)).json.gate.verdict).toBe('pass');

      // The summary shows it quarantined too.
      const s = await td.request('GET', `/v1/runs/summary?commitSha=${commit}`);
      expect(s.json.summary.tests.find((t: any) => t.title === 'quar')).toMatchObject({ status: 'fail', quarantined: true });
      expect(s.json.markdown).toContain('quarantined');
      expect(known).toBeTruthy();
    });

    it('treats a test flaky on same-code evidence from another branch as a known flake without base history', async () => {
      // Fails and passes on each of three commits of another branch: same-commit variance, three
      // times over nine runs (an established flake: one commit's variance alone would be unproven).
      const shared = [sha(), sha(), sha()];
      const batches = Array.from({ length: 9 }, (_, i) =>
        run(shared[Math.floor(i / 3)]!, Date.now() - 3 * HOUR + i * 60_000, { wobbly: i % 3 === 1 ? 'fail' : 'pass', steady: 'pass' }, { branch: 'feature/y' }, 'passed', 'src/wobbly.test.ts'),
      );
      await td.ingest(...batches);
      const commit = sha();
      await td.ingest(run(commit, Date.now() - HOUR, { wobbly: 'fail', steady: 'pass' }, pr, 'failed', 'src/wobbly.test.ts'));
      const res = await td.request('GET', `/v1/runs/gate?commitSha=${commit}`);
      const w = res.json.gate.tests.find((t: any) => t.title === 'wobbly');
      expect(w.score).toBeGreaterThanOrEqual(0.5);
      expect(w).toMatchObject({ classification: 'known_flake', flakeProof: 'established', baseSampleSize: 0, baseFailRate: 0, state: 'flaky' });
      expect(res.json.gate).toMatchObject({ newFailures: 0, verdict: 'pass' });
      // strictness any still blocks: the test failed and is not quarantined.
      expect((await td.request('GET', `/v1/runs/gate?commitSha=${commit}&strictness=any`)).json.gate.verdict).toBe('block');
    });
  });
});

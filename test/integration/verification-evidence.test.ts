// Issue 38, defects 2 and 3: attempts `flakehouse run --verify-new` / `--verify-fix` made are
// evidence, not CI. Against the real daemon and chDB: they stay out of the daily rollups and
// GET /v1/health (flaky executions, re-run time, cost), and a verified fix, once merged, makes the
// test `fixed` — released from, and never put back into, automatic quarantine on that evidence.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const MIN = 60_000;
const sha = (): string => randomBytes(20).toString('hex');

interface Attempt {
  status: 'pass' | 'fail';
  verify?: 'new' | 'fix';
}

/** One run of `tests` (title → attempts in order; a later attempt retries the first). */
function batch(at: number, tests: Record<string, Attempt[]>, resource: object = {}): Record<string, unknown> {
  const executions: Record<string, unknown>[] = [];
  let k = 0;
  for (const [title, attempts] of Object.entries(tests)) {
    const first = executions.length;
    attempts.forEach((a, i) => {
      executions.push({
        filePath: `src/${title}.test.ts`,
        suite: 'v',
        title,
        status: a.status,
        attempt: i + 1,
        ...(i > 0 ? { retryOfIndex: first } : {}),
        startedAt: new Date(at + k++ * 100).toISOString(),
        durationMs: 1_000,
        ...(a.verify ? { attributes: { 'flakehouse.verify': a.verify } } : {}),
        ...(a.status === 'fail' ? { error: { message: 'timeout' } } : {}),
      });
    });
  }
  return nativeBatch({ resource: { commitSha: sha(), branch: 'main', trigger: 'push', ...resource }, run: { status: 'passed', startedAt: new Date(at).toISOString() }, executions });
}

const pass = (n: number, verify?: Attempt['verify']): Attempt[] => Array.from({ length: n }, () => ({ status: 'pass', ...(verify ? { verify } : {}) }));

describe('verification attempts are evidence, not CI', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_QUARANTINE_ENABLED: 'true', SERVICE_QUARANTINE_COOLDOWN_RUNS: '20', SERVICE_CI_MINUTE_COST: '1' } });
  });
  afterAll(async () => td?.close());

  async function testByTitle(title: string): Promise<any> {
    const board = await td.request('GET', '/v1/flaky?includeQuarantined=true&minScore=0&limit=100');
    const item = board.json.items.find((i: any) => i.title === title);
    return (await td.request('GET', `/v1/tests/${item.testIdentityId}`)).json;
  }

  it('a verified fix, merged, makes the test fixed and releases its automatic quarantine; later clean runs leave it out', async () => {
    const start = Date.now() - 6 * 3_600_000;
    // main: `heals` fails, then passes on a retry, in 4 of 8 runs: flaky, and auto-quarantined.
    // Posted together: the scorer folds the runs in by start time, one lease or many, and with a
    // cooldown of 20 clean runs nothing releases it in between; only the end state is read here.
    await td.ingest(...Array.from({ length: 8 }, (_, i) => batch(start + i * MIN, { heals: i % 2 === 1 ? [{ status: 'fail' }, { status: 'pass' }] : pass(1), other: pass(1) })));
    const flaky = await testByTitle('heals');
    expect(flaky).toMatchObject({ state: 'flaky', quarantined: true });
    // The fix's PR: its own attempt and 10 `--verify-fix` re-runs pass.
    await td.ingest(batch(start + 20 * MIN, { heals: [...pass(1), ...pass(10, 'fix')], other: pass(1) }, { branch: 'fix/heals', prNumber: 5, baseBranch: 'main', trigger: 'pull_request' }));
    expect(await testByTitle('heals')).toMatchObject({ state: 'flaky' });
    // Merged: main's next run passes.
    await td.ingest(batch(start + 30 * MIN, { heals: pass(1), other: pass(1) }));
    const fixed = await testByTitle('heals');
    expect(fixed).toMatchObject({ state: 'fixed', quarantined: false, score: 0 });
    expect(fixed.trend).not.toBe('rising');
    for (let i = 0; i < 3; i++) await td.ingest(batch(start + (40 + i) * MIN, { heals: pass(1), other: pass(1) }));
    expect(await testByTitle('heals')).toMatchObject({ state: 'fixed', quarantined: false });
  });

  it('keeps --verify-new and --verify-fix re-runs out of the daily rollups and health: only the real flake counts', async () => {
    const day = Date.now() - 2 * 3_600_000;
    await td.ingest(
      // A stable new test: its own attempt and 10 `--verify-new` re-runs pass (11 of 11).
      batch(day, { fresh: [...pass(1, 'new'), ...pass(10, 'new')] }, { branch: 'feature/n', prNumber: 6, baseBranch: 'main', trigger: 'pull_request' }),
      // A fix proven by 10 `--verify-fix` re-runs.
      batch(day + MIN, { mended: [...pass(1), ...pass(10, 'fix')] }, { branch: 'fix/m', prNumber: 7, baseBranch: 'main', trigger: 'pull_request' }),
      // A real flake: fails, passes on the runner's retry.
      batch(day + 2 * MIN, { real: [{ status: 'fail' }, { status: 'pass' }] }),
    );
    const store = td.daemon.store;
    const rows = await store.query<{ title: string; flaky: string | number; retries: string | number; rerun_ms: string | number }>(
      `SELECT i.title AS title, sum(s.flaky) AS flaky, sum(s.retries) AS retries, sum(s.rerun_ms_sum) AS rerun_ms
       FROM ${store.table('daily_test_stats')} AS s INNER JOIN (SELECT id, title FROM ${store.table('test_identities')} FINAL) AS i ON i.id = s.test_id
       WHERE i.title IN ('fresh', 'mended', 'real') GROUP BY title ORDER BY title`,
    );
    expect(rows.map((r) => [r.title, Number(r.flaky), Number(r.retries), Number(r.rerun_ms)])).toEqual([
      ['fresh', 0, 0, 0],
      ['mended', 0, 0, 0],
      ['real', 1, 1, 1_000],
    ]);
    const trends = await store.query<{ flaky_tests: string | number }>(
      `SELECT uniqMerge(flaky_tests) AS flaky_tests FROM ${store.table('flaky_trends')} WHERE day = toDate(fromUnixTimestamp64Milli({at:Int64}, 'UTC'))`,
      { at: day },
    );
    // `real` (and `heals`, when the first case's runs fell on the same day) — never `fresh` or `mended`.
    expect(Number(trends[0]!.flaky_tests)).toBeLessThanOrEqual(2);
    // Health bills and counts CI's own attempts only: what the executions say without the verification re-runs.
    const ci = await store.query<{ flaky: string | number; rerun_ms: string | number }>(
      `SELECT countIf(status = 'flaky' OR (status = 'pass' AND attempt > 1)) AS flaky, sumIf(duration_ms, attempt > 1) AS rerun_ms
       FROM ${store.table('executions')} WHERE NOT (attempt > 1 AND JSONExtractString(attributes, 'flakehouse.verify') != '')`,
    );
    const h = (await td.request('GET', '/v1/health?days=7')).json;
    expect(h.cost).toMatchObject({ flakyOccurrences: Number(ci[0]!.flaky), rerunMs: Number(ci[0]!.rerun_ms) });
    expect(h.cost.flakyOccurrences).toBeLessThanOrEqual(5); // heals' 4 and real's 1
    const before = await store.query<{ n: string | number }>(
      `SELECT count() AS n FROM ${store.table('executions')} WHERE JSONExtractString(attributes, 'flakehouse.verify') != '' AND attempt > 1`,
    );
    // Stored as such: every verification attempt is kept, marked.
    expect(Number(before[0]!.n)).toBe(30);
  });
});

// Clean passes that change nothing visible are written behind; anything visible goes out at once.
import { afterAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

function run(r: number, status: 'pass' | 'fail'): Record<string, unknown> {
  const at = Date.parse('2026-11-15T10:00:00Z') + r * 60_000;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `write-behind-${r}`,
    resource: { ciProvider: 'local', commitSha: `aaa${r}bbb`, branch: 'main', trigger: 'push' },
    run: { status: status === 'fail' ? 'failed' : 'passed', startedAt: at },
    executions: [{ filePath: 'src/w.test.ts', suite: 's', title: 'steady', status, startedAt: at, durationMs: 3, ...(status === 'fail' ? { error: { message: 'x' } } : {}) }],
  };
}

describe('test state write-behind', () => {
  let td: TestDaemon | undefined;
  afterAll(async () => td?.close());

  it('writes a steadily passing test every 20 runs, and a failure at once', async () => {
    td = await startTestDaemon();
    const t = td;
    const versions = async (): Promise<{ n: number; samples: number }> => {
      const rows = await t.daemon.store.query<{ n: number; samples: number }>(
        `SELECT count() AS n, max(samples) AS samples FROM ${t.daemon.store.table('test_state')}`,
      );
      return { n: Number(rows[0]!.n), samples: Number(rows[0]!.samples) };
    };
    for (let r = 1; r <= 25; r++) {
      await t.request('POST', '/v1/ingest', { body: run(r, 'pass') });
      await t.settled();
    }
    const steady = await versions();
    // First sight, then once per 20 clean runs: not 25 rows.
    expect(steady.n).toBeLessThanOrEqual(3);
    expect(steady.samples).toBeGreaterThanOrEqual(20);
    await t.request('POST', '/v1/ingest', { body: run(26, 'fail') });
    await t.waitFor(async () => (await versions()).samples === 26);
    expect((await versions()).n).toBe(steady.n + 1);
  });
});

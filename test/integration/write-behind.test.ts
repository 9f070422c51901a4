// Clean passes that change nothing visible are written behind; anything visible goes out at once.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

function run(r: number, status: 'pass' | 'fail', titles = ['steady']): Record<string, unknown> {
  const at = Date.parse('2026-11-15T10:00:00Z') + r * 60_000;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `write-behind-${r}`,
    resource: { ciProvider: 'local', commitSha: `aaa${r}bbb`, branch: 'main', trigger: 'push' },
    run: { status: status === 'fail' ? 'failed' : 'passed', startedAt: at },
    executions: titles.map((title) => ({ filePath: 'src/w.test.ts', suite: 's', title, status, startedAt: at, durationMs: 3, ...(status === 'fail' ? { error: { message: 'x' } } : {}) })),
  };
}

describe('test state write-behind', () => {
  let td: TestDaemon | undefined;
  let small: TestDaemon | undefined;
  afterAll(async () => {
    await td?.close();
    await small?.close();
  });

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

  it('writes at once the states the cache cannot keep, and behind only those it keeps', async () => {
    // A cache of one state: the second test's state has nowhere to wait, so each run writes it.
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-write-behind-'));
    const pipelineFile = path.join(dir, 'pipeline.yaml');
    const yaml = readFileSync(path.resolve('pipelines/default.yaml'), 'utf8');
    expect(yaml).toContain('scoring: {}');
    writeFileSync(pipelineFile, yaml.replace('scoring: {}', 'scoring: { state_cache_size: 1 }'));
    small = await startTestDaemon({ pipelineFile });
    const t = small;
    for (let r = 1; r <= 8; r++) {
      await t.request('POST', '/v1/ingest', { body: run(r, 'pass', ['kept', 'not kept']) });
      await t.settled();
    }
    // What test_state holds of each: the kept test's last clean runs still wait in memory.
    const rows = await t.daemon.store.query<{ samples: number }>(
      `SELECT max(samples) AS samples FROM ${t.daemon.store.table('test_state')} GROUP BY test_id ORDER BY samples`,
    );
    const [kept, notKept] = rows.map((r) => Number(r.samples));
    expect(kept).toBeLessThan(8);
    expect(notKept).toBe(8);
  });
});

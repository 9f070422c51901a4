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
  let packedDaemon: TestDaemon | undefined;
  let plainDaemon: TestDaemon | undefined;
  afterAll(async () => {
    await td?.close();
    await small?.close();
    await packedDaemon?.close();
    await plainDaemon?.close();
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

  it('scores the same with the cache’s states packed as with them all kept as objects', async () => {
    // state_cache_hot: 1 keeps one state as an object: every other state is packed when its lease
    // commits and unpacked when its test runs again. Flaky, broken and steady tests, 12 runs.
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-write-behind-'));
    const pipelineFile = path.join(dir, 'pipeline.yaml');
    const yaml = readFileSync(path.resolve('pipelines/default.yaml'), 'utf8');
    writeFileSync(pipelineFile, yaml.replace('scoring: {}', 'scoring: { state_cache_hot: 1 }'));
    const daemons = await Promise.all([startTestDaemon({ pipelineFile }), startTestDaemon()]);
    [packedDaemon, plainDaemon] = daemons;
    const titles = ['steady', 'flaky', 'broken'];
    const body = (r: number): Record<string, unknown> => {
      const at = Date.parse('2026-11-15T10:00:00Z') + r * 60_000;
      const status = (title: string): 'pass' | 'fail' => (title === 'flaky' ? (r % 3 === 0 ? 'fail' : 'pass') : title === 'broken' && r > 6 ? 'fail' : 'pass');
      return {
        contractVersion: '0.1.0',
        idempotencyKey: `packed-${r}`,
        resource: { ciProvider: 'local', commitSha: `ccc${r}ddd`, branch: 'main', trigger: 'push' },
        run: { status: 'passed', startedAt: at },
        executions: titles.flatMap((title) => {
          const first = { filePath: 'src/p.test.ts', suite: 's', title, status: status(title), attempt: 1, startedAt: at, durationMs: 3, ...(status(title) === 'fail' ? { error: { message: 'x' } } : {}) };
          // The flaky test passes on its retry: same-code evidence.
          return title === 'flaky' && first.status === 'fail' ? [first, { ...first, status: 'pass', attempt: 2, error: undefined }] : [first];
        }),
      };
    };
    const states = async (t: TestDaemon): Promise<unknown[]> =>
      (
        await t.daemon.store.query<{ title: string; score: number; state: string; samples: number; model: string }>(
          `SELECT title, score, state, samples, model FROM ${t.daemon.store.table('test_state')} FINAL ORDER BY title`,
        )
      ).map((r) => {
        // Run ids are each daemon's own: compared by count.
        const { runIds, ...model } = JSON.parse(r.model) as { runIds: string[] };
        return { ...r, model, runs: runIds.length };
      });
    for (let r = 1; r <= 12; r++) {
      for (const t of daemons) {
        expect((await t.request('POST', '/v1/ingest', { body: body(r) })).status).toBe(202);
        await t.settled();
      }
    }
    const [packed = [], plain = []] = await Promise.all(daemons.map(states));
    expect(packed).toHaveLength(3);
    expect(packed).toEqual(plain);
    // What makes the comparison worth anything: the states moved apart from one another.
    expect(new Set(packed.map((s) => (s as { state: string }).state))).toEqual(new Set(['healthy', 'flaky', 'broken']));
  });
});


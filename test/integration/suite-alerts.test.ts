// suite.regressed and suite.slowed come from the daily rollups, once per suite and day.
import { afterAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const DAY = 86_400_000;

function batch(key: string, at: number, n: number, failing: number, durationMs: number): Record<string, unknown> {
  return {
    contractVersion: '0.1.0',
    idempotencyKey: key,
    resource: { ciProvider: 'local', commitSha: 'abc1234', branch: 'main', trigger: 'push' },
    run: { status: failing > 0 ? 'failed' : 'passed', startedAt: at },
    executions: Array.from({ length: n }, (_, i) => ({
      filePath: 'src/checkout.test.ts',
      suite: 'checkout',
      title: `case ${i}`,
      status: i < failing ? 'fail' : 'pass',
      startedAt: at + i,
      durationMs,
      ...(i < failing ? { error: { message: 'boom' } } : {}),
    })),
  };
}

describe('suite alerts', () => {
  let td: TestDaemon | undefined;
  afterAll(async () => td?.close());

  it('emits suite.regressed and suite.slowed once when today crosses the trailing baseline', async () => {
    td = await startTestDaemon();
    const t = td;
    const events: DomainEvent[] = [];
    t.daemon.runtime.onEvent((e) => events.push(e));
    const today = Date.now() - 60_000;
    for (let d = 3; d >= 1; d--) {
      expect((await t.request('POST', '/v1/ingest', { body: batch(`prior-day-${d}`, today - d * DAY, 25, 1, 200) })).status).toBe(202);
      await t.settled();
    }
    expect(events.filter((e) => e.type.startsWith('suite.'))).toEqual([]);
    await t.request('POST', '/v1/ingest', { body: batch('today-run-1', today, 25, 8, 900) });
    await t.waitFor(async () => events.filter((e) => e.type.startsWith('suite.')).length >= 2);
    const alerts = events.filter((e) => e.type.startsWith('suite.'));
    expect(alerts.map((e) => e.type).sort()).toEqual(['suite.regressed', 'suite.slowed']);
    expect(alerts[0]!.data).toMatchObject({ suite: 'checkout', day: new Date(today).toISOString().slice(0, 10) });

    // More of the same day: already over the line, nothing new.
    await t.request('POST', '/v1/ingest', { body: batch('today-run-2', today + 1000, 25, 10, 900) });
    await t.waitFor(async () => events.filter((e) => e.type === 'run.processed').length >= 5);
    expect(events.filter((e) => e.type.startsWith('suite.'))).toHaveLength(2);
  });
});

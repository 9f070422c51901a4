// A large run reaches the server as several OTLP requests of one trace, the run span in the last.
// The PR summary and the gate say `complete: false` until that part is in, so a verdict is never
// taken on half a run (the CLI's --wait waits for `complete`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import type { IngestBatch } from '../../client/src/contract/batch.js';
import { encodeOtlpRun } from '../../client/src/contract/otlp-encode.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const SHA = 'c0ffee1234567890c0ffee1234567890c0ffee12';

function bigRun(n: number): IngestBatch {
  const at = Date.now() - 60_000;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `pr-complete-${process.pid}`,
    resource: { ciProvider: 'github_actions', commitSha: SHA, branch: 'feature', baseBranch: 'main', prNumber: 7, trigger: 'pull_request' },
    run: { status: 'failed', startedAt: at },
    executions: Array.from({ length: n }, (_, i) => ({
      filePath: `src/part${i % 40}.test.ts`,
      suite: 's',
      title: `case ${i}`,
      // The only failure is in the last part: judging the first part alone would pass the gate.
      status: i === n - 1 ? ('fail' as const) : ('pass' as const),
      attempt: 1,
      startedAt: at + i,
      durationMs: 3,
      ...(i === n - 1 ? { error: { message: 'expected 1 to be 2' } } : {}),
    })),
  };
}

describe('summary and gate on a run that arrives in parts', () => {
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  beforeAll(async () => {
    td = await startTestDaemon();
    td.daemon.runtime.onEvent((e) => events.push(e));
  });
  afterAll(async () => td?.close());

  const post = async (body: Uint8Array): Promise<string> => {
    const res = await td.request('POST', '/v1/traces', { body, headers: { 'content-type': 'application/x-protobuf' } });
    expect(res.status, res.text).toBe(202);
    return String(res.json.receiptId);
  };
  const processed = (receipt: string) => td.waitFor(async () => events.some((e) => e.type === 'run.processed' && e.data.receiptId === receipt), 30_000);

  it('is incomplete until the part with the run span is processed, then judges the whole run', async () => {
    const parts = encodeOtlpRun(bigRun(2500));
    expect(parts.length).toBe(2);
    await processed(await post(parts[0]!));

    const early = await td.request('GET', `/v1/runs/summary?commitSha=${SHA}`);
    expect(early.status).toBe(200);
    expect(early.json.summary).toMatchObject({ complete: false, failed: 0 });
    const earlyGate = await td.request('GET', `/v1/runs/gate?commitSha=${SHA}&baseBranch=main`);
    expect(earlyGate.json.gate).toMatchObject({ complete: false, verdict: 'pass' });

    await processed(await post(parts[1]!));
    const summary = await td.request('GET', `/v1/runs/summary?commitSha=${SHA}`);
    expect(summary.json.summary).toMatchObject({ complete: true, failed: 1 });
    const gate = await td.request('GET', `/v1/runs/gate?commitSha=${SHA}&baseBranch=main`);
    expect(gate.json.gate).toMatchObject({ complete: true, verdict: 'block', newFailures: 1 });
  }, 90_000);
});

// A large JUnit report over real HTTP: split into parts of at most 5,000 executions that make one
// run (one receipt for the client), and refused with 413 past 100,000 executions.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { holdWorker } from '../helpers/observe.js';

/** `cases` test cases; every 1000th fails once and passes on a surefire rerun (one flaky test, two executions). */
function report(cases: number, tag: string): { xml: string; executions: number; flaky: number } {
  const parts = ['<testsuites><testsuite name="big" timestamp="2026-11-20T10:00:00">'];
  let executions = 0;
  let flaky = 0;
  for (let i = 0; i < cases; i++) {
    if (i % 1000 === 999) {
      parts.push(`<testcase classname="pkg.C${i % 50}" name="t${tag}${i}" time="0.010"><flakyFailure message="boom" type="E">trace</flakyFailure></testcase>`);
      executions += 2;
      flaky++;
    } else {
      parts.push(`<testcase classname="pkg.C${i % 50}" name="t${tag}${i}" time="0.010"/>`);
      executions++;
    }
  }
  parts.push('</testsuite></testsuites>');
  return { xml: parts.join(''), executions, flaky };
}

let td: TestDaemon;
beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
});
afterAll(async () => {
  await td?.close();
});

describe('large JUnit reports', () => {
  it('a report of 12,000 cases is split in parts stored as one run; the client sees one receipt; a replay is deduplicated', async () => {
    const branch = `junit-big-${randomBytes(3).toString('hex')}`;
    const { xml, executions, flaky } = report(12_000, 'a');
    expect(executions).toBeGreaterThan(10_000); // three parts of ≤ 5,000
    const sha = randomBytes(20).toString('hex');
    const body = { idempotencyKey: `big-${randomBytes(6).toString('hex')}`, resource: { ciProvider: 'github_actions', commitSha: sha, branch, trigger: 'push' }, xml };
    // The worker is held while the report is accepted: it becomes three jobs of at most 5,000.
    const release = await holdWorker(td);
    const res = await td.request('POST', '/v1/ingest/junit', { body });
    expect(td.daemon.queue.depth()).toBe(3);
    await release();
    expect(res.status, res.text).toBe(202);
    expect(Object.keys(res.json).sort()).toEqual(['acceptedExecutions', 'deduplicated', 'receiptId']);
    expect(res.json.acceptedExecutions).toBe(executions);
    expect(res.json.deduplicated).toBe(false);

    const run = await td.waitFor(async () => {
      const list = await td.request('GET', `/v1/runs?branch=${branch}`);
      const items = list.json.items as any[];
      return items.length === 1 && items[0].counts.total === 12_000 ? items[0] : undefined;
    }, 60_000);
    expect(run.counts).toMatchObject({ total: 12_000, flaky, failed: 0, passed: 12_000 - flaky });
    expect(run.status).toBe('passed');
    // Still one run once everything settled: no part landed in a run of its own; its last part is in.
    expect((await td.request('GET', `/v1/runs?branch=${branch}`)).json.items).toHaveLength(1);
    const summary = await td.request('GET', `/v1/runs/summary?commitSha=${sha}`);
    expect(summary.status, summary.text).toBe(200);
    expect(summary.json.summary).toMatchObject({ complete: true, failed: 0 });

    const replay = await td.request('POST', '/v1/ingest/junit', { body });
    expect(replay.status).toBe(202);
    expect(replay.json).toEqual({ receiptId: res.json.receiptId, acceptedExecutions: executions, deduplicated: true });
  }, 90_000);

  it('past 100,000 executions: 413 payload_too_large naming the limit and how to split', async () => {
    const { xml } = report(100_001, 'b');
    const res = await td.request('POST', '/v1/ingest/junit', {
      body: { idempotencyKey: `huge-${randomBytes(6).toString('hex')}`, resource: { ciProvider: 'local', commitSha: 'abcdef1234', branch: 'huge', trigger: 'push' }, xml },
    });
    expect(res.status, res.text).toBe(413);
    expect(res.json.error).toBe('payload_too_large');
    expect(res.json.message).toContain('100000');
    expect(res.json.message).toMatch(/shard/);
    expect(td.daemon.queue.depth()).toBe(0);
  }, 30_000);
});

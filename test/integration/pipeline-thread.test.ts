// SERVICE_PIPELINE_THREAD=true (the default): processors and exporters on their own thread,
// reaching the store and the queue on the main thread by message; false: everything on one thread.
// The same guarantees either way: results stored once, events after the commit, counters visible,
// maintenance holds the lease loop. The thread here runs the TypeScript sources through tsx, as in an
// image without the CLI build; the other thread tests (worker-isolation, dead-letters) run the build's.
import { readFileSync, readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

/** Niceness of each of this process's threads (Linux), from /proc. */
function threadNiceness(): number[] {
  return readdirSync('/proc/self/task').flatMap((tid) => {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      return [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])];
    } catch {
      return [];
    }
  });
}

describe.each([
  ['on a pipeline thread', 'true'],
  ['on one thread', 'false'],
])('the pipeline %s', (_name, thread) => {
  let td: TestDaemon | undefined;
  afterAll(async () => td?.close());

  it('processes, emits and counts; a replay writes nothing twice', async () => {
    const before = threadNiceness().filter((n) => n === 10).length;
    td = await startTestDaemon({ env: { SERVICE_PIPELINE_THREAD: thread }, threadFromSources: true });
    // The pipeline thread yields the CPU to the HTTP thread: it runs at niceness 10 (Linux).
    if (process.platform === 'linux') expect(threadNiceness().filter((n) => n === 10).length - before).toBe(thread === 'true' ? 1 : 0);
    const t = td;
    const seen: DomainEvent[] = [];
    t.daemon.runtime.onEvent((e) => seen.push(e));
    const body = nativeBatch({ n: 6, resource: { branch: 'thread' } });
    const res = await t.request('POST', '/v1/ingest', { body });
    expect(res.status).toBe(202);
    await t.waitFor(async () => seen.some((e) => e.type === 'run.processed'));
    const runId = seen.find((e) => e.type === 'run.processed')!.data.runId as string;
    const run = await t.request('GET', `/v1/runs/${runId}`);
    expect(run.json.counts).toMatchObject({ total: 6, passed: 6 });
    expect(seen.filter((e) => e.type === 'identity.created')).toHaveLength(6);
    // Counters come across from the pipeline thread.
    await t.waitFor(async () => t.daemon.runtime.stats.executions === 6);

    const replay = await t.request('POST', '/v1/ingest', { body });
    expect(replay.json).toMatchObject({ receiptId: res.json.receiptId, deduplicated: true });
    const rows = await t.daemon.store.query<{ n: number }>(`SELECT count() AS n FROM ${t.daemon.store.table('executions')} WHERE run_id = {runId:UUID}`, { runId });
    expect(Number(rows[0]!.n)).toBe(6);
  });

  it('holds the lease loop while the main thread runs exclusive maintenance', async () => {
    const t = td!;
    const seen: DomainEvent[] = [];
    t.daemon.runtime.onEvent((e) => seen.push(e));
    let accepted = 0;
    await t.daemon.runtime.exclusive(async () => {
      const res = await t.request('POST', '/v1/ingest', { body: nativeBatch({ n: 2, resource: { branch: 'held' } }) });
      expect(res.status).toBe(202);
      accepted = 1;
      // Accepted but not processed while the lock is held: a window of 0.5 s in which nothing may
      // happen (the behaviour under test; there is no event to wait for).
      await new Promise((r) => setTimeout(r, 500));
      expect(seen.some((e) => e.type === 'run.processed')).toBe(false);
    });
    expect(accepted).toBe(1);
    await t.waitFor(async () => seen.some((e) => e.type === 'run.processed'));
  });
});

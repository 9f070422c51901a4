// The runtime's own stages of an executions pipeline (src/pipeline/stages/): assembly (a lease's
// jobs → the WorkBatch, a job that cannot be stored set aside alone in the real queue) and the plan
// (the events processors emitted and one `run.processed` per job, in the outbox's order).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecutionInput, IngestBatch, IngestSource } from '../../client/src/contract/batch.js';
import type { DomainEvent } from '../../src/domain/events.js';
import { stableUuid } from '../../client/src/contract/ids.js';
import { buildRun } from '../../src/domain/records.js';
import { EmbeddedQueue } from '../../src/queue/embedded.js';
import type { Job } from '../../src/queue/types.js';
import { RECEIVED } from '../../src/pipeline/slots.js';
import { ASSEMBLED, assembleJob, assembleLease, leaseNow } from '../../src/pipeline/stages/assemble.js';
import { leasePlan, planEvents, runProcessed } from '../../src/pipeline/stages/run-processed.js';
import { WorkBatch } from '../../src/pipeline/work-batch.js';

const T = Date.UTC(2026, 10, 20, 10);
const HOUR = 3_600_000;

function exec(over: Partial<ExecutionInput> = {}): ExecutionInput {
  return { filePath: 'src/a.test.ts', suite: 'S', title: 't', status: 'pass', attempt: 1, startedAt: T, durationMs: 5, ...over };
}

function batch(key: string, over: { run?: Partial<IngestBatch['run']>; executions?: ExecutionInput[] } = {}): IngestBatch {
  return {
    contractVersion: '0.1.0',
    idempotencyKey: key,
    resource: { ciProvider: 'github_actions', commitSha: 'abcdef1', branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: T, ...over.run },
    executions: over.executions ?? [exec({ title: `${key}-a` }), exec({ title: `${key}-b`, status: 'fail' })],
  };
}

function job(n: number, projectId: string, b: IngestBatch, receivedAt = T + HOUR, source: IngestSource = 'native'): Job {
  return { id: `job-${n}`, receiptId: `00000000-0000-4000-8000-00000000000${n}`, projectId, source, batch: b, receivedAt, attempts: 0 };
}

describe('assembly stage', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function queue(): EmbeddedQueue {
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-stages-'));
    // One attempt: a job set aside is dead at once, where the test can see it.
    const q = EmbeddedQueue.open({ path: dir, visibilityMs: 60_000, maxAttempts: 1, baseBackoffMs: 100, maxBackoffMs: 1_000 });
    cleanups.push(async () => {
      await q.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return q;
  }

  it('is what the slot check takes as handed to every executions pipeline', () => {
    expect(ASSEMBLED).toEqual(['runs']);
    expect(RECEIVED).toBe(ASSEMBLED);
  });

  it('builds each job\'s run, sets a job that cannot be stored aside alone in the queue, and keeps the others in order', async () => {
    const q = queue();
    const poison = batch('poison-1');
    poison.executions[0]!.startedAt = 1e300; // not a time ClickHouse can store
    const odd = batch('surrogate-1');
    odd.executions[0]!.title = 'bad \ud800 title';
    for (const b of [batch('ok-1'), poison, odd]) await q.enqueue({ projectId: 'p1', source: 'native', batch: b });
    const lease = (await q.dequeue({ maxJobs: 10, maxExecutions: 1_000 }))!;
    expect(lease.jobs).toHaveLength(3);

    const wb = await assembleLease(lease, (j, err) => q.failJob(lease.id, j.id, err instanceof Error ? err.message : String(err)));

    expect(wb.leaseId).toBe(lease.id);
    expect(wb.items.map((i) => i.job.batch.idempotencyKey)).toEqual(['ok-1', 'surrogate-1']);
    for (const item of wb.items) {
      expect(item.run).toEqual(buildRun({ projectId: 'p1', receiptId: item.job.receiptId, source: 'native', batch: item.job.batch, receivedAt: item.job.receivedAt }));
      expect(item.run.counts.total).toBe(2);
      expect(item.executions).toEqual([]);
    }
    // Sanitised in place, as the door does.
    expect(wb.items[1]!.job.batch.executions[0]!.title).toBe('bad \ufffd title');
    const dead = q.deadJobs(10);
    expect(dead.map((d) => d.job.batch.idempotencyKey)).toEqual(['poison-1']);
    expect(dead[0]!.error).toMatch(/^executions\.0\.startedAt: /);
  });

  it('in a lease an earlier delivery froze, a job that cannot be stored fails the lease instead (its composition is kept)', async () => {
    const poison = batch('poison-2');
    poison.executions[1]!.startedAt = 1e300;
    const jobs = [job(1, 'p1', batch('ok-2')), job(2, 'p1', poison)];
    const setAside: Job[] = [];
    await expect(assembleLease({ id: 'L', jobs, attempt: 2, plan: { events: [] } }, async (j) => void setAside.push(j))).rejects.toThrow(/^executions\.1\.startedAt: /);
    expect(setAside).toEqual([]);
    // Unfrozen, the same jobs: the poison alone is set aside.
    const wb = await assembleLease({ id: 'L', jobs, attempt: 1 }, async (j) => void setAside.push(j));
    expect(setAside.map((j) => j.id)).toEqual(['job-2']);
    expect(wb.items.map((i) => i.job.id)).toEqual(['job-1']);
  });

  it('"now" is the start of the newest run, capped at the newest arrival, and the same on every delivery', async () => {
    const clock = (): number => {
      throw new Error('the clock is read only for an empty lease');
    };
    // Backfilled history: runs of last week, received now.
    const old = [job(1, 'p', batch('b1', { run: { startedAt: T - 7 * 24 * HOUR } }), T), job(2, 'p', batch('b2', { run: { startedAt: T - 6 * 24 * HOUR } }), T)];
    expect(leaseNow(old.map(assembleJob), clock)).toBe(T - 6 * 24 * HOUR);
    // A run stamped in the future (a skewed CI clock) is capped at when it arrived.
    const skewed = [job(3, 'p', batch('b3', { run: { startedAt: T + 5 * HOUR } }), T + HOUR), job(4, 'p', batch('b4'), T)];
    expect(leaseNow(skewed.map(assembleJob), clock)).toBe(T + HOUR);
    expect((await assembleLease({ id: 'L1', jobs: skewed, attempt: 1 }, async () => {})).now).toBe(T + HOUR);
    expect((await assembleLease({ id: 'L1', jobs: skewed, attempt: 2, plan: { events: [] } }, async () => {})).now).toBe(T + HOUR);
    expect(leaseNow([], () => 42)).toBe(42);
  });
});

describe('plan stage (run.processed and the emitted events)', () => {
  const event = (id: string, projectId: string): DomainEvent => ({ id, type: 'flaky.detected', projectId, occurredAt: T, data: {} });

  function leaseOf(jobs: Job[]): WorkBatch {
    return new WorkBatch({ leaseId: 'L', items: jobs.map(assembleJob), now: T });
  }

  it('one run.processed per job, its id stable per receipt, carrying the run', () => {
    const j = job(1, 'p1', batch('rp-1'));
    const first = runProcessed(assembleJob(j));
    expect(first).toEqual({
      id: stableUuid('run.processed', 'p1', j.receiptId),
      type: 'run.processed',
      projectId: 'p1',
      occurredAt: j.receivedAt,
      data: expect.objectContaining({ receiptId: j.receiptId, source: 'native', status: 'passed', commitSha: 'abcdef1', branch: 'main', prNumber: null, partial: false }),
    });
    const run = assembleJob(j).run;
    expect(first.data).toMatchObject({ runId: run.id, counts: run.counts });
    expect((first.data as { counts: { total: number; failed: number } }).counts).toMatchObject({ total: 2 });
    // A redelivery builds the same event (same id: the outbox's subscribers deduplicate on it).
    expect(runProcessed(assembleJob(job(1, 'p1', batch('rp-1'))))).toEqual(first);
  });

  it('an OTLP trace part is `partial`', () => {
    const part = job(1, 'p1', batch('otlp-1', { run: { traceId: '0af7651916cd43dd8448eb211c80319c' } }), T + HOUR, 'otlp');
    expect(runProcessed(assembleJob(part)).data).toMatchObject({ partial: true });
  });

  it('puts each project\'s emitted events just before the run.processed of its first job; a project without a job goes last', () => {
    const wb = leaseOf([job(1, 'pA', batch('a1')), job(2, 'pB', batch('b1')), job(3, 'pA', batch('a2'))]);
    wb.emit('pB', event('b-1', 'pB'));
    wb.emit('pA', event('a-1', 'pA'));
    wb.emit('pC', event('c-1', 'pC'));
    wb.emit('pA', event('a-2', 'pA'));
    const rp = (n: number): string => stableUuid('run.processed', n === 2 ? 'pB' : 'pA', `00000000-0000-4000-8000-00000000000${n}`);
    expect(planEvents(wb).map((e) => e.id)).toEqual(['a-1', 'a-2', rp(1), 'b-1', rp(2), rp(3), 'c-1']);
    expect(leasePlan([{ batch: wb, emitsEvents: true }])).toEqual({ events: planEvents(wb) });
  });

  it('a pipeline without the events connector plans no events', () => {
    const wb = leaseOf([job(1, 'pA', batch('a1'))]);
    wb.emit('pA', event('a-1', 'pA'));
    expect(leasePlan([{ batch: wb, emitsEvents: false }])).toEqual({ events: [] });
    // A run routed to two pipelines that pass events on: its events once.
    expect(leasePlan([{ batch: wb, emitsEvents: true }, { batch: wb, emitsEvents: true }])).toEqual({ events: planEvents(wb) });
  });
});

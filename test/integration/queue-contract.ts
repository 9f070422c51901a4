// The queue contract (src/queue/types.ts) as a test suite every backend must pass. Each test gets
// a fresh temp dir; "restart" means close() and open() again on the same dir.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecutionInput, IngestBatch, IngestSource } from '../../client/src/contract/batch.js';
import type { DomainEvent } from '../../src/domain/events.js';
import type { DequeueOptions, Job, Lease, NewJob, Queue } from '../../src/queue/types.js';

export interface QueueContractOptions {
  visibilityMs: number;
  maxAttempts: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
}

export interface QueueFactory {
  open(dir: string, opts: QueueContractOptions): Promise<Queue> | Queue;
}

/** What a backend may legitimately not do; every flag defaults to the embedded queue's behaviour. */
export interface QueueCapabilities {
  /**
   * One lease may hold the jobs of several projects, in global receipt order (default true). A
   * partitioned backend (NATS with P > 1) keys partitions by project and leases from one partition
   * at a time, so it keeps receipt order per project only: the tests that lease several projects at
   * once then drain every lease and check per-project order instead.
   */
  leasesSpanProjects?: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ALL: DequeueOptions = { maxJobs: 10_000, maxExecutions: 1_000_000 };
/** Long enough that no lease expires during a test unless the test waits for it on purpose. */
const DEFAULTS: QueueContractOptions = { visibilityMs: 60_000, maxAttempts: 3, baseBackoffMs: 100, maxBackoffMs: 1_000 };

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function makeExecutions(n: number, tag = 'x'): ExecutionInput[] {
  return Array.from({ length: n }, (_, i) => ({
    filePath: `src/${tag}.test.ts`,
    suite: `suite ${tag}`,
    title: `case ${i}`,
    status: i % 3 === 0 ? 'fail' : 'pass',
    attempt: 1,
    startedAt: 1_700_000_000_000 + i,
    durationMs: 10 + i,
  }));
}

export function makeBatch(idempotencyKey: string, executions = 1): IngestBatch {
  return {
    contractVersion: '0.1.0',
    idempotencyKey,
    resource: { ciProvider: 'github_actions', commitSha: 'abcdef1234567', branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: 1_700_000_000_000 },
    executions: makeExecutions(executions, idempotencyKey),
  };
}

/** A payload that exercises nesting, optional fields, unicode and numbers of every kind. */
function richBatch(idempotencyKey: string, i: number): IngestBatch {
  return {
    contractVersion: '0.1.0',
    idempotencyKey,
    resource: {
      ciProvider: 'gitlab_ci',
      ciRunId: `run-${i}`,
      commitSha: 'f'.repeat(40),
      branch: `feature/ünïcödé-${i} 🚀`,
      prNumber: 1000 + i,
      trigger: 'pull_request',
      shardIndex: i % 4,
      shardTotal: 4,
      repository: 'org/repo',
    },
    run: { status: 'failed', startedAt: 1_700_000_000_123 + i, finishedAt: 1_700_000_100_000 + i, traceId: 'a'.repeat(32) },
    executions: [
      {
        filePath: 'tests/a.spec.ts',
        suite: 'A > B',
        title: `handles "quotes" \n and newlines ${i}`,
        params: { n: i, list: [1, 'two', { three: 3 }], flag: false, nothing: null },
        status: 'fail',
        attempt: 2,
        retryOfIndex: 0,
        startedAt: 1_700_000_000_500,
        durationMs: 12.5,
        error: { type: 'AssertionError', message: 'expected 1 to be 2', stack: 'at x (a.ts:1:1)\nat y (b.ts:2:2)' },
        artifacts: [{ name: 'trace', contentType: 'application/zip', path: 'p/trace.zip', sizeBytes: 2 ** 40 }],
        attributes: { 'browser.name': 'chromium', retries: 2, headless: true },
        spans: [{ spanId: 'b'.repeat(16), name: 'click', kind: 'browser', status: 'error', startedAt: 1, durationMs: -0.5 }],
      },
      ...makeExecutions(2, `rich${i}`),
    ],
  };
}

function newJob(idempotencyKey: string, opts: { projectId?: string; executions?: number; source?: IngestSource } = {}): NewJob {
  return { projectId: opts.projectId ?? 'proj-1', source: opts.source ?? 'native', batch: makeBatch(idempotencyKey, opts.executions ?? 1) };
}

export function makeEvent(n: number, projectId = 'proj-1'): DomainEvent {
  return {
    id: randomUUID(),
    type: n % 2 === 0 ? 'run.processed' : 'flaky.detected',
    projectId,
    occurredAt: 1_700_000_000_000 + n,
    data: { n, nested: { list: [1, 2, 3], label: `event ${n}` }, nothing: null },
  };
}

/** Polls dequeue until a lease comes back (for visibility/backoff waits without tight timing). */
async function dequeueWithin(q: Queue, withinMs: number, opts: DequeueOptions = ALL): Promise<Lease> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const lease = await q.dequeue(opts);
    if (lease) return lease;
    if (Date.now() > deadline) throw new Error(`no lease within ${withinMs} ms`);
    await sleep(10);
  }
}

const jobIds = (lease: Lease): string[] => lease.jobs.map((j) => j.id).sort();

export function queueContract(name: string, factory: QueueFactory, caps: QueueCapabilities = {}): void {
  const leasesSpanProjects = caps.leasesSpanProjects ?? true;
  /** Every lease dequeue hands out until it is empty, jobs concatenated (leases left unacked). */
  async function drainLeases(q: Queue): Promise<Lease[]> {
    const leases: Lease[] = [];
    for (let lease = await q.dequeue(ALL); lease; lease = await q.dequeue(ALL)) leases.push(lease);
    return leases;
  }
  /** The receipts of each project, in the order given. */
  function perProject(jobs: { projectId: string; receiptId: string }[]): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const j of jobs) (out[j.projectId] ??= []).push(j.receiptId);
    return out;
  }
  describe(name, () => {
    const cleanups: (() => Promise<void>)[] = [];

    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
    });

    interface Harness {
      q: Queue;
      dir: string;
      /** close() then open() again on the same dir (optionally with other options). */
      restart(opts?: Partial<QueueContractOptions>): Promise<Queue>;
    }

    async function setup(overrides: Partial<QueueContractOptions> = {}): Promise<Harness> {
      const dir = mkdtempSync(path.join(tmpdir(), 'fh-queue-contract-'));
      let opts = { ...DEFAULTS, ...overrides };
      const h: Harness = {
        q: await factory.open(dir, opts),
        dir,
        restart: async (more = {}) => {
          await h.q.close();
          opts = { ...opts, ...more };
          h.q = await factory.open(dir, opts);
          return h.q;
        },
      };
      cleanups.push(async () => {
        await h.q.close();
        rmSync(dir, { recursive: true, force: true });
      });
      return h;
    }

    /** The worker's happy path: dequeue → savePlan(events) → ack. */
    async function processAll(q: Queue, events: DomainEvent[] = []): Promise<Lease | null> {
      const lease = await q.dequeue(ALL);
      if (!lease) return null;
      await q.savePlan(lease.id, { events });
      await q.ack(lease.id);
      return lease;
    }

    describe('enqueue and idempotency', () => {
      it('returns a receipt with the accepted execution count', async () => {
        const { q } = await setup();
        const res = await q.enqueue(newJob('key-00000001', { executions: 7 }));
        expect(res.receiptId).toMatch(UUID);
        expect(res.acceptedExecutions).toBe(7);
        expect(res.deduplicated).toBe(false);
        const other = await q.enqueue(newJob('key-00000002', { executions: 0 }));
        expect(other).toEqual({ receiptId: expect.stringMatching(UUID), acceptedExecutions: 0, deduplicated: false });
        expect(other.receiptId).not.toBe(res.receiptId);
      });

      it('deduplicates the same (project, idempotencyKey): same receipt, nothing new to dequeue', async () => {
        const { q } = await setup();
        const first = await q.enqueue(newJob('key-dup-0001', { executions: 3 }));
        const again = await q.enqueue(newJob('key-dup-0001', { executions: 3 }));
        expect(again).toEqual({ receiptId: first.receiptId, acceptedExecutions: 3, deduplicated: true });
        expect(q.depth()).toBe(1);
        expect(q.stats().pending).toBe(1);
        const lease = await q.dequeue(ALL);
        expect(lease?.jobs.map((j) => j.receiptId)).toEqual([first.receiptId]);
        expect(await q.dequeue(ALL)).toBeNull();
        // While the job is in flight a replay is still a duplicate.
        const third = await q.enqueue(newJob('key-dup-0001', { executions: 3 }));
        expect(third.receiptId).toBe(first.receiptId);
        expect(third.deduplicated).toBe(true);
        expect(q.depth()).toBe(1);
      });

      it('treats the same key in another project as a different job', async () => {
        const { q } = await setup();
        const a = await q.enqueue(newJob('key-shared-01', { projectId: 'proj-a' }));
        const b = await q.enqueue(newJob('key-shared-01', { projectId: 'proj-b' }));
        expect(b.deduplicated).toBe(false);
        expect(b.receiptId).not.toBe(a.receiptId);
        expect(q.depth()).toBe(2);
        if (!leasesSpanProjects) {
          const jobs = (await drainLeases(q)).flatMap((l) => l.jobs);
          expect(jobs.map((j) => [j.projectId, j.receiptId]).sort()).toEqual([
            ['proj-a', a.receiptId],
            ['proj-b', b.receiptId],
          ]);
          return;
        }
        const lease = await q.dequeue(ALL);
        expect(lease?.jobs.map((j) => [j.projectId, j.receiptId])).toEqual([
          ['proj-a', a.receiptId],
          ['proj-b', b.receiptId],
        ]);
      });

      it('concurrent enqueues of the same key make exactly one job', async () => {
        const { q } = await setup();
        const results = await Promise.all(Array.from({ length: 5 }, () => q.enqueue(newJob('key-race-0001', { executions: 2 }))));
        expect(new Set(results.map((r) => r.receiptId)).size).toBe(1);
        expect(results.filter((r) => !r.deduplicated)).toHaveLength(1);
        expect(results.every((r) => r.acceptedExecutions === 2)).toBe(true);
        expect(q.depth()).toBe(1);
        const lease = await q.dequeue(ALL);
        expect(lease?.jobs).toHaveLength(1);
        expect(lease?.jobs[0]!.receiptId).toBe(results[0]!.receiptId);
        expect(await q.dequeue(ALL)).toBeNull();
      });

      it('still deduplicates after a restart, pending or already acked', async () => {
        const h = await setup();
        const pending = await h.q.enqueue(newJob('key-restart-1', { executions: 4 }));
        const acked = await h.q.enqueue(newJob('key-restart-2'));
        await h.restart();
        const lease = await h.q.dequeue({ maxJobs: 10, maxExecutions: 1 });
        expect(lease?.jobs.map((j) => j.receiptId)).toEqual([pending.receiptId]);
        await h.restart();
        // The first job's lease died with the process: it is pending again.
        const l2 = await h.q.dequeue(ALL);
        expect(l2?.jobs.map((j) => j.receiptId)).toEqual([pending.receiptId, acked.receiptId]);
        await h.q.ack(l2!.id);
        await h.restart();
        expect(await h.q.enqueue(newJob('key-restart-1', { executions: 4 }))).toEqual({ ...pending, deduplicated: true });
        expect(await h.q.enqueue(newJob('key-restart-2'))).toEqual({ ...acked, deduplicated: true });
        expect(h.q.depth()).toBe(0);
        expect(await h.q.dequeue(ALL)).toBeNull();
      });
    });

    describe('durability and order', () => {
      it('keeps every enqueued job across a restart, in receipt order, payload intact', async () => {
        const h = await setup();
        const N = 40;
        const sent: { receiptId: string; job: NewJob }[] = [];
        for (let i = 0; i < N; i++) {
          const job: NewJob = {
            projectId: `proj-${i % 3}`,
            source: (['native', 'junit', 'otlp'] as const)[i % 3]!,
            batch: richBatch(`key-durable-${String(i).padStart(4, '0')}`, i),
          };
          const res = await h.q.enqueue(job);
          sent.push({ receiptId: res.receiptId, job });
        }
        const before = Date.now();
        await h.restart();
        expect(h.q.depth()).toBe(N);
        expect(h.q.stats()).toEqual({ pending: N, inflight: 0, dead: 0, delayed: 0 });
        let jobs: Job[];
        if (leasesSpanProjects) {
          const lease = await h.q.dequeue(ALL);
          expect(lease).not.toBeNull();
          expect(lease!.attempt).toBe(1);
          expect(lease!.plan).toBeUndefined();
          expect(lease!.jobs.map((j) => j.receiptId)).toEqual(sent.map((s) => s.receiptId));
          jobs = lease!.jobs;
        } else {
          const leases = await drainLeases(h.q);
          expect(leases.map((l) => [l.attempt, l.plan])).toEqual(leases.map(() => [1, undefined]));
          const got = leases.flatMap((l) => l.jobs);
          expect(perProject(got)).toEqual(perProject(sent.map((s) => ({ projectId: s.job.projectId, receiptId: s.receiptId }))));
          // Back in receipt order, to compare payloads one by one.
          const rank = new Map(sent.map((s, i) => [s.receiptId, i]));
          jobs = got.sort((x, y) => rank.get(x.receiptId)! - rank.get(y.receiptId)!);
          expect(jobs.map((j) => j.receiptId)).toEqual(sent.map((s) => s.receiptId));
        }
        jobs.forEach((job, i) => {
          const { job: original } = sent[i]!;
          expect(job.projectId).toBe(original.projectId);
          expect(job.source).toBe(original.source);
          expect(job.batch).toEqual(original.batch);
          expect(job.attempts).toBe(1);
          expect(job.receivedAt).toBeGreaterThan(before - 60_000);
          expect(job.receivedAt).toBeLessThanOrEqual(before);
        });
        expect(new Set(jobs.map((j) => j.id)).size).toBe(N);
        expect(await h.q.dequeue(ALL)).toBeNull();
      });

      it('hands jobs out oldest first without a restart too', async () => {
        const { q } = await setup();
        const receipts: string[] = [];
        for (let i = 0; i < 10; i++) receipts.push((await q.enqueue(newJob(`key-fifo-${String(i).padStart(4, '0')}`))).receiptId);
        const seen: string[] = [];
        for (let lease = await q.dequeue({ maxJobs: 3, maxExecutions: 100 }); lease; lease = await q.dequeue({ maxJobs: 3, maxExecutions: 100 })) {
          seen.push(...lease.jobs.map((j) => j.receiptId));
          await q.ack(lease.id);
        }
        expect(seen).toEqual(receipts);
      });

      it('redelivers the jobs of an unfrozen lease that was in flight at a crash', async () => {
        const h = await setup();
        const r = await h.q.enqueue(newJob('key-crash-0001'));
        const lease = await h.q.dequeue(ALL);
        expect(lease?.attempt).toBe(1);
        await h.restart();
        expect(h.q.stats()).toMatchObject({ pending: 1, inflight: 0 });
        const again = await h.q.dequeue(ALL);
        expect(again?.jobs.map((j) => j.receiptId)).toEqual([r.receiptId]);
        expect(again?.attempt).toBe(2);
        expect(again?.plan).toBeUndefined();
      });
    });

    describe('dequeue', () => {
      it('returns null when empty', async () => {
        const { q } = await setup();
        expect(await q.dequeue(ALL)).toBeNull();
        expect(q.stats()).toEqual({ pending: 0, inflight: 0, dead: 0, delayed: 0 });
        expect(q.depth()).toBe(0);
      });

      it('respects maxJobs', async () => {
        const { q } = await setup();
        for (let i = 0; i < 5; i++) await q.enqueue(newJob(`key-maxjobs-${i}`));
        const sizes: number[] = [];
        for (let lease = await q.dequeue({ maxJobs: 2, maxExecutions: 100 }); lease; lease = await q.dequeue({ maxJobs: 2, maxExecutions: 100 })) {
          sizes.push(lease.jobs.length);
        }
        expect(sizes).toEqual([2, 2, 1]);
      });

      it('respects maxExecutions but always takes at least one job', async () => {
        const { q } = await setup();
        await q.enqueue(newJob('key-exec-0001', { executions: 3 }));
        await q.enqueue(newJob('key-exec-0002', { executions: 3 }));
        await q.enqueue(newJob('key-exec-0003', { executions: 3 }));
        await q.enqueue(newJob('key-exec-0004', { executions: 10 }));
        await q.enqueue(newJob('key-exec-0005', { executions: 1 }));
        const opts = { maxJobs: 100, maxExecutions: 7 };
        const l1 = await q.dequeue(opts);
        expect(l1?.jobs.map((j) => j.batch.executions.length)).toEqual([3, 3]);
        const l2 = await q.dequeue(opts);
        expect(l2?.jobs.map((j) => j.batch.executions.length)).toEqual([3]);
        // Alone over the limit: taken anyway, and nothing else with it.
        const l3 = await q.dequeue(opts);
        expect(l3?.jobs.map((j) => j.batch.executions.length)).toEqual([10]);
        const l4 = await q.dequeue(opts);
        expect(l4?.jobs.map((j) => j.batch.executions.length)).toEqual([1]);
        expect(await q.dequeue(opts)).toBeNull();
      });

      it('counts pending and inflight in stats() and depth()', async () => {
        const { q } = await setup();
        for (let i = 0; i < 3; i++) await q.enqueue(newJob(`key-stats-${i}`));
        expect(q.stats()).toEqual({ pending: 3, inflight: 0, dead: 0, delayed: 0 });
        expect(q.depth()).toBe(3);
        const lease = await q.dequeue({ maxJobs: 2, maxExecutions: 100 });
        expect(lease?.jobs).toHaveLength(2);
        expect(lease?.attempt).toBe(1);
        expect(q.stats()).toEqual({ pending: 1, inflight: 2, dead: 0, delayed: 0 });
        expect(q.depth()).toBe(3);
        await q.ack(lease!.id);
        expect(q.stats()).toEqual({ pending: 1, inflight: 0, dead: 0, delayed: 0 });
        expect(q.depth()).toBe(1);
        const last = await q.dequeue(ALL);
        expect(q.stats()).toEqual({ pending: 0, inflight: 1, dead: 0, delayed: 0 });
        await q.ack(last!.id);
        expect(q.stats()).toEqual({ pending: 0, inflight: 0, dead: 0, delayed: 0 });
        expect(q.depth()).toBe(0);
      });
    });

    describe('visibility timeout', () => {
      it('redelivers an unacked lease after visibilityMs; a late ack of the old lease is harmless', async () => {
        const { q } = await setup({ visibilityMs: 150 });
        const r1 = await q.enqueue(newJob('key-vis-00001'));
        const r2 = await q.enqueue(newJob('key-vis-00002'));
        const first = await q.dequeue(ALL);
        const leasedAt = Date.now();
        expect(first?.attempt).toBe(1);
        expect(await q.dequeue(ALL)).toBeNull();
        const second = await dequeueWithin(q, 5_000);
        expect(Date.now() - leasedAt).toBeGreaterThanOrEqual(130);
        expect(jobIds(second)).toEqual(jobIds(first!));
        expect(second.jobs.map((j) => j.receiptId).sort()).toEqual([r1.receiptId, r2.receiptId].sort());
        expect(second.attempt).toBe(2);
        expect(second.jobs.every((j) => j.attempts === 2)).toBe(true);
        expect(second.plan).toBeUndefined();
        if (second.id !== first!.id) {
          // The first holder wakes up late: its ack must not take the jobs from the new holder.
          await q.ack(first!.id);
          expect(q.stats()).toMatchObject({ pending: 0, inflight: 2 });
          expect(await q.dequeue(ALL)).toBeNull();
        }
        const events = [makeEvent(1), makeEvent(2)];
        await q.savePlan(second.id, { events });
        await q.ack(second.id);
        expect((await q.outbox.read(0, 100)).map((e) => e.event)).toEqual(events);
        expect(q.depth()).toBe(0);
        // Past the visibility timeout again: nothing comes back (a window; the behaviour under test).
        await sleep(250);
        expect(await q.dequeue(ALL)).toBeNull();
      });

      it('redelivers a frozen lease after visibilityMs with the same id, jobs and plan', async () => {
        const { q } = await setup({ visibilityMs: 150 });
        await q.enqueue(newJob('key-visf-0001'));
        await q.enqueue(newJob('key-visf-0002'));
        const first = await q.dequeue(ALL);
        const plan = { events: [makeEvent(1)] };
        await q.savePlan(first!.id, plan);
        const second = await dequeueWithin(q, 5_000);
        expect(second.id).toBe(first!.id);
        expect(jobIds(second)).toEqual(jobIds(first!));
        expect(second.plan).toEqual(plan);
        expect(second.attempt).toBe(2);
        await q.ack(second.id);
        expect((await q.outbox.read(0, 10)).map((e) => e.event)).toEqual(plan.events);
        expect(q.depth()).toBe(0);
      });
    });

    describe('frozen lease', () => {
      it('survives a crash: same lease id, same jobs, same plan; ack emits the events once', async () => {
        const h = await setup();
        await h.q.enqueue(newJob('key-frozen-01'));
        await h.q.enqueue(newJob('key-frozen-02'));
        await h.q.enqueue(newJob('key-frozen-03'));
        const lease = await h.q.dequeue({ maxJobs: 2, maxExecutions: 100 });
        expect(lease?.jobs).toHaveLength(2);
        const events = [makeEvent(1), makeEvent(2)];
        await h.q.savePlan(lease!.id, { events });
        // Crash before the ack.
        await h.restart();
        expect((await h.q.outbox.read(0, 100))).toEqual([]);
        expect(h.q.depth()).toBe(3);
        const again = await h.q.dequeue({ maxJobs: 10, maxExecutions: 100 });
        expect(again).not.toBeNull();
        expect(again!.id).toBe(lease!.id);
        expect(jobIds(again!)).toEqual(jobIds(lease!));
        expect(again!.plan).toEqual({ events });
        expect(again!.attempt).toBe(2);
        expect(again!.jobs.map((j) => j.batch)).toEqual(lease!.jobs.map((j) => j.batch));
        await h.q.ack(again!.id);
        // Atomic with the ack: visible as soon as it resolves.
        const entries = (await h.q.outbox.read(0, 100));
        expect(entries.map((e) => e.event)).toEqual(events);
        expect(entries[1]!.seq).toBeGreaterThan(entries[0]!.seq);
        expect(entries[0]!.seq).toBeGreaterThan(0);
        expect(h.q.depth()).toBe(1);
        // The job outside the frozen lease was never part of it.
        const rest = await h.q.dequeue(ALL);
        expect(rest?.jobs.map((j) => j.batch.idempotencyKey)).toEqual(['key-frozen-03']);
        await h.q.ack(rest!.id);
        expect(h.q.depth()).toBe(0);
        await h.restart();
        expect(h.q.depth()).toBe(0);
        expect(await h.q.dequeue(ALL)).toBeNull();
        expect((await h.q.outbox.read(0, 100))).toEqual(entries);
      });
    });

    describe('ack', () => {
      it('without a plan removes the jobs and appends no events', async () => {
        const h = await setup();
        await h.q.enqueue(newJob('key-ack-00001'));
        await h.q.enqueue(newJob('key-ack-00002'));
        const lease = await h.q.dequeue(ALL);
        await h.q.ack(lease!.id);
        expect(h.q.depth()).toBe(0);
        expect((await h.q.outbox.read(0, 100))).toEqual([]);
        expect(await h.q.dequeue(ALL)).toBeNull();
        await h.restart();
        expect(h.q.depth()).toBe(0);
        expect(await h.q.dequeue(ALL)).toBeNull();
        expect((await h.q.outbox.read(0, 100))).toEqual([]);
      });

      it('appends the planned events atomically, with seqs increasing across leases', async () => {
        const h = await setup();
        await h.q.enqueue(newJob('key-ackev-001'));
        const e1 = [makeEvent(1), makeEvent(2), makeEvent(3)];
        await processAll(h.q, e1);
        const after1 = (await h.q.outbox.read(0, 100));
        expect(after1.map((e) => e.event)).toEqual(e1);
        // An empty plan is an ack without events.
        await h.q.enqueue(newJob('key-ackev-002'));
        await processAll(h.q, []);
        expect((await h.q.outbox.read(0, 100))).toEqual(after1);
        await h.restart();
        await h.q.enqueue(newJob('key-ackev-003'));
        const e2 = [makeEvent(4)];
        await processAll(h.q, e2);
        const all = (await h.q.outbox.read(0, 100));
        expect(all.map((e) => e.event)).toEqual([...e1, ...e2]);
        const seqs = all.map((e) => e.seq);
        expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
        expect(new Set(seqs).size).toBe(seqs.length);
        // read() is "after seq", oldest first, limited.
        expect((await h.q.outbox.read(seqs[0]!, 2)).map((e) => e.seq)).toEqual(seqs.slice(1, 3));
        expect((await h.q.outbox.read(seqs[3]!, 10))).toEqual([]);
      });
    });

    describe('nack', () => {
      it('retries after a backoff, then parks the job as dead, also across a restart', async () => {
        const h = await setup({ maxAttempts: 3, baseBackoffMs: 100, maxBackoffMs: 1_000 });
        const r = await h.q.enqueue(newJob('key-nack-0001'));
        await h.q.enqueue(newJob('key-nack-0002'));
        let lease = await h.q.dequeue({ maxJobs: 1, maxExecutions: 100 });
        for (let attempt = 1; attempt <= 3; attempt++) {
          expect(lease?.attempt).toBe(attempt);
          expect(lease?.jobs.map((j) => j.receiptId)).toEqual([r.receiptId]);
          expect(lease?.jobs[0]!.attempts).toBe(attempt);
          await h.q.nack(lease!.id, `boom ${attempt}`);
          if (attempt === 3) break;
          const nackedAt = Date.now();
          // Backing off: not handed out right away (the job behind it is), but still counted.
          const now = await h.q.dequeue(ALL);
          if (attempt === 1) expect(now?.jobs.map((j) => j.batch.idempotencyKey)).toEqual(['key-nack-0002']);
          else expect(now).toBeNull();
          expect(h.q.stats()).toMatchObject({ pending: 1, delayed: 1, dead: 0, inflight: 1 });
          expect(h.q.depth()).toBe(2);
          lease = await dequeueWithin(h.q, 5_000);
          expect(Date.now() - nackedAt).toBeGreaterThanOrEqual(50);
          expect(h.q.stats()).toMatchObject({ pending: 0, delayed: 0, inflight: 2 });
        }
        expect(h.q.stats()).toMatchObject({ dead: 1, delayed: 0 });
        const dead = (await h.q.deadJobs());
        expect(dead).toHaveLength(1);
        expect(dead[0]!.job.receiptId).toBe(r.receiptId);
        expect(dead[0]!.job.batch).toEqual(makeBatch('key-nack-0001'));
        expect(dead[0]!.error).toBe('boom 3');
        expect(typeof dead[0]!.diedAt).toBe('number');
        // Past any backoff: a dead job does not come back (a window; the behaviour under test).
        await sleep(300);
        expect(await h.q.dequeue(ALL)).toBeNull();
        await h.restart();
        expect(h.q.stats()).toMatchObject({ dead: 1 });
        expect((await h.q.deadJobs()).map((d) => [d.job.receiptId, d.error])).toEqual([[r.receiptId, 'boom 3']]);
        // Only the other job (its lease died with the process) comes back.
        const rest = await h.q.dequeue(ALL);
        expect(rest?.jobs.map((j) => j.batch.idempotencyKey)).toEqual(['key-nack-0002']);
        await h.q.ack(rest!.id);
        expect(await h.q.dequeue(ALL)).toBeNull();
        expect(h.q.depth()).toBe(0);
      });

      it('retries and buries a frozen lease whole', async () => {
        const h = await setup({ maxAttempts: 2, baseBackoffMs: 100, maxBackoffMs: 1_000 });
        await h.q.enqueue(newJob('key-nackf-001'));
        await h.q.enqueue(newJob('key-nackf-002'));
        const lease = await h.q.dequeue(ALL);
        expect(lease?.jobs).toHaveLength(2);
        const plan = { events: [makeEvent(1), makeEvent(2)] };
        await h.q.savePlan(lease!.id, plan);
        await h.q.nack(lease!.id, 'exporter down');
        expect(await h.q.dequeue(ALL)).toBeNull();
        expect(h.q.stats()).toMatchObject({ delayed: expect.any(Number), dead: 0, inflight: 0 });
        expect(h.q.stats().delayed).toBeGreaterThan(0);
        expect(h.q.depth()).toBe(2);
        const again = await dequeueWithin(h.q, 5_000);
        expect(again.id).toBe(lease!.id);
        expect(jobIds(again)).toEqual(jobIds(lease!));
        expect(again.plan).toEqual(plan);
        expect(again.attempt).toBe(2);
        await h.q.nack(again.id, 'exporter still down');
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 2, delayed: 0 });
        expect(h.q.depth()).toBe(0);
        const dead = (await h.q.deadJobs());
        expect(dead.map((d) => d.job.id).sort()).toEqual(jobIds(lease!));
        expect(dead.every((d) => d.error === 'exporter still down')).toBe(true);
        expect((await h.q.outbox.read(0, 100))).toEqual([]);
        // Past any backoff: the buried lease does not come back (a window; the behaviour under test).
        await sleep(300);
        expect(await h.q.dequeue(ALL)).toBeNull();
        await h.restart();
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 2, delayed: 0 });
        expect(await h.q.dequeue(ALL)).toBeNull();
        expect((await h.q.outbox.read(0, 100))).toEqual([]);
      });
    });

    describe('failJob', () => {
      it('sets one job of an unfrozen lease aside; the others are acked normally', async () => {
        // A backoff long enough that a busy machine does not reach its end before the next dequeue.
        const h = await setup({ maxAttempts: 2, baseBackoffMs: 1_500, maxBackoffMs: 3_000 });
        const receipts: string[] = [];
        for (let i = 1; i <= 3; i++) receipts.push((await h.q.enqueue(newJob(`key-fail-000${i}`))).receiptId);
        const lease = await h.q.dequeue(ALL);
        expect(lease?.jobs).toHaveLength(3);
        const bad = lease!.jobs[1]!;
        await h.q.failJob(lease!.id, bad.id, 'cannot parse');
        expect(h.q.stats()).toMatchObject({ inflight: 2, delayed: 1, dead: 0 });
        // Backing off, not handed out again right away.
        expect(await h.q.dequeue(ALL)).toBeNull();
        const events = [makeEvent(1)];
        await h.q.savePlan(lease!.id, { events });
        await h.q.ack(lease!.id);
        expect((await h.q.outbox.read(0, 10)).map((e) => e.event)).toEqual(events);
        expect(h.q.depth()).toBe(1);
        const retry = await dequeueWithin(h.q, 15_000);
        expect(retry.jobs.map((j) => j.receiptId)).toEqual([receipts[1]]);
        expect(retry.attempt).toBe(2);
        // Second failure reaches maxAttempts: dead.
        await h.q.failJob(retry.id, bad.id, 'still cannot parse');
        await h.q.ack(retry.id);
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 1, delayed: 0 });
        expect((await h.q.deadJobs()).map((d) => [d.job.receiptId, d.error])).toEqual([[receipts[1], 'still cannot parse']]);
        expect((await h.q.outbox.read(0, 10)).map((e) => e.event)).toEqual(events);
        await h.restart();
        expect(await h.q.dequeue(ALL)).toBeNull();
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 1, delayed: 0 });
      });
    });

    describe('failure isolation', () => {
      it('splits a failed group in halves at the front of the queue without charging anyone; a job failing alone is charged', async () => {
        const h = await setup({ maxAttempts: 2, baseBackoffMs: 50, maxBackoffMs: 100 });
        const receipts: string[] = [];
        for (let i = 0; i < 4; i++) receipts.push((await h.q.enqueue(newJob(`key-split-000${i}`))).receiptId);
        const later = await h.q.enqueue(newJob('key-split-later'));
        const lease = await h.q.dequeue({ maxJobs: 4, maxExecutions: 100 });
        expect(lease?.jobs.map((j) => j.receiptId)).toEqual(receipts);
        await h.q.nack(lease!.id, 'one of you is bad');
        expect(h.q.stats()).toMatchObject({ pending: 5, inflight: 0, dead: 0, delayed: 0 });
        // Each half is a lease of its own, before the job that was waiting behind them; no attempt charged.
        const first = await h.q.dequeue(ALL);
        expect(first?.jobs.map((j) => j.receiptId)).toEqual(receipts.slice(0, 2));
        expect(first?.attempt).toBe(1);
        expect(first?.jobs.every((j) => j.attempts === 1)).toBe(true);
        const second = await h.q.dequeue(ALL);
        expect(second?.jobs.map((j) => j.receiptId)).toEqual(receipts.slice(2));
        expect(second?.attempt).toBe(1);
        await h.q.savePlan(second!.id, { events: [] });
        await h.q.ack(second!.id);
        await h.q.nack(first!.id, 'still bad');
        const a = await h.q.dequeue(ALL);
        const b = await h.q.dequeue(ALL);
        expect([a?.jobs.map((j) => j.receiptId), b?.jobs.map((j) => j.receiptId)]).toEqual([[receipts[0]], [receipts[1]]]);
        expect([a?.attempt, b?.attempt]).toEqual([1, 1]);
        await h.q.ack(b!.id);
        // Alone now: charged, retried after a backoff (alone), then dead.
        await h.q.nack(a!.id, 'bad alone');
        expect(h.q.stats()).toMatchObject({ delayed: 1, dead: 0 });
        const rest = await h.q.dequeue(ALL);
        expect(rest?.jobs.map((j) => j.receiptId)).toEqual([later.receiptId]);
        await h.q.ack(rest!.id);
        const retry = await dequeueWithin(h.q, 5_000);
        expect(retry.jobs.map((j) => j.receiptId)).toEqual([receipts[0]]);
        expect(retry.attempt).toBe(2);
        await h.q.nack(retry.id, 'bad alone again');
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 1, delayed: 0 });
        const dead = (await h.q.deadJobs());
        expect(dead.map((d) => [d.job.receiptId, d.firstError, d.error, d.job.attempts])).toEqual([[receipts[0], 'bad alone', 'bad alone again', 2]]);
        expect(dead[0]!.sizeBytes).toBeGreaterThan(100);
        expect(dead[0]!.frozenLeaseId).toBeUndefined();
      });

      it('an out-of-space failure is never charged, split or buried: the same lease comes back after a backoff', async () => {
        const h = await setup({ maxAttempts: 1, baseBackoffMs: 20, maxBackoffMs: 50 });
        await h.q.enqueue(newJob('key-space-0001'));
        await h.q.enqueue(newJob('key-space-0002'));
        let lease = await h.q.dequeue(ALL);
        const ids = jobIds(lease!);
        for (let i = 0; i < 3; i++) {
          await h.q.nack(lease!.id, 'No space left on device', { outOfSpace: true });
          expect(h.q.stats()).toMatchObject({ dead: 0, delayed: 2, pending: 2 });
          lease = await dequeueWithin(h.q, 5_000);
          expect(jobIds(lease)).toEqual(ids);
          expect(lease.attempt).toBe(1);
        }
        // Frozen: the same lease id and plan.
        const plan = { events: [makeEvent(1)] };
        await h.q.savePlan(lease!.id, plan);
        for (let i = 0; i < 3; i++) {
          await h.q.nack(lease!.id, 'MDB_MAP_FULL', { outOfSpace: true });
          const again = await dequeueWithin(h.q, 5_000);
          expect([again.id, again.attempt, again.plan]).toEqual([lease!.id, 1, plan]);
          lease = again;
        }
        await h.q.ack(lease!.id);
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 0, delayed: 0 });
        expect((await h.q.outbox.read(0, 10)).map((e) => e.event)).toEqual(plan.events);
      });

      it('unfreeze: a lease frozen but unwritten drops its plan and splits like an unfrozen one', async () => {
        const h = await setup();
        await h.q.enqueue(newJob('key-unfreeze-1'));
        await h.q.enqueue(newJob('key-unfreeze-2'));
        const lease = await h.q.dequeue(ALL);
        await h.q.savePlan(lease!.id, { events: [makeEvent(1)] });
        await h.q.nack(lease!.id, 'first insert refused', { unfreeze: true });
        const a = await h.q.dequeue(ALL);
        const b = await h.q.dequeue(ALL);
        expect([a!.jobs.length, b!.jobs.length, a!.plan, b!.plan, a!.attempt]).toEqual([1, 1, undefined, undefined, 1]);
        expect(a!.id).not.toBe(lease!.id);
        await h.restart();
        // The old plan is gone for good: nothing frozen comes back, its events are never emitted.
        const both = await h.q.dequeue(ALL);
        expect(jobIds(both!)).toEqual(jobIds(lease!));
        expect(both!.plan).toBeUndefined();
        await h.q.savePlan(both!.id, { events: [] });
        await h.q.ack(both!.id);
        expect((await h.q.outbox.read(0, 10))).toEqual([]);
      });
    });

    describe('dead letters', () => {
      async function kill(q: Queue, key: string, error = 'poison'): Promise<string> {
        const r = await q.enqueue(newJob(key));
        const lease = await q.dequeue({ maxJobs: 1, maxExecutions: 100 });
        expect(lease?.jobs.map((j) => j.receiptId)).toEqual([r.receiptId]);
        await q.nack(lease!.id, error);
        return r.receiptId;
      }

      it('lists in pages, shows one, answers `dead` for its key, requeues it as a fresh job', async () => {
        const h = await setup({ maxAttempts: 1 });
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) ids.push(await kill(h.q, `key-dl-000${i}`, `poison ${i}`));
        expect(h.q.stats()).toMatchObject({ dead: 3 });
        expect((await h.q.deadJobs(2)).map((d) => d.job.id)).toEqual(ids.slice(0, 2));
        expect((await h.q.deadJobs(2, ids[1])).map((d) => d.job.id)).toEqual([ids[2]]);
        expect((await h.q.deadJob(ids[1]!))?.error).toBe('poison 1');
        expect((await h.q.deadJob('00000000-0000-4000-8000-000000000000'))).toBeUndefined();
        // Not a duplicate: the key's job stored nothing.
        expect(await h.q.enqueue(newJob('key-dl-0001'))).toEqual({ receiptId: ids[1], acceptedExecutions: 1, deduplicated: true, dead: true });
        expect(h.q.depth()).toBe(0);

        expect(await h.q.requeueDead(ids[1]!)).toEqual({ jobIds: [ids[1]] });
        expect(await h.q.requeueDead(ids[1]!)).toBeNull();
        expect(h.q.stats()).toMatchObject({ dead: 2, pending: 1 });
        expect(await h.q.enqueue(newJob('key-dl-0001'))).toEqual({ receiptId: ids[1], acceptedExecutions: 1, deduplicated: true });
        const lease = await h.q.dequeue(ALL);
        expect(lease?.jobs.map((j) => [j.receiptId, j.attempts])).toEqual([[ids[1], 1]]);
        expect(lease?.jobs[0]!.batch).toEqual(makeBatch('key-dl-0001'));
        await h.q.ack(lease!.id);
        await h.restart();
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 2, delayed: 0 });
        expect((await h.q.deadJobs()).map((d) => d.job.id)).toEqual([ids[0], ids[2]]);
      });

      it('drop releases the idempotency key: the batch may be sent again as a new job', async () => {
        const h = await setup({ maxAttempts: 1 });
        const id = await kill(h.q, 'key-drop-0001');
        expect(await h.q.dropDead(id)).toEqual({ jobIds: [id] });
        expect(await h.q.dropDead(id)).toBeNull();
        expect(h.q.stats()).toMatchObject({ dead: 0 });
        await h.restart();
        const again = await h.q.enqueue(newJob('key-drop-0001'));
        expect(again.deduplicated).toBe(false);
        expect(again.dead).toBeUndefined();
        expect(again.receiptId).not.toBe(id);
        expect(h.q.depth()).toBe(1);
      });

      it('a frozen lease dies whole and is requeued whole: same lease id, same plan, events once', async () => {
        const h = await setup({ maxAttempts: 1 });
        await h.q.enqueue(newJob('key-dlf-0001'));
        await h.q.enqueue(newJob('key-dlf-0002'));
        const lease = await h.q.dequeue(ALL);
        const plan = { events: [makeEvent(1), makeEvent(2)] };
        await h.q.savePlan(lease!.id, plan);
        await h.q.nack(lease!.id, 'failed after a write');
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 2, delayed: 0 });
        expect((await h.q.deadJobs()).map((d) => d.frozenLeaseId)).toEqual([lease!.id, lease!.id]);
        await h.restart();
        // Requeueing one brings back its lease-mates, as that same frozen lease.
        const one = lease!.jobs[1]!.id;
        expect(await h.q.requeueDead(one)).toEqual({ jobIds: jobIds(lease!), frozenLeaseId: lease!.id });
        expect(h.q.stats()).toMatchObject({ dead: 0, pending: 2 });
        const again = await h.q.dequeue(ALL);
        expect([again!.id, jobIds(again!), again!.plan, again!.attempt]).toEqual([lease!.id, jobIds(lease!), plan, 1]);
        await h.q.ack(again!.id);
        expect((await h.q.outbox.read(0, 10)).map((e) => e.event)).toEqual(plan.events);

        // Dropped whole too.
        await h.q.enqueue(newJob('key-dlf-0003'));
        await h.q.enqueue(newJob('key-dlf-0004'));
        const l2 = await h.q.dequeue(ALL);
        await h.q.savePlan(l2!.id, { events: [] });
        await h.q.nack(l2!.id, 'failed after a write');
        expect(await h.q.dropDead(l2!.jobs[0]!.id)).toEqual({ jobIds: jobIds(l2!), frozenLeaseId: l2!.id });
        expect(h.q.stats()).toEqual({ pending: 0, inflight: 0, dead: 0, delayed: 0 });
        expect((await h.q.enqueue(newJob('key-dlf-0004'))).deduplicated).toBe(false);
      });
    });

    describe('outbox', () => {
      it('keeps durable cursors and trims what every subscriber has passed', async () => {
        const h = await setup();
        await h.q.enqueue(newJob('key-outbox-01'));
        const events = [makeEvent(1), makeEvent(2), makeEvent(3)];
        await processAll(h.q, events);
        const seqs = (await h.q.outbox.read(0, 10)).map((e) => e.seq);
        expect(seqs).toHaveLength(3);
        expect((await h.q.outbox.cursor('a'))).toBe(0);
        expect((await h.q.outbox.cursor('b'))).toBe(0);
        await h.q.outbox.setCursor('a', seqs[1]!);
        await h.q.outbox.setCursor('b', seqs[0]!);
        expect((await h.q.outbox.cursor('a'))).toBe(seqs[1]);
        await h.restart();
        expect((await h.q.outbox.cursor('a'))).toBe(seqs[1]);
        expect((await h.q.outbox.cursor('b'))).toBe(seqs[0]);
        expect((await h.q.outbox.cursor('c'))).toBe(0);
        // 'c' has read nothing: nothing may go.
        await h.q.outbox.trim(['a', 'b', 'c']);
        expect((await h.q.outbox.read(0, 10)).map((e) => e.seq)).toEqual(seqs);
        await h.q.outbox.trim(['a', 'b']);
        expect((await h.q.outbox.read(0, 10)).map((e) => e.event)).toEqual(events.slice(1));
        await h.q.outbox.setCursor('b', seqs[2]!);
        await h.q.outbox.trim(['a', 'b']);
        expect((await h.q.outbox.read(0, 10)).map((e) => e.event)).toEqual(events.slice(2));
        await h.q.outbox.setCursor('a', seqs[2]!);
        await h.q.outbox.trim(['a', 'b']);
        expect((await h.q.outbox.read(0, 10))).toEqual([]);
        // Seqs never go back, even after a trim and a restart: cursors stay meaningful.
        await h.restart();
        await h.q.enqueue(newJob('key-outbox-02'));
        await processAll(h.q, [makeEvent(4)]);
        const next = (await h.q.outbox.read(await h.q.outbox.cursor('a'), 10));
        expect(next.map((e) => e.event.data.n)).toEqual([4]);
        expect(next[0]!.seq).toBeGreaterThan(seqs[2]!);
      });

      it('waitForEntries resolves promptly after an ack with events, and on timeout otherwise', async () => {
        const { q } = await setup();
        let t0 = Date.now();
        await q.outbox.waitForEntries(100);
        const idle = Date.now() - t0;
        expect(idle).toBeGreaterThanOrEqual(80);
        expect(idle).toBeLessThan(3_000);

        await q.enqueue(newJob('key-wait-0001'));
        const lease = await q.dequeue(ALL);
        await q.savePlan(lease!.id, { events: [makeEvent(1)] });
        t0 = Date.now();
        let resolvedAt = 0;
        const waiting = q.outbox.waitForEntries(10_000).then(() => {
          resolvedAt = Date.now();
        });
        await sleep(20);
        expect(resolvedAt).toBe(0);
        await q.ack(lease!.id);
        await waiting;
        expect(resolvedAt - t0).toBeLessThan(3_000);
        expect((await q.outbox.read(0, 10))).toHaveLength(1);
      });
    });

    describe('waitForWork', () => {
      it('resolves promptly when a job is enqueued while waiting, and on timeout otherwise', async () => {
        const { q } = await setup();
        let t0 = Date.now();
        await q.waitForWork(100);
        const idle = Date.now() - t0;
        expect(idle).toBeGreaterThanOrEqual(80);
        expect(idle).toBeLessThan(3_000);

        t0 = Date.now();
        let resolvedAt = 0;
        const waiting = q.waitForWork(10_000).then(() => {
          resolvedAt = Date.now();
        });
        await sleep(20);
        expect(resolvedAt).toBe(0);
        await q.enqueue(newJob('key-work-0001'));
        await waiting;
        expect(resolvedAt - t0).toBeLessThan(3_000);
        // Work is there now: no waiting at all.
        t0 = Date.now();
        await q.waitForWork(10_000);
        expect(Date.now() - t0).toBeLessThan(3_000);
        expect(await q.dequeue(ALL)).not.toBeNull();
      });
    });

    describe('load', () => {
      it('2,000 concurrent enqueues: 2,000 distinct receipts, all drained by dequeue/ack', async () => {
        const { q } = await setup();
        const N = 2_000;
        const results = await Promise.all(
          Array.from({ length: N }, (_, i) => q.enqueue(newJob(`key-load-${String(i).padStart(6, '0')}`, { projectId: `proj-${i % 7}`, executions: 1 + (i % 5) }))),
        );
        expect(new Set(results.map((r) => r.receiptId)).size).toBe(N);
        expect(results.every((r) => !r.deduplicated)).toBe(true);
        expect(results.reduce((n, r) => n + r.acceptedExecutions, 0)).toBe(Array.from({ length: N }, (_, i) => 1 + (i % 5)).reduce((a, b) => a + b, 0));
        expect(q.depth()).toBe(N);
        const seen = new Set<string>();
        let leases = 0;
        for (let lease = await q.dequeue({ maxJobs: 300, maxExecutions: 1_000 }); lease; lease = await q.dequeue({ maxJobs: 300, maxExecutions: 1_000 })) {
          leases++;
          expect(lease.jobs.length).toBeLessThanOrEqual(300);
          for (const j of lease.jobs) seen.add(j.receiptId);
          await q.savePlan(lease.id, { events: [] });
          await q.ack(lease.id);
        }
        expect(seen.size).toBe(N);
        expect(new Set(results.map((r) => r.receiptId))).toEqual(seen);
        expect(leases).toBeGreaterThanOrEqual(N / 300);
        expect(q.stats()).toEqual({ pending: 0, inflight: 0, dead: 0, delayed: 0 });
        expect(q.depth()).toBe(0);
      });
    });
  });
}

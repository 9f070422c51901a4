// What only the NATS JetStream queue backend promises, against a real nats-server: duplicate
// publishes, stream limits as backpressure, an ingest-only process, takeover after a crash,
// MaxDeliver, partitions shared between workers, and pulls and acks lost with the connection. The
// queue contract it shares with the embedded queue: test/integration/queue-nats.test.ts.
import { randomUUID } from 'node:crypto';
import { connect } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors/catalogue.js';
import { NatsQueue, receiptIdFor, type NatsQueueOptions } from '../../src/queue/nats/index.js';
import { partitionOf } from '../../src/queue/nats/partition-leases.js';
import { Receipts } from '../../src/queue/nats/receipts.js';
import type { DequeueOptions, EnqueueResult, Lease, NewJob } from '../../src/queue/types.js';
import { startNatsServer, type NatsServer } from '../helpers/nats.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { makeBatch, makeEvent } from './queue-contract.js';

let server: NatsServer;

beforeAll(async () => {
  server = await startNatsServer();
});

afterAll(async () => {
  await server?.close();
});

describe('nats jetstream specifics', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  const OPTS = { visibilityMs: 60_000, maxAttempts: 3, baseBackoffMs: 50, maxBackoffMs: 200 };
  let n = 0;
  const freshPrefix = (): string => `s${++n}_${randomUUID().slice(0, 8)}`;

  async function open(opts: Partial<NatsQueueOptions> & { prefix: string }): Promise<NatsQueue> {
    const q = await NatsQueue.open({ servers: server.url, ...OPTS, ...opts });
    cleanups.push(() => q.close());
    return q;
  }

  const job = (key: string, projectId = 'proj-1', executions = 1): NewJob => ({ projectId, source: 'native', batch: makeBatch(key, executions) });

  /** Two project ids that land in different partitions of P. */
  function projectsInDistinctPartitions(P: number, count: number): string[] {
    const out: string[] = [];
    const seen = new Set<number>();
    for (let i = 0; out.length < count; i++) {
      const id = `proj-${i}`;
      const p = partitionOf(id, P);
      if (!seen.has(p)) {
        seen.add(p);
        out.push(id);
      }
    }
    return out;
  }

  /** Enqueues, retrying while the connection comes back (up to 15 s). */
  async function enqueueOnceBack(q: NatsQueue, j: NewJob): Promise<EnqueueResult> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        return await q.enqueue(j);
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async function dequeueWithin(q: NatsQueue, ms: number, opts: DequeueOptions = { maxJobs: 100, maxExecutions: 10_000 }): Promise<Lease> {
    const deadline = Date.now() + ms;
    for (;;) {
      const lease = await q.dequeue(opts);
      if (lease) return lease;
      if (Date.now() > deadline) throw new Error(`no lease within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('a duplicate publish within the window answers the first receipt, also from another process', async () => {
    const prefix = freshPrefix();
    const a = await open({ prefix, partitions: 4 });
    const b = await open({ prefix, partitions: 4, consume: false });
    const first = await a.enqueue(job('key-natsdup-01', 'proj-1', 2));
    // A crash between the PubAck and the receipt write: the receipt is missing, the job is stored.
    const nc = await connect({ servers: server.url });
    const kv = await nc.jetstream().views.kv(`${prefix}_receipts`);
    await kv.purge(Receipts.key('proj-1', 'key-natsdup-01'));
    await nc.close();
    expect(await b.accepted('proj-1', 'key-natsdup-01')).toBeUndefined();
    const again = await b.enqueue(job('key-natsdup-01', 'proj-1', 2));
    expect(again).toEqual({ receiptId: first.receiptId, acceptedExecutions: 2, deduplicated: true });
    expect(await b.accepted('proj-1', 'key-natsdup-01')).toEqual({ receiptId: first.receiptId, acceptedExecutions: 2, deduplicated: true });
    // Two processes racing on one key make one job.
    const raced = await Promise.all([a.enqueue(job('key-natsdup-02')), b.enqueue(job('key-natsdup-02')), a.enqueue(job('key-natsdup-02'))]);
    expect(new Set(raced.map((r) => r.receiptId)).size).toBe(1);
    const lease = await a.dequeue({ maxJobs: 100, maxExecutions: 100 });
    const leased = [lease, await a.dequeue({ maxJobs: 100, maxExecutions: 100 })].flatMap((l) => l?.jobs.map((j) => j.receiptId) ?? []);
    expect(leased.sort()).toEqual([first.receiptId, raced[0].receiptId].sort());
    expect(await a.dequeue({ maxJobs: 100, maxExecutions: 100 })).toBeNull();
  });

  it('ids come from the key, not the server: the same receipt and job id after a kill -9 restart and in a re-created stream', async () => {
    const own = await startNatsServer();
    cleanups.push(() => own.close());
    const prefix = freshPrefix();
    const q1 = await NatsQueue.open({ servers: own.url, ...OPTS, prefix, partitions: 1 });
    const r = await q1.enqueue(job('key-ids-01', 'proj-ids', 2));
    expect(r.receiptId).toBe(receiptIdFor('proj-ids', 'key-ids-01', 0));
    // Leased and never acked: redelivered after the server dies and comes back.
    expect((await dequeueWithin(q1, 5_000)).jobs.map((j) => j.receiptId)).toEqual([r.receiptId]);
    await q1.close().catch(() => undefined);
    await own.kill9();
    await own.start();
    const q2 = await open({ servers: own.url, prefix, partitions: 1 });
    expect((await dequeueWithin(q2, 15_000)).jobs.map((j) => [j.id, j.receiptId])).toEqual([[r.receiptId, r.receiptId]]);
    // The message restored into a stream created anew (another creation time, another seq), as an
    // operator's backup restore would: still the id the client was given.
    const nc = await connect({ servers: own.url });
    const jsm = await nc.jetstreamManager();
    const stored = await jsm.streams.getMessage(`${prefix}_JOBS`, { seq: 1 });
    await q2.close();
    cleanups.pop();
    const info = await jsm.streams.info(`${prefix}_JOBS`);
    await jsm.streams.delete(`${prefix}_JOBS`);
    await jsm.streams.add(info.config);
    await nc.jetstream().publish(stored.subject, stored.data);
    await nc.close();
    const q3 = await open({ servers: own.url, prefix, partitions: 1 });
    expect((await dequeueWithin(q3, 15_000)).jobs.map((j) => [j.id, j.receiptId])).toEqual([[r.receiptId, r.receiptId]]);
  }, 60_000);

  it('a full stream refuses enqueue with the backpressure error, and loses nothing it accepted', async () => {
    const q = await open({ prefix: freshPrefix(), partitions: 2, maxMsgs: 3 });
    const accepted = [];
    for (let i = 0; i < 3; i++) accepted.push(await q.enqueue(job(`key-full-${i}`, `proj-${i}`)));
    const refused = await q.enqueue(job('key-full-3')).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ statusCode: 503, code: 'backpressure' });
    // Nothing stored for the refused key: it is free.
    expect(await q.accepted('proj-1', 'key-full-3')).toBeUndefined();
    const seen: string[] = [];
    for (let lease = await q.dequeue({ maxJobs: 10, maxExecutions: 100 }); lease; lease = await q.dequeue({ maxJobs: 10, maxExecutions: 100 })) {
      seen.push(...lease.jobs.map((j) => j.receiptId));
      await q.ack(lease.id);
    }
    expect(seen.sort()).toEqual(accepted.map((r) => r.receiptId).sort());
    // Room again.
    expect((await q.enqueue(job('key-full-3'))).deduplicated).toBe(false);
  });

  it('a batch larger than the server takes in one message is refused with 413 naming the limit, nothing published', async () => {
    const q = await open({ prefix: freshPrefix(), partitions: 2 });
    // About 2 MB of JSON against nats-server's default max_payload of 1 MiB.
    const big = job('key-too-big', 'proj-1', 12_000);
    const refused = await q.enqueue(big).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ statusCode: 413, code: 'payload_too_large' });
    expect((refused as Error).message).toMatch(/at most 1048576 \(nats-server max_payload\)/);
    expect(await q.accepted('proj-1', 'key-too-big')).toBeUndefined();
    expect(await q.dequeue({ maxJobs: 10, maxExecutions: 100_000 })).toBeNull();
    // A batch that fits goes through.
    expect((await q.enqueue(job('key-fits', 'proj-1', 1_000))).deduplicated).toBe(false);
  });

  it('hands a lease to the pipeline thread as the published messages, with each job id beside them', async () => {
    const q = await open({ prefix: freshPrefix(), partitions: 1 });
    const receipts = [await q.enqueue(job('key-raw-1', 'proj-1', 2)), await q.enqueue(job('key-raw-2', 'proj-1', 3))];
    const raw = await q.dequeueRaw({ maxJobs: 10, maxExecutions: 100 });
    expect(raw?.jobs.map((j) => j.id)).toEqual(receipts.map((r) => r.receiptId));
    const decoded = raw!.jobs.map((j) => JSON.parse(new TextDecoder().decode(j.json)) as { projectId: string; batch: { idempotencyKey: string; executions: unknown[] } });
    expect(decoded.map((d) => [d.projectId, d.batch.idempotencyKey, d.batch.executions.length])).toEqual([
      ['proj-1', 'key-raw-1', 2],
      ['proj-1', 'key-raw-2', 3],
    ]);
    // Each in a buffer of its own: transferable without taking the others along.
    expect(new Set(raw!.jobs.map((j) => j.json.buffer)).size).toBe(2);
    await q.ack(raw!.id);
  });

  it('an ingest-only process (consume: false) enqueues; the worker process dequeues', async () => {
    const prefix = freshPrefix();
    const worker = await open({ prefix, partitions: 4 });
    const ingest = await open({ prefix, partitions: 4, consume: false });
    expect(await ingest.dequeue({ maxJobs: 10, maxExecutions: 100 })).toBeNull();
    const t0 = Date.now();
    const waiting = worker.waitForWork(10_000);
    const r = await ingest.enqueue(job('key-ingest-01', 'proj-x', 3));
    await waiting;
    expect(Date.now() - t0).toBeLessThan(3_000);
    const lease = await dequeueWithin(worker, 3_000);
    expect(lease.jobs.map((j) => [j.receiptId, j.batch.executions.length])).toEqual([[r.receiptId, 3]]);
    await worker.savePlan(lease.id, { events: [makeEvent(1)] });
    await worker.ack(lease.id);
    expect((await ingest.outbox.read(0, 10)).map((e) => e.event.data.n)).toEqual([1]);
    expect(await ingest.enqueue(job('key-ingest-01', 'proj-x', 3))).toEqual({ ...r, deduplicated: true });
  });

  it('after the worker is killed, a new worker gets every unacked job back in per-project order, the frozen lease whole', async () => {
    const prefix = freshPrefix();
    const P = 4;
    const projects = projectsInDistinctPartitions(P, 2);
    const a = await NatsQueue.open({ servers: server.url, ...OPTS, prefix, partitions: P, leaseTtlMs: 600, ownerId: 'worker-a' });
    cleanups.push(() => a.close());
    const receipts = new Map<string, string[]>(projects.map((p) => [p, []]));
    for (let i = 0; i < 8; i++) {
      const projectId = projects[i % 2]!;
      receipts.get(projectId)!.push((await a.enqueue(job(`key-kill-${i}`, projectId))).receiptId);
    }
    const frozen = await a.dequeue({ maxJobs: 2, maxExecutions: 100 });
    expect(frozen?.jobs).toHaveLength(2);
    const plan = { events: [makeEvent(7)] };
    await a.savePlan(frozen!.id, plan);
    const other = await a.dequeue({ maxJobs: 2, maxExecutions: 100 });
    expect(other?.jobs).toHaveLength(2);
    // kill -9: nothing acked, nothing released.
    await a.abandon();

    const b = await open({ prefix, partitions: P, leaseTtlMs: 600, ownerId: 'worker-b' });
    const seen = new Map<string, string[]>(projects.map((p) => [p, []]));
    let again: Lease | undefined;
    const deadline = Date.now() + 10_000;
    while ([...seen.values()].flat().length < 8) {
      if (Date.now() > deadline) throw new Error(`only ${[...seen.values()].flat().length} jobs came back`);
      const lease = await b.dequeue({ maxJobs: 3, maxExecutions: 100 });
      if (!lease) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      if (lease.id === frozen!.id) again = lease;
      for (const j of lease.jobs) seen.get(j.projectId)!.push(j.receiptId);
      await b.ack(lease.id);
    }
    expect(seen).toEqual(receipts);
    expect(again).toBeDefined();
    expect(again!.jobs.map((j) => j.id).sort()).toEqual(frozen!.jobs.map((j) => j.id).sort());
    expect(again!.plan).toEqual(plan);
    expect(again!.attempt).toBe(2);
    expect((await b.outbox.read(0, 10)).map((e) => e.event.data.n)).toEqual([7]);
    expect(b.depth()).toBe(0);
  });

  it('two workers share the partitions: every job once, in per-project order, also while they rebalance', async () => {
    const prefix = freshPrefix();
    const P = 4;
    const a = await open({ prefix, partitions: P, leaseTtlMs: 600, ownerId: 'share-a' });
    const ingest = await open({ prefix, partitions: P, consume: false });
    const sent = new Map<string, string[]>();
    for (let i = 0; i < 40; i++) {
      const projectId = `proj-${i % 8}`;
      const r = await ingest.enqueue(job(`key-share-${i}`, projectId));
      sent.set(projectId, [...(sent.get(projectId) ?? []), r.receiptId]);
    }
    // A holds a lease when B joins: the partitions A hands back for balance drain first.
    const held = await a.dequeue({ maxJobs: 2, maxExecutions: 100 });
    const b = await open({ prefix, partitions: P, leaseTtlMs: 600, ownerId: 'share-b' });
    const done = new Map<string, string[]>();
    const note = (l: Lease): void => {
      for (const j of l.jobs) done.set(j.projectId, [...(done.get(j.projectId) ?? []), j.receiptId]);
    };
    await new Promise((r) => setTimeout(r, 300));
    await a.ack(held!.id);
    note(held!);
    const byWorker = { a: 0, b: 0 };
    const deadline = Date.now() + 15_000;
    while ([...done.values()].flat().length < 40 && Date.now() < deadline) {
      for (const [name, q] of [['a', a], ['b', b]] as const) {
        const l = await q.dequeue({ maxJobs: 3, maxExecutions: 100 });
        if (!l) continue;
        byWorker[name] += l.jobs.length;
        await q.ack(l.id);
        note(l);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(done).toEqual(sent);
    expect(byWorker.b).toBeGreaterThan(0);
  });

  it('workers starting together on a new NATS all open: a stream or bucket another one created meanwhile is opened, not an error', async () => {
    for (let round = 0; round < 5; round++) {
      const prefix = freshPrefix();
      const qs = await Promise.all(Array.from({ length: 8 }, (_, i) => open({ prefix, partitions: 2, leaseTtlMs: 600, ownerId: `race-${round}-${i}`, consume: i % 2 === 0 })));
      expect(qs).toHaveLength(8);
    }
  });

  it('one worker dispatches the outbox at a time (the owner of partition 0), and another takes over when it leaves', async () => {
    const prefix = freshPrefix();
    const a = await open({ prefix, partitions: 3, leaseTtlMs: 600, ownerId: 'disp-a' });
    const b = await open({ prefix, partitions: 3, leaseTtlMs: 600, ownerId: 'disp-b' });
    const ingest = await open({ prefix, partitions: 3, consume: false });
    const settle = async (ok: () => boolean): Promise<void> => {
      const deadline = Date.now() + 5_000;
      while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    };
    await settle(() => [a, b].filter((q) => q.outbox.dispatchesHere()).length === 1);
    expect([a, b].filter((q) => q.outbox.dispatchesHere())).toHaveLength(1);
    expect(ingest.outbox.dispatchesHere()).toBe(false);
    const [seat, other] = a.outbox.dispatchesHere() ? [a, b] : [b, a];
    await seat.close();
    await settle(() => other.outbox.dispatchesHere());
    expect(other.outbox.dispatchesHere()).toBe(true);
  });

  it('heartbeats what it holds: JetStream does not redeliver a lease held past AckWait', async () => {
    const prefix = freshPrefix();
    const q = await open({ prefix, partitions: 1, ackWaitMs: 600 });
    await q.enqueue(job('key-held-01'));
    const lease = await q.dequeue({ maxJobs: 1, maxExecutions: 100 });
    expect(lease?.jobs).toHaveLength(1);
    // Held for 2.5 AckWaits: the time is what is tested (nothing is redelivered meanwhile), there is
    // no event to wait for instead.
    await new Promise((r) => setTimeout(r, 1_500));
    // Another puller on the partition's consumer: an expired message would be redelivered to it.
    const nc = await connect({ servers: server.url });
    const pulled = [];
    for await (const m of nc.jetstream().fetch(`${prefix}_JOBS`, `${prefix}_jobs_0`, { batch: 10, no_wait: true })) pulled.push(m);
    const info = await (await nc.jetstreamManager()).consumers.info(`${prefix}_JOBS`, `${prefix}_jobs_0`);
    await nc.close();
    expect(pulled).toHaveLength(0);
    expect(info.num_redelivered).toBe(0);
    await q.ack(lease!.id);
    expect(await q.dequeue({ maxJobs: 10, maxExecutions: 100 })).toBeNull();
    expect(q.depth()).toBe(0);
  });

  it('a job delivered past maxDeliver (it keeps killing its workers) ends in deadJobs()', async () => {
    const prefix = freshPrefix();
    const opts = { servers: server.url, ...OPTS, prefix, partitions: 1, maxDeliver: 2, ownerId: 'crashy' };
    const r = await (async () => {
      const q = await NatsQueue.open(opts);
      const res = await q.enqueue(job('key-poison-01'));
      await q.enqueue(job('key-fine-01'));
      expect((await q.dequeue({ maxJobs: 1, maxExecutions: 100 }))?.attempt).toBe(1);
      await q.abandon();
      return res;
    })();
    // The same owner id comes back: it takes its partitions over at once.
    const q2 = await NatsQueue.open(opts);
    expect((await dequeueWithin(q2, 5_000, { maxJobs: 1, maxExecutions: 100 })).attempt).toBe(2);
    await q2.abandon();
    const q3 = await open(opts);
    const lease = await dequeueWithin(q3, 5_000);
    expect(lease.jobs.map((j) => j.batch.idempotencyKey)).toEqual(['key-fine-01']);
    await q3.ack(lease.id);
    const dead = await q3.deadJobs();
    expect(dead.map((d) => [d.job.receiptId, d.job.attempts])).toEqual([[r.receiptId, 2]]);
    expect(dead[0]!.error).toMatch(/delivered 2 times/);
    expect(q3.stats()).toEqual({ pending: 0, inflight: 0, dead: 1, delayed: 0 });
    expect(await q3.enqueue(job('key-poison-01'))).toEqual({ receiptId: r.receiptId, acceptedExecutions: 1, deduplicated: true, dead: true });
  });

  it('a pull lost with a restarting server does not wedge dequeue: it is given up, the consumer recreated, and the jobs go on', async () => {
    // Its own server: this one is paused and killed under the queue.
    const own = await startNatsServer();
    cleanups.push(() => own.close());
    const q = await open({ servers: own.url, prefix: freshPrefix(), partitions: 1, pullTimeoutMs: 500, leaseTtlMs: 60_000 });
    const first = await q.enqueue(job('key-before-01'));
    const lease1 = await dequeueWithin(q, 5_000);
    await q.ack(lease1.id);
    expect(lease1.jobs.map((j) => j.receiptId)).toEqual([first.receiptId]);

    // The pull request is written to a paused server's socket; the server then dies unanswered.
    own.pause();
    const stuck = q.dequeue({ maxJobs: 100, maxExecutions: 10_000 });
    await new Promise((r) => setTimeout(r, 300));
    await own.kill9();
    await own.start();
    // Before the watchdog, this dequeue never returned (and a worker's pipeline waited on it forever).
    const outcome = await Promise.race([stuck.then(() => 'returned'), new Promise((r) => setTimeout(() => r('still waiting'), 10_000))]);
    expect(outcome).toBe('returned');

    const second = await enqueueOnceBack(q, job('key-after-01'));
    const lease2 = await dequeueWithin(q, 15_000);
    expect(lease2.jobs.map((j) => j.receiptId)).toEqual([second.receiptId]);
    await q.ack(lease2.id);
    expect(await q.dequeue({ maxJobs: 10, maxExecutions: 100 })).toBeNull();
  }, 60_000);

  it('jobs a lost pull had taken come back at once and before later jobs: the consumer is recreated, not left to AckWait', async () => {
    const proxy = await startTcpProxy({ port: server.port });
    cleanups.push(() => proxy.close());
    const prefix = freshPrefix();
    // A 60 s AckWait: were the taken jobs left to JetStream's redelivery, they would not be back in time.
    const q = await open({ servers: `nats://127.0.0.1:${proxy.port}`, prefix, partitions: 1, pullTimeoutMs: 500, leaseTtlMs: 60_000, ackWaitMs: 60_000 });
    const a = await q.enqueue(job('key-lost-a1'));
    const b = await q.enqueue(job('key-lost-b1'));

    // The server delivers A and B to this pull (the consumer counts them delivered); the answer never arrives.
    proxy.blackhole();
    expect(await q.dequeue({ maxJobs: 100, maxExecutions: 10_000 })).toBeNull();
    proxy.cut();

    const c = await enqueueOnceBack(q, job('key-lost-c1'));
    const got: string[] = [];
    while (got.length < 3) {
      const lease = await dequeueWithin(q, 5_000);
      got.push(...lease.jobs.map((j) => j.receiptId));
      await q.ack(lease.id);
    }
    expect(got).toEqual([a.receiptId, b.receiptId, c.receiptId]);
    expect(await q.dequeue({ maxJobs: 10, maxExecutions: 100 })).toBeNull();
  }, 60_000);

  it('an ack that never reached NATS is retried, not forgotten: the committed job is not processed again', async () => {
    const proxy = await startTcpProxy({ port: server.port });
    cleanups.push(() => proxy.close());
    const prefix = freshPrefix();
    // A short AckWait: a forgotten unacked message would be redelivered within the test.
    const q = await open({ servers: `nats://127.0.0.1:${proxy.port}`, prefix, partitions: 1, leaseTtlMs: 60_000, ackWaitMs: 1_500, ackTimeoutMs: 500 });
    const a = await q.enqueue(job('key-unacked-01'));
    const lease = await dequeueWithin(q, 5_000);
    await q.savePlan(lease.id, { events: [] });

    // The ack never reaches NATS (nor do the heartbeats: JetStream redelivers the message meanwhile).
    proxy.dropFromClient((text) => text.includes('$JS.ACK.'));
    await q.ack(lease.id);
    const again: string[] = [];
    const nc = await connect({ servers: server.url });
    cleanups.push(() => nc.close());
    const jsm = await nc.jetstreamManager();
    /** Dequeues (anything handed out is a finding) until `done()`, or fails after `ms`. */
    const pollLeasesUntil = async (what: string, done: () => Promise<boolean>, ms: number): Promise<void> => {
      const until = Date.now() + ms;
      for (;;) {
        const l = await q.dequeue({ maxJobs: 10, maxExecutions: 100 }).catch(() => null);
        if (l) again.push(...l.jobs.map((j) => j.receiptId));
        if (await done()) return;
        if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    // Past AckWait with the ack still lost: JetStream delivers the message again (a second delivery
    // on the partition's consumer), and the redelivered message is met as committed, not leased.
    let redeliveredAt: number | undefined;
    await pollLeasesUntil(
      'the message delivered again past AckWait, and a dequeue after that',
      async () => {
        if (redeliveredAt !== undefined) return true; // one more dequeue ran since it was seen
        const info = await jsm.consumers.info(`${prefix}_JOBS`, `${prefix}_jobs_0`);
        if (info.delivered.consumer_seq >= 2) redeliveredAt = Date.now();
        return false;
      },
      15_000,
    );
    proxy.passAll();
    // The retried ack lands: the job leaves the stream, and nothing was handed out again meanwhile.
    // stats() counts the stream as last re-read (every REFRESH_MS of src/queue/nats/queue.ts), so it is waited for too.
    await pollLeasesUntil(
      'the job acked (the stream empty, and stats() re-read since)',
      async () => (await jsm.streams.info(`${prefix}_JOBS`)).state.messages === 0 && q.stats().pending === 0 && q.stats().inflight === 0,
      15_000,
    );
    expect(again).toEqual([]);
    expect(q.stats()).toMatchObject({ pending: 0, inflight: 0 });
    expect(a.receiptId).toBe(lease.jobs[0]!.receiptId);
  }, 60_000);

  it('an ack whose events could not be published hands the lease back whole: the nack finds it, and it comes back frozen', async () => {
    const prefix = freshPrefix();
    const q = await open({ prefix, partitions: 1 });
    await q.enqueue(job('key-outbox-01'));
    const lease = await dequeueWithin(q, 5_000);
    const plan = { events: [makeEvent(1)] };
    await q.savePlan(lease.id, plan);
    const nc = await connect({ servers: server.url });
    cleanups.push(() => nc.close());
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(`${prefix}_OUTBOX`);

    await expect(q.ack(lease.id)).rejects.toThrow();
    // As the runtime does with a failed lease (before, the ack had forgotten it: this did nothing and the job sat held).
    await q.nack(lease.id, 'outbox unavailable');
    await open({ prefix, partitions: 1, consume: false }); // creates the outbox stream again
    const again = await dequeueWithin(q, 5_000);
    expect(again.id).toBe(lease.id);
    expect(again.plan).toEqual(plan);
    await q.ack(again.id);
    expect((await jsm.streams.info(`${prefix}_OUTBOX`)).state.messages).toBe(1);
    expect((await jsm.streams.info(`${prefix}_JOBS`)).state.messages).toBe(0);
  });

  it('a lease whose attempt could not be recorded is not left out: its jobs go back first, uncharged', async () => {
    const prefix = freshPrefix();
    const q = await open({ prefix, partitions: 1 });
    const a = await q.enqueue(job('key-charge-01'));
    const b = await q.enqueue(job('key-charge-02'));
    const nc = await connect({ servers: server.url });
    cleanups.push(() => nc.close());
    await (await nc.jetstreamManager()).streams.delete(`KV_${prefix}_attempts`);

    await expect(q.dequeue({ maxJobs: 1, maxExecutions: 100 })).rejects.toThrow();
    await open({ prefix, partitions: 1, consume: false }); // creates the bucket again
    // Before, the jobs sat in a lease nobody held until the visibility timeout (60 s here).
    const lease = await dequeueWithin(q, 5_000, { maxJobs: 10, maxExecutions: 100 });
    expect(lease.jobs.map((j) => [j.receiptId, j.attempts])).toEqual([
      [a.receiptId, 1],
      [b.receiptId, 1],
    ]);
    await q.ack(lease.id);
  });
});

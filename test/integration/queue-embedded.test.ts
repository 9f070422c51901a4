// The queue contract against the embedded (lmdb) backend, plus what only this backend promises.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '../../src/queue/embedded.js';
import { LmdbStorage } from '../../src/queue/lmdb-storage.js';
import { makeBatch, makeEvent, queueContract } from './queue-contract.js';

queueContract('embedded (lmdb)', {
  open: (dir, opts) => EmbeddedQueue.open({ path: dir, ...opts }),
});

describe('embedded (lmdb) specifics', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  const OPTS = { visibilityMs: 60_000, maxAttempts: 3, baseBackoffMs: 100, maxBackoffMs: 1_000 };

  function setup(): EmbeddedQueue {
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-queue-embedded-'));
    const q = EmbeddedQueue.open({ path: dir, ...OPTS });
    cleanups.push(async () => {
      await q.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return q;
  }

  it('receipt ids sort in call order, so a restart keeps FIFO even within one millisecond', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-queue-embedded-'));
    let q = EmbeddedQueue.open({ path: dir, ...OPTS });
    cleanups.push(async () => {
      await q.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const N = 500;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) => q.enqueue({ projectId: 'p', source: 'native', batch: makeBatch(`key-order-${String(i).padStart(5, '0')}`) })),
    );
    const receipts = results.map((r) => r.receiptId);
    expect([...receipts].sort()).toEqual(receipts);
    await q.close();
    q = EmbeddedQueue.open({ path: dir, ...OPTS });
    // Ids keep growing after a restart too.
    const later = await q.enqueue({ projectId: 'p', source: 'native', batch: makeBatch('key-order-later') });
    expect(later.receiptId > receipts[N - 1]!).toBe(true);
    const lease = await q.dequeue({ maxJobs: N + 1, maxExecutions: 10_000 });
    expect(lease?.jobs.map((j) => j.receiptId)).toEqual([...receipts, later.receiptId]);
  });

  it("the door's blind writes commit beside the engine's transactions of the same turn, whole, and are on disk when they resolve", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-queue-embedded-'));
    let storage = new LmdbStorage(dir);
    cleanups.push(async () => {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const receipt = (i: number) => ({ receiptId: `job-${i}`, acceptedExecutions: i, receivedAt: 1 });
    // One turn: blind puts (as enqueue makes them) interleaved with transactions that read inside
    // (the outbox's sequence), as the worker's commits do.
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) {
      writes.push(storage.write((w) => { w.put('jobs', `job-${i}`, new Uint8Array([i])); w.put('receipts', `p\u0000key-${i}`, receipt(i)); }, { durable: true, blind: true }));
      if (i % 10 === 0) writes.push(storage.write((w) => w.appendOutbox([makeEvent(i), makeEvent(i + 1)]), { durable: true }));
    }
    await Promise.all(writes);
    // A body that throws writes nothing, not even the puts it made before throwing.
    await expect(storage.write((w) => { w.put('jobs', 'job-partial', new Uint8Array([1])); w.appendOutbox([makeEvent(99)]); }, { blind: true })).rejects.toThrow(/cannot append to the outbox/);
    await storage.close();
    storage = new LmdbStorage(dir);
    expect(storage.count('jobs')).toBe(40);
    expect(storage.count('receipts')).toBe(40);
    expect(storage.get('receipts', 'p\u0000key-7')).toEqual(receipt(7));
    expect([...storage.get('jobs', 'job-39')!]).toEqual([39]);
    expect(storage.has('jobs', 'job-partial')).toBe(false);
    // Four appends of two events each: eight entries under sequence numbers 1..8, none overwritten.
    expect(storage.readOutbox(0, 100).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('stores job records compressed, and reads a record stored before compression as it was', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-queue-embedded-'));
    const enc = new TextEncoder();
    const record = (i: number) => enc.encode(JSON.stringify({ id: `job-${i}`, projectId: 'p', batch: makeBatch(`key-lz4-${i}`, 100) }));
    // A data dir written before compression: the same database, plain bytes.
    const before = open({ path: dir, maxDbs: 16, mapSize: 64 * 1024 * 1024 * 1024 });
    await before.openDB<Uint8Array, string>({ name: 'jobs', encoding: 'binary' }).put('old-job', record(0));
    await before.close();
    let storage = new LmdbStorage(dir);
    cleanups.push(async () => {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    });
    let plainBytes = 0;
    await storage.write((w) => {
      for (let i = 1; i <= 200; i++) {
        const bytes = record(i);
        plainBytes += bytes.byteLength;
        w.put('jobs', `job-${i}`, bytes);
      }
    }, { durable: true });
    await storage.close();
    storage = new LmdbStorage(dir);
    expect(Buffer.from(storage.get('jobs', 'old-job')!).equals(Buffer.from(record(0)))).toBe(true);
    expect(Buffer.from(storage.get('jobs', 'job-150')!).equals(Buffer.from(record(150)))).toBe(true);
    // Uncompressed, the pages hold at least the bytes themselves; LZ4 keeps repetitive JSON well under half.
    expect(storage.usedBytes()).toBeLessThan(plainBytes / 2);
  });

  it('the byte cap counts what the storage holds: compressed jobs fill it later, and a refusal holds until a lease leaves', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-queue-embedded-'));
    const maxBytes = 256 * 1024;
    const q = EmbeddedQueue.open({ path: dir, ...OPTS, maxBytes });
    cleanups.push(async () => {
      await q.close();
      rmSync(dir, { recursive: true, force: true });
    });
    let acceptedBytes = 0;
    let refused: { code?: string } | undefined;
    for (let i = 0; i < 1_000 && !refused; i++) {
      const batch = makeBatch(`key-cap-${i}`, 100);
      try {
        await q.enqueue({ projectId: 'p', source: 'native', batch });
        acceptedBytes += JSON.stringify(batch).length;
      } catch (err) {
        refused = err as { code?: string };
      }
    }
    expect(refused?.code).toBe('QUEUE_MAX_BYTES');
    // The batches' own bytes pass the cap: what counts is their compressed pages.
    expect(acceptedBytes).toBeGreaterThan(2 * maxBytes);
    expect(q.hasRoom()).toBe(false);
    // The next read of the storage finds the same jobs, so the door stays shut…
    q.usedBytes(Date.now() + 60_000);
    expect(q.hasRoom()).toBe(false);
    // …until a lease is acked and its jobs leave.
    const lease = await q.dequeue({ maxJobs: 500, maxExecutions: 1_000_000 });
    await q.ack(lease!.id);
    q.usedBytes(Date.now() + 120_000);
    expect(q.hasRoom()).toBe(true);
  });

  it('does not keep waiters that timed out', async () => {
    const q = setup();
    const waiters = q as unknown as { workWaiters: { size: number }; outboxWaiters: { size: number } };
    for (let i = 0; i < 5; i++) await Promise.all([q.waitForWork(5), q.outbox.waitForEntries(5)]);
    expect(waiters.workWaiters.size).toBe(0);
    expect(waiters.outboxWaiters.size).toBe(0);
  });

  it('refuses failJob on a frozen lease (the whole lease must be nacked)', async () => {
    const q = setup();
    await q.enqueue({ projectId: 'p', source: 'native', batch: makeBatch('key-frozen-fail') });
    const lease = await q.dequeue({ maxJobs: 10, maxExecutions: 100 });
    await q.savePlan(lease!.id, { events: [makeEvent(1)] });
    await expect(q.failJob(lease!.id, lease!.jobs[0]!.id, 'x')).rejects.toThrow(/frozen/);
    await q.ack(lease!.id);
    expect(q.outbox.read(0, 10)).toHaveLength(1);
  });

  it('counts the jobs of a failed lease in depth() while they are put back', async () => {
    const q = setup();
    for (let i = 0; i < 3; i++) await q.enqueue({ projectId: 'p', source: 'native', batch: makeBatch(`key-depth-${i}`) });
    // Each way a lease ends badly writes before it puts its jobs back: depth() must not dip meanwhile.
    const ends: [string, (leaseId: string, jobId: string) => Promise<void>][] = [
      ['out of space', (id) => q.nack(id, 'Cannot reserve 1.00 MiB, not enough space', { outOfSpace: true })],
      ['split', (id) => q.nack(id, 'boom')],
      ['one job failed', (id, jobId) => q.failJob(id, jobId, 'boom')],
    ];
    for (const [how, end] of ends) {
      let lease: Awaited<ReturnType<typeof q.dequeue>> = null;
      for (let tries = 0; !lease && tries < 100; tries++) {
        lease = await q.dequeue({ maxJobs: 10, maxExecutions: 100 });
        if (!lease) await q.waitForWork(50);
      }
      if (!lease) throw new Error(`${how}: no lease`);
      const ending = end(lease.id, lease.jobs[0]!.id);
      expect(q.depth(), `${how}: while its writes are pending`).toBe(3);
      await ending;
      expect(q.depth(), `${how}: after`).toBe(3);
    }
  });

  it('refuses savePlan on an unknown lease', async () => {
    const q = setup();
    await expect(q.savePlan('00000000-0000-4000-8000-000000000000', { events: [] })).rejects.toThrow(/lease/);
  });

  it('refuses work after close', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-queue-embedded-'));
    const q = EmbeddedQueue.open({ path: dir, visibilityMs: 1_000, maxAttempts: 3 });
    await q.close();
    await q.close();
    await expect(q.enqueue({ projectId: 'p', source: 'native', batch: makeBatch('key-closed-01') })).rejects.toThrow(/closed/);
    rmSync(dir, { recursive: true, force: true });
  });
});

// The queue contract against the engine on in-memory storage: the engine's lease lifecycle, failure
// policy, receipts and dead jobs checked apart from any database. A "restart" reopens the engine
// on the same MemoryStorage (what survives a crash is what the storage holds).
import { describe, expect, it } from 'vitest';
import { QueueEngine } from '../../src/queue/engine.js';
import { MemoryStorage } from '../../src/queue/memory-storage.js';
import { makeBatch, queueContract } from './queue-contract.js';

const storages = new Map<string, MemoryStorage>();

queueContract('engine on memory storage', {
  open: (dir, opts) => {
    let storage = storages.get(dir);
    if (!storage) storages.set(dir, (storage = new MemoryStorage()));
    return QueueEngine.open(storage, opts);
  },
});

describe('engine on memory storage: a failed write', () => {
  const OPTS = { visibilityMs: 60_000, maxAttempts: 3, baseBackoffMs: 50, maxBackoffMs: 200 };

  it('an enqueue whose write fails stores nothing and keeps the key free; an ack whose write fails keeps the lease for a nack', async () => {
    const storage = new MemoryStorage();
    const q = QueueEngine.open(storage, OPTS);
    storage.failNextWrite = Object.assign(new Error('No space left on device'), { code: 'ENOSPC' });
    await expect(q.enqueue({ projectId: 'p', source: 'native', batch: makeBatch('key-fail-1') })).rejects.toThrow('No space left');
    expect(q.accepted('p', 'key-fail-1')).toBeUndefined();
    expect(q.depth()).toBe(0);
    const r = await q.enqueue({ projectId: 'p', source: 'native', batch: makeBatch('key-fail-1') });
    expect(r.deduplicated).toBe(false);

    const lease = await q.dequeue({ maxJobs: 10, maxExecutions: 100 });
    storage.failNextWrite = new Error('commit failed');
    await expect(q.ack(lease!.id)).rejects.toThrow('commit failed');
    // Not acked and still in hand: counted in flight, and the nack puts it back for a retry.
    expect(q.stats()).toMatchObject({ inflight: 1 });
    await q.nack(lease!.id, 'commit failed');
    expect(q.stats()).toMatchObject({ inflight: 0, delayed: 1 });
    // After a restart on the same storage the job is there again, ready at once.
    await q.close();
    const again = QueueEngine.open(storage, OPTS);
    expect((await again.dequeue({ maxJobs: 10, maxExecutions: 100 }))?.jobs.map((j) => j.receiptId)).toEqual([r.receiptId]);
  });
});

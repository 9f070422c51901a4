// The storage guard after a write met a full disk: the disk is re-read, so /health and the door see
// space come back without waiting for a write; and the door's replays never spend the probe.
import { describe, expect, it } from 'vitest';
import { StorageGuard } from '../../src/ingest/storage-guard.js';
import { ApiError } from '../../src/errors/catalogue.js';
import { IngestService } from '../../src/ingest/service.js';
import type { IngestBatch } from '../../client/src/contract/batch.js';
import type { EnqueueResult, NewJob, Queue } from '../../src/queue/types.js';

const MiB = 1024 * 1024;
const diskFull = (): Error => Object.assign(new Error('No space left on device'), { code: 'ENOSPC' });

function refusal(f: () => void): ApiError | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

describe('StorageGuard after a write met a full disk', () => {
  it('re-reads the disk (reserve off too): free space back → /health ok and the door open, without a write', () => {
    let free = 0;
    const g = new StorageGuard({ dir: '/data', minFreeBytes: 0, recheckMs: 1000, freeBytes: () => free });
    const t0 = Date.now();
    g.writeFailed(diskFull(), t0);
    expect(g.status(t0)).toMatchObject({ state: 'full', freeBytes: 0 });
    free = 10 * MiB;
    expect(g.status(t0 + 500).state).toBe('full'); // the reading still stands
    expect(g.status(t0 + 1000)).toMatchObject({ state: 'ok' });
    // Nothing reads the disk once it is over: no stale reading is shown.
    expect(g.status(t0 + 1001).freeBytes).toBeUndefined();
    expect(refusal(() => g.check(t0 + 1002))).toBeUndefined();
  });

  it('a few freed bytes are not space back; each failure moves the mark', () => {
    let free = 100;
    const g = new StorageGuard({ dir: '/data', minFreeBytes: 0, recheckMs: 1000, freeBytes: () => free });
    const t0 = Date.now();
    g.writeFailed(diskFull(), t0);
    free = 100 + 1024;
    expect(g.status(t0 + 1000).state).toBe('full');
    free = 5 * MiB;
    g.writeFailed(diskFull(), t0 + 4000); // the probe's write failed again, at 5 MiB free
    free = 5 * MiB + 4096;
    expect(g.status(t0 + 5000).state).toBe('full');
    free = 7 * MiB;
    expect(g.status(t0 + 7000).state).toBe('ok');
  });

  it("the queue's byte cap is not the disk: only the queue's room clears it", () => {
    let room = false;
    const g = new StorageGuard({ dir: '/data', minFreeBytes: 0, recheckMs: 1000, freeBytes: () => 100 * MiB, queueHasRoom: () => room });
    g.writeFailed(Object.assign(new Error('the queue is full'), { code: 'QUEUE_MAX_BYTES' }));
    expect(g.status(Date.now() + 5000).state).toBe('full');
    room = true;
    expect(g.status().state).toBe('ok');
  });

  it('with the reserve on, the disk below it still refuses after the failed write clears', () => {
    let free = 0;
    const g = new StorageGuard({ dir: '/data', minFreeBytes: 4 * MiB, recheckMs: 1000, freeBytes: () => free });
    const t0 = Date.now();
    g.writeFailed(diskFull(), t0);
    free = 2 * MiB;
    const s = g.status(t0 + 1000);
    expect(s).toMatchObject({ state: 'full', freeBytes: 2 * MiB });
    expect(s.reason).toContain('SERVICE_MIN_FREE_BYTES');
    free = 8 * MiB;
    expect(g.status(t0 + 2000)).toMatchObject({ state: 'ok', freeBytes: 8 * MiB });
  });
});

/** A queue holding one stored key, whose writes fail for lack of space until `space` is set. */
class FullQueue implements Pick<Queue, 'enqueue' | 'accepted' | 'depth'> {
  space = false;
  writes = 0;
  stored = new Map<string, EnqueueResult>([['p\u0000seen', { receiptId: 'r-seen', acceptedExecutions: 1, deduplicated: true }]]);
  depth(): number {
    return 0;
  }
  accepted(projectId: string, key: string): EnqueueResult | undefined {
    return this.stored.get(`${projectId}\u0000${key}`);
  }
  async enqueue(job: NewJob): Promise<EnqueueResult> {
    const known = this.accepted(job.projectId, job.batch.idempotencyKey);
    if (known) return known;
    this.writes++;
    if (!this.space) throw diskFull();
    const result = { receiptId: `r-${job.batch.idempotencyKey}`, acceptedExecutions: job.batch.executions.length, deduplicated: false };
    this.stored.set(`${job.projectId}\u0000${job.batch.idempotencyKey}`, { ...result, deduplicated: true });
    return result;
  }
}

const batch = (idempotencyKey: string): IngestBatch => ({ idempotencyKey, executions: [] }) as unknown as IngestBatch;

describe('IngestService while storage is full', () => {
  it('answers a replay of a stored key as deduplicated, and the replay does not spend the probe of a new batch', async () => {
    const queue = new FullQueue();
    const guard = new StorageGuard({ dir: '/nonexistent', minFreeBytes: 0, recheckMs: 60_000 });
    const ingest = new IngestService(queue as unknown as Queue, 0, guard);
    const post = (key: string) => ingest.accept('p', 'native', batch(key), ingest.admit());

    await expect(post('new-1')).rejects.toMatchObject({ statusCode: 507 });
    expect(guard.status().state).toBe('full');
    // Replays: 202 deduplicated, nothing written.
    for (let i = 0; i < 3; i++) await expect(post('seen')).resolves.toMatchObject({ receiptId: 'r-seen', deduplicated: true });
    expect(queue.writes).toBe(1);
    // A new batch within the interval is refused at the check, without a write.
    await expect(post('new-2')).rejects.toMatchObject({ statusCode: 507 });
    expect(queue.writes).toBe(1);
  });

  it('lets the first new batch after the interval write, however many replays came meanwhile', async () => {
    const queue = new FullQueue();
    const guard = new StorageGuard({ dir: '/nonexistent', minFreeBytes: 0, recheckMs: 50 });
    const ingest = new IngestService(queue as unknown as Queue, 0, guard);
    const post = (key: string) => ingest.accept('p', 'native', batch(key), ingest.admit());
    await expect(post('new-1')).rejects.toMatchObject({ statusCode: 507 });
    queue.space = true;
    // Past the 50 ms recheck interval: the passing of time is what is tested.
    await new Promise((r) => setTimeout(r, 60));
    for (let i = 0; i < 5; i++) await expect(post('seen')).resolves.toMatchObject({ deduplicated: true });
    await expect(post('new-2')).resolves.toMatchObject({ receiptId: 'r-new-2', deduplicated: false });
    expect(guard.status().state).toBe('ok');
  });
});

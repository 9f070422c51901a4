// The queue engine's shared parts on their own: the failure policy, through a sink that records
// the decisions every backend carries out, and the ready sets of one partition (the contract
// suite checks that the backends carry them out on their storage).
import { describe, expect, it } from 'vitest';
import { deadGroupOf, FailurePolicy, ReleaseCount, Serial, type Delayed, type FailureSink } from '../../src/queue/failure-policy.js';
import { ReadySets } from '../../src/queue/ready-sets.js';

interface Recorded {
  refunded: string[][];
  firstErrors: string[][];
  unfrozen: string[];
  buried: { jobs: string[]; frozenLeaseId?: string }[];
  front: string[][][];
  delayed: Delayed<string>[];
  woken: number;
}

function recordingSink(attempts: Record<string, number>): { sink: FailureSink<string>; rec: Recorded } {
  const rec: Recorded = { refunded: [], firstErrors: [], unfrozen: [], buried: [], front: [], delayed: [], woken: 0 };
  const sink: FailureSink<string> = {
    attempts: (j) => attempts[j] ?? 0,
    refund: async (jobs) => void rec.refunded.push([...jobs]),
    noteFirstErrors: async (jobs, _error) => void rec.firstErrors.push([...jobs]),
    unfreeze: async (id) => void rec.unfrozen.push(id),
    bury: async (jobs, _error, frozenLeaseId) => void rec.buried.push({ jobs: [...jobs], ...(frozenLeaseId !== undefined ? { frozenLeaseId } : {}) }),
    toFront: (groups) => void rec.front.push(groups),
    delay: (d) => void rec.delayed.push(d),
    wake: () => void rec.woken++,
  };
  return { sink, rec };
}

const limits = { maxAttempts: 3, baseBackoffMs: 1000, maxBackoffMs: 8000 };

describe('FailurePolicy', () => {
  it('splits a failed unfrozen lease of several jobs in halves at the front, charging none', async () => {
    const { sink, rec } = recordingSink({ a: 1, b: 1, c: 1 });
    await new FailurePolicy(limits).nack({ id: 'L', jobs: ['a', 'b', 'c'], frozen: false }, 'boom', {}, sink);
    expect(rec.refunded).toEqual([['a', 'b', 'c']]);
    expect(rec.front).toEqual([[['a', 'b'], ['c']]]);
    expect(rec.woken).toBe(1);
    expect(rec.buried).toEqual([]);
    expect(rec.delayed).toEqual([]);
  });

  it('retries a job that failed alone after a backoff, and buries it at maxAttempts', async () => {
    const policy = new FailurePolicy(limits);
    const before = Date.now();
    const first = recordingSink({ a: 2 });
    await policy.nack({ id: 'L', jobs: ['a'], frozen: false }, 'boom', {}, first.sink);
    expect(first.rec.firstErrors).toEqual([['a']]);
    expect(first.rec.delayed).toHaveLength(1);
    const d = first.rec.delayed[0]!;
    expect(d).toMatchObject({ frozen: false, jobs: ['a'] });
    // Attempt 2: 2 s ± 25 % jitter.
    expect(d.availableAt - before).toBeGreaterThanOrEqual(1500);
    expect(d.availableAt - Date.now()).toBeLessThanOrEqual(2500);

    const last = recordingSink({ a: 3 });
    await policy.failJob('a', 'boom', last.sink);
    expect(last.rec.buried).toEqual([{ jobs: ['a'] }]);
    expect(last.rec.delayed).toEqual([]);
  });

  it('keeps a frozen lease whole: retried as that lease, buried whole with its id, never split', async () => {
    const policy = new FailurePolicy(limits);
    const retry = recordingSink({ a: 1, b: 2 });
    await policy.nack({ id: 'F', jobs: ['a', 'b'], frozen: true }, 'boom', {}, retry.sink);
    expect(retry.rec.front).toEqual([]);
    expect(retry.rec.delayed).toMatchObject([{ frozen: true, id: 'F' }]);
    expect(retry.rec.firstErrors).toEqual([['a', 'b']]);

    const dead = recordingSink({ a: 3, b: 1 });
    await policy.nack({ id: 'F', jobs: ['a', 'b'], frozen: true }, 'boom', {}, dead.sink);
    expect(dead.rec.buried).toEqual([{ jobs: ['a', 'b'], frozenLeaseId: 'F' }]);
  });

  it('unfreezes a lease that wrote nothing, then splits it like any other', async () => {
    const { sink, rec } = recordingSink({ a: 3, b: 3 });
    await new FailurePolicy(limits).nack({ id: 'F', jobs: ['a', 'b'], frozen: true }, 'boom', { unfreeze: true }, sink);
    expect(rec.unfrozen).toEqual(['F']);
    expect(rec.front).toEqual([[['a'], ['b']]]);
    expect(rec.buried).toEqual([]);
  });

  it('out of space: the same lease later, nothing charged, split or buried; the backoff grows until a commit', async () => {
    const policy = new FailurePolicy({ maxAttempts: 1, baseBackoffMs: 1000, maxBackoffMs: 60_000 });
    const waits: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { sink, rec } = recordingSink({ a: 5, b: 5 });
      const t = Date.now();
      await policy.nack({ id: 'L', jobs: ['a', 'b'], frozen: false }, 'ENOSPC', { outOfSpace: true }, sink);
      expect(rec.refunded).toEqual([['a', 'b']]);
      expect(rec.buried).toEqual([]);
      expect(rec.front).toEqual([]);
      expect(rec.delayed).toMatchObject([{ frozen: false, jobs: ['a', 'b'] }]);
      waits.push(rec.delayed[0]!.availableAt - t);
    }
    // 1 s, 2 s, 4 s, each ± 25 %.
    expect(waits[2]!).toBeGreaterThan(waits[0]! * 2);
    policy.committed();
    const { sink, rec } = recordingSink({});
    const t = Date.now();
    await policy.nack({ id: 'F', jobs: ['a'], frozen: true }, 'ENOSPC', { outOfSpace: true }, sink);
    expect(rec.delayed).toMatchObject([{ frozen: true, id: 'F' }]);
    expect(rec.delayed[0]!.availableAt - t).toBeLessThanOrEqual(1250 + 50);
  });

  it('caps the backoff', () => {
    const policy = new FailurePolicy(limits);
    for (let i = 0; i < 50; i++) expect(policy.backoff(30)).toBeLessThanOrEqual(8000 * 1.25);
  });
});

describe('queue helpers', () => {
  it('ReleaseCount counts jobs while they are put back, also when that fails', async () => {
    const r = new ReleaseCount();
    let seen = -1;
    await r.during(3, async () => {
      seen = r.value;
    });
    expect(seen).toBe(3);
    await expect(r.during(2, () => Promise.reject(new Error('x')))).rejects.toThrow('x');
    expect(r.value).toBe(0);
  });

  it('Serial runs one operation at a time, in call order, past a failure', async () => {
    const s = new Serial();
    const log: string[] = [];
    let release!: () => void;
    const first = s.run(async () => {
      log.push('1 start');
      await new Promise<void>((r) => (release = r));
      log.push('1 end');
      throw new Error('one');
    });
    const second = s.run(async () => void log.push('2'));
    await Promise.resolve();
    release();
    await expect(first).rejects.toThrow('one');
    await second;
    expect(log).toEqual(['1 start', '1 end', '2']);
  });

  it('deadGroupOf takes a frozen lease-mates along, by the dead plan', async () => {
    const dead = new Map([
      ['a', { job: { id: 'a' }, frozenLeaseId: 'F' }],
      ['b', { job: { id: 'b' }, frozenLeaseId: 'F' }],
      ['c', { job: { id: 'c' } }],
    ]);
    const plans = new Map([['F', { jobIds: ['a', 'b'] }]]);
    const g = await deadGroupOf('b', (id) => dead.get(id), (id) => plans.get(id));
    expect(g?.records.map((r) => r.job.id)).toEqual(['a', 'b']);
    expect(g?.frozenLeaseId).toBe('F');
    expect((await deadGroupOf('c', (id) => dead.get(id), (id) => plans.get(id)))?.records.map((r) => r.job.id)).toEqual(['c']);
    expect(await deadGroupOf('zz', (id) => dead.get(id), (id) => plans.get(id))).toBeNull();
  });
});

describe('ReadySets (one partition of any backend)', () => {
  const byNumber = (a: number, b: number): number => a - b;
  const all = { maxJobs: 100, maxExecutions: 1_000 };
  const one = (): number => 1;

  it('hands out a frozen lease first, then groups, then ready jobs oldest first within the limits', () => {
    const sets = new ReadySets<number>(byNumber);
    sets.putReady([5, 3, 4]);
    sets.toFront([[9], [8]]);
    sets.frozenReady('F');
    expect(sets.take(all, one)).toEqual({ kind: 'frozen', id: 'F' });
    expect(sets.take(all, one)).toEqual({ kind: 'group', jobs: [9] });
    expect(sets.take(all, one)).toEqual({ kind: 'group', jobs: [8] });
    // Past the first job, at most maxExecutions; never more than maxJobs.
    expect(sets.take({ maxJobs: 10, maxExecutions: 5 }, () => 3)).toEqual({ kind: 'ready', jobs: [3] });
    expect(sets.take({ maxJobs: 1, maxExecutions: 100 }, one)).toEqual({ kind: 'ready', jobs: [4] });
    expect(sets.take(all, (j) => (j === 5 ? undefined : 1))).toBeNull();
  });

  it('keeps the ready list oldest first whatever order jobs come back in', () => {
    const sets = new ReadySets<number>(byNumber);
    sets.putReady([10, 11, 12, 13]);
    expect(sets.take({ maxJobs: 2, maxExecutions: 100 }, one)).toEqual({ kind: 'ready', jobs: [10, 11] });
    // An expired lease: older than everything ready, back in front.
    sets.putReady([11, 10]);
    // Interleaved and newer.
    sets.putReady([12.5, 20]);
    const next = sets.take(all, one);
    expect(next).toEqual({ kind: 'ready', jobs: [10, 11, 12, 12.5, 13, 20] });
    sets.untake(next!);
    expect(sets.oldestReady()).toBe(10);
    sets.removeReady(12);
    expect(sets.readyCount).toBe(5);
  });

  it('holds backoffs until due and counts every job not leased', () => {
    const sets = new ReadySets<number>(byNumber);
    const now = Date.now();
    sets.delay({ frozen: false, jobs: [1], availableAt: now + 1_000 });
    sets.delay({ frozen: true, id: 'F', availableAt: now + 500 });
    sets.putReady([7]);
    const frozenSize = (): number => 3;
    expect(sets.delayedJobs(frozenSize)).toBe(4);
    expect(sets.pendingJobs(frozenSize)).toBe(5);
    expect(sets.nextDueAt()).toBe(now + 500);
    sets.promote(now + 600);
    expect(sets.hasFrozenOrGroup()).toBe(true);
    expect(sets.take(all, one)).toEqual({ kind: 'frozen', id: 'F' });
    sets.promote(now + 2_000);
    expect(sets.take(all, one)).toEqual({ kind: 'group', jobs: [1] });
    expect(sets.nextDueAt()).toBe(Number.POSITIVE_INFINITY);
  });
});

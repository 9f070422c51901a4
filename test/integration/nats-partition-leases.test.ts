// Partition ownership leases in JetStream KV (src/queue/nats/partition-leases.ts), against a real
// nats-server: fair shares, takeover of a dead owner's partitions with a grown fence, a graceful
// hand-back that drains before releasing, rebalancing when a worker joins, and self-expiry of an
// owner cut off from NATS. Each owner has a connection of its own, as separate processes would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type KV, type NatsConnection } from 'nats';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../helpers/nats.js';
import { FencedError, PartitionLeases, openLeaseBucket, partitionOf } from '../../src/queue/nats/partition-leases.js';

const P = 8;

let nats: NatsServer;
const connections: NatsConnection[] = [];
const running: PartitionLeases[] = [];
let bucketSeq = 0;

beforeAll(async () => {
  if (!natsServerAvailable()) throw new Error('nats-server is not installed (Debian package nats-server; .ci/run installs it)');
  nats = await startNatsServer();
});

afterAll(async () => {
  await Promise.all(running.map((l) => l.stop().catch(() => undefined)));
  await Promise.all(connections.map((nc) => nc.close().catch(() => undefined)));
  await nats?.close();
});

interface Worker {
  id: string;
  leases: PartitionLeases;
  kv: KV;
  nc: NatsConnection;
  events: string[];
}

interface WorkerOpts {
  url?: string;
  ttlMs: number;
  onLose?: (w: Worker, p: number, voluntary: boolean) => Promise<void>;
}

async function startWorker(bucket: string, id: string, opts: WorkerOpts): Promise<Worker> {
  const nc = await connect({ servers: opts.url ?? nats.url, name: id, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  connections.push(nc);
  const kv = await openLeaseBucket(nc.jetstream({ timeout: 1000 }), bucket);
  const w: Worker = { id, kv, nc, events: [], leases: undefined as unknown as PartitionLeases };
  w.leases = new PartitionLeases({
    kv,
    partitions: P,
    ownerId: id,
    ttlMs: opts.ttlMs,
    onAcquire: (p, fence) => {
      w.events.push(`acquire ${p} ${fence}`);
    },
    onLose: async (p, voluntary) => {
      w.events.push(`lose ${p} ${voluntary}`);
      await opts.onLose?.(w, p, voluntary);
    },
  });
  running.push(w.leases);
  await w.leases.start();
  return w;
}

const newBucket = (): string => `leases_${process.pid}_${++bucketSeq}`;

async function leasesInKv(kv: KV): Promise<Map<number, { owner: string | null; fence: number }>> {
  const out = new Map<number, { owner: string | null; fence: number }>();
  for (let p = 0; p < P; p++) {
    const e = await kv.get(`p.${p}`);
    if (e && e.operation === 'PUT') out.set(p, e.json());
  }
  return out;
}

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await cond()) return performance.now() - t0;
    if (performance.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 15));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every partition held by exactly one of `workers` (by owned()), the KV agreeing, shares within 1. */
async function settled(workers: Worker[]): Promise<boolean> {
  const holders = new Map<number, string[]>();
  for (const w of workers) for (const p of w.leases.owned().keys()) holders.set(p, [...(holders.get(p) ?? []), w.id]);
  if (holders.size !== P || [...holders.values()].some((h) => h.length !== 1)) return false;
  const kv = await leasesInKv(workers[0]!.kv);
  for (const w of workers) for (const [p, fence] of w.leases.owned()) if (kv.get(p)?.owner !== w.id || kv.get(p)?.fence !== fence) return false;
  const shares = workers.map((w) => w.leases.owned().size);
  return Math.max(...shares) - Math.min(...shares) <= 1;
}

/** Samples owned() of every worker every few ms: no partition may ever be in two of them at once. */
function watchOverlaps(workers: () => Worker[]): { stop(): string[] } {
  const overlaps: string[] = [];
  const timer = setInterval(() => {
    const seen = new Map<number, string>();
    for (const w of workers()) {
      for (const p of w.leases.owned().keys()) {
        const other = seen.get(p);
        if (other) overlaps.push(`partition ${p}: ${other} and ${w.id}`);
        seen.set(p, w.id);
      }
    }
  }, 5);
  return {
    stop() {
      clearInterval(timer);
      return overlaps;
    },
  };
}

async function stopAll(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.leases.stop()));
}

describe('partition leases in JetStream KV', () => {
  it('three owners, P=8: every partition owned by exactly one, shares within 1', async () => {
    const bucket = newBucket();
    const ttlMs = 800;
    const ws = await Promise.all(['a', 'b', 'c'].map((id) => startWorker(bucket, id, { ttlMs })));
    const overlaps = watchOverlaps(() => ws);
    const took = await waitFor('three owners to settle', () => settled(ws), 5000);
    console.log(`three owners settled in ${Math.round(took)} ms`);
    // And it stays that way over a few renew periods.
    await sleep(ttlMs);
    expect(await settled(ws)).toBe(true);
    const shares = ws.map((w) => w.leases.owned().size).sort();
    expect(shares).toEqual([2, 3, 3]);
    expect(overlaps.stop()).toEqual([]);
    // onAcquire was told every fence owned() reports.
    for (const w of ws) for (const [p, fence] of w.leases.owned()) expect(w.events).toContain(`acquire ${p} ${fence}`);
    await stopAll(ws);
    // A graceful stop leaves every lease free (owner null) with its fence.
    const after = await leasesInKv(ws[0]!.kv);
    expect([...after.values()].every((v) => v.owner === null && v.fence >= 1)).toBe(true);
  });

  it('a dead owner (abandon) loses its partitions to the others within ~2×TTL, with grown fences', async () => {
    const bucket = newBucket();
    const ttlMs = 800;
    const ws = await Promise.all(['a', 'b', 'c'].map((id) => startWorker(bucket, id, { ttlMs })));
    const overlaps = watchOverlaps(() => ws);
    await waitFor('settle', () => settled(ws), 5000);
    const dead = ws[2]!;
    const survivors = ws.slice(0, 2);
    const theirs = new Map(dead.leases.owned());
    expect(theirs.size).toBeGreaterThan(0);

    const eventsBefore = dead.events.length;
    dead.leases.abandon();
    const t0 = performance.now();
    await waitFor('survivors to own everything', () => settled(survivors), 4 * ttlMs);
    const took = performance.now() - t0;
    console.log(`takeover of ${theirs.size} partitions after abandon() in ${Math.round(took)} ms (ttl ${ttlMs} ms)`);
    expect(took).toBeLessThan(2 * ttlMs + 200);

    const kv = await leasesInKv(survivors[0]!.kv);
    for (const [p, oldFence] of theirs) {
      expect(kv.get(p)!.owner).not.toBe(dead.id);
      expect(kv.get(p)!.fence).toBeGreaterThan(oldFence);
      await expect(dead.leases.assertFence(p, oldFence)).rejects.toBeInstanceOf(FencedError);
      // The new owner's fence checks out.
      const owner = survivors.find((w) => w.id === kv.get(p)!.owner)!;
      await expect(owner.leases.assertFence(p, kv.get(p)!.fence)).resolves.toBeUndefined();
      await expect(owner.leases.assertFence(p, oldFence)).rejects.toBeInstanceOf(FencedError);
    }
    expect(dead.leases.owned().size).toBe(0);
    // A process that died calls nothing back.
    expect(dead.events.slice(eventsBefore)).toEqual([]);
    expect(overlaps.stop()).toEqual([]);
    await stopAll(survivors);
  });

  it('graceful stop(): onLose(p, true) is awaited before the release, and the others pick up well under TTL', async () => {
    const bucket = newBucket();
    const ttlMs = 1000;
    const drainMs = 2 * ttlMs; // longer than the TTL: the lease must keep being renewed while draining
    let drainSlowly = false; // only the stop() under test: balance hand-backs and the final cleanup drain at once
    const onLose = async (w: Worker, p: number, voluntary: boolean): Promise<void> => {
      if (!voluntary || !drainSlowly) return;
      const before = (await leasesInKv(w.kv)).get(p);
      w.events.push(`draining ${p} kv-owner=${before?.owner}`);
      await sleep(drainMs);
      const after = (await leasesInKv(w.kv)).get(p);
      w.events.push(`drained ${p} kv-owner=${after?.owner}`);
    };
    const ws = await Promise.all(['a', 'b', 'c'].map((id) => startWorker(bucket, id, { ttlMs, onLose })));
    const overlaps = watchOverlaps(() => ws);
    await waitFor('settle', () => settled(ws), 5000);
    const leaving = ws[2]!;
    const survivors = ws.slice(0, 2);
    const theirs = new Map(leaving.leases.owned());

    drainSlowly = true;
    const eventsBefore = leaving.events.length;
    const stopped = leaving.leases.stop();
    await sleep(drainMs / 2);
    // Mid-drain the leases are still the leaving owner's, in owned() and in the KV.
    const mid = await leasesInKv(leaving.kv);
    for (const [p, fence] of theirs) {
      expect(mid.get(p)).toEqual({ owner: leaving.id, fence });
      expect(leaving.leases.owned().get(p)).toBe(fence);
    }
    await stopped;
    drainSlowly = false;
    const t0 = performance.now();
    for (const p of theirs.keys()) {
      const mine = leaving.events.slice(eventsBefore).filter((e) => new RegExp(`^(lose|draining|drained) ${p}\\b`).test(e));
      expect(mine).toEqual([`lose ${p} true`, `draining ${p} kv-owner=${leaving.id}`, `drained ${p} kv-owner=${leaving.id}`]);
    }
    expect(leaving.leases.owned().size).toBe(0);
    await waitFor('survivors to own everything', () => settled(survivors), 2 * ttlMs);
    const took = performance.now() - t0;
    console.log(`hand-over after stop() in ${Math.round(took)} ms (ttl ${ttlMs} ms)`);
    expect(took).toBeLessThan(0.6 * ttlMs);
    const kv = await leasesInKv(survivors[0]!.kv);
    for (const [p, fence] of theirs) expect(kv.get(p)!.fence).toBe(fence + 1);
    expect(overlaps.stop()).toEqual([]);
    await stopAll(survivors);
  });

  it('a new owner joining gets its fair share: the others hand back', async () => {
    const bucket = newBucket();
    const ttlMs = 800;
    const ws = await Promise.all(['a', 'b'].map((id) => startWorker(bucket, id, { ttlMs })));
    let all = ws;
    const overlaps = watchOverlaps(() => all);
    await waitFor('two owners to settle', () => settled(ws), 5000);
    expect(ws.map((w) => w.leases.owned().size)).toEqual([4, 4]);
    const before = await leasesInKv(ws[0]!.kv);

    const eventsBefore = ws.map((w) => w.events.length);
    const t0 = performance.now();
    const c = await startWorker(bucket, 'c', { ttlMs });
    all = [...ws, c];
    await waitFor('the newcomer to get its share', () => settled(all), 5 * ttlMs);
    console.log(`newcomer got its share in ${Math.round(performance.now() - t0)} ms (ttl ${ttlMs} ms)`);
    expect(all.map((w) => w.leases.owned().size).sort()).toEqual([2, 3, 3]);
    for (const [p, fence] of c.leases.owned()) expect(fence).toBeGreaterThan(before.get(p)!.fence);
    // The hand-back was voluntary.
    const handedBack = ws.flatMap((w, i) => w.events.slice(eventsBefore[i]).filter((e) => e.startsWith('lose')));
    expect(handedBack.length).toBe(c.leases.owned().size);
    expect(handedBack.every((e) => e.endsWith('true'))).toBe(true);
    expect(overlaps.stop()).toEqual([]);
    await stopAll(all);
  });

  it('partitionOf is stable and spreads project ids evenly', () => {
    expect(partitionOf('proj-1', 8)).toBe(partitionOf('proj-1', 8));
    // Pinned: the mapping must never change between versions (it routes jobs already queued).
    expect([partitionOf('proj-1', 8), partitionOf('acme/web', 8), partitionOf('', 8), partitionOf('proj-1', 1)]).toEqual([0, 6, 2, 0]);
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 1000; i++) counts[partitionOf(`project-${i}`, 8)]!++;
    // 125 expected per partition; a binomial sd of ~10.5: 4 sd either way.
    for (const n of counts) {
      expect(n).toBeGreaterThan(83);
      expect(n).toBeLessThan(167);
    }
    expect(() => partitionOf('x', 0)).toThrow(RangeError);
  });

  it('an owner cut off from NATS drops its partitions within the TTL, nothing unhandled, and recovers after the restart', async () => {
    const own = await startNatsServer();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const bucket = newBucket();
      const ttlMs = 800;
      const ws = await Promise.all(['a', 'b'].map((id) => startWorker(bucket, id, { ttlMs, url: own.url })));
      const overlaps = watchOverlaps(() => ws);
      await waitFor('settle', () => settled(ws), 5000);
      const before = await leasesInKv(ws[0]!.kv);

      const t0 = performance.now();
      await own.stop();
      await Promise.all(ws.map((w) => waitFor(`${w.id} to drop its partitions`, () => w.leases.owned().size === 0, 2 * ttlMs)));
      const took = performance.now() - t0;
      console.log(`self-expiry: both owners had dropped their partitions ${Math.round(took)} ms after the server was told to stop (ttl ${ttlMs} ms)`);
      expect(took).toBeLessThan(ttlMs);
      // onLose(p, false) follows from the watchdog (owned() itself filters by the clock, at once).
      await waitFor('onLose(p, false) for each', () => ws.every((w) => [...before].every(([p, v]) => v.owner !== w.id || w.events.includes(`lose ${p} false`))), ttlMs / 4);
      for (const w of ws) await expect(w.leases.assertFence(0, before.get(0)!.fence)).rejects.toBeInstanceOf(FencedError);
      // The loop keeps failing against a dead server for a while without throwing anywhere.
      await sleep(1500);

      const t1 = performance.now();
      await own.start();
      await waitFor('recovery after the restart', () => settled(ws), 10_000);
      console.log(`recovered ${Math.round(performance.now() - t1)} ms after the restart`);
      const after = await leasesInKv(ws[0]!.kv);
      for (let p = 0; p < P; p++) expect(after.get(p)!.fence).toBeGreaterThan(before.get(p)!.fence);
      for (const w of ws) for (const [p, fence] of w.leases.owned()) await expect(w.leases.assertFence(p, fence)).resolves.toBeUndefined();
      expect(overlaps.stop()).toEqual([]);
      await stopAll(ws);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await own.close();
    }
  });
});

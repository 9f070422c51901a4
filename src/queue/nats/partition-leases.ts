// Partition ownership for the NATS queue: jobs go to P partition subjects by a hash of the project,
// and each partition is worked by exactly one process at a time, through a lease in a JetStream KV
// bucket. Keys: `p.<n>` → {"owner", "fence"} (owner null: handed back, free), `w.<base64url(ownerId)>`
// → {"owner"}: presence, counted to size each worker's fair share.
//
// Why it is built this way:
//  - Every write to a lease is a compare-and-set on the key's revision (`kv.create` for an absent
//    key, `kv.update(key, value, revision)` otherwise), so of two processes racing for a partition
//    exactly one wins, whatever their timing.
//  - No wall clock is compared across processes (clocks skew, jump, get NTP-slewed). A contender
//    only trusts its own monotonic clock: it takes a lease over when it has seen the key's revision
//    unchanged for `ttlMs` (measured from the moment its read came back, which is after the write).
//    The owner, on its side, stops acting on a partition once `2/3 ttlMs` have passed since it *sent*
//    its last successful renewal (which is before the write). So the zombie stops at least ttl/3
//    before anyone may take over, even when the owner is cut off from NATS and cannot know.
//  - The margin does not cover a process that is paused mid-commit (GC pause, SIGSTOP, a slow
//    disk): that is what the fence is for. It grows on every change of owner; the owner checks it
//    against the KV (`assertFence`) right before committing, and the sink can store it with what it
//    wrote, so a late write from a former owner is recognized and refused.
//  - The lease record is never deleted, only set to owner null on release, so the fence keeps
//    growing across release/claim cycles.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { JetStreamClient, KV, KvEntry, KvOptions } from 'nats';
import type { Logger } from 'pino';
import { openKv, withTimeout } from './streams.js';

export interface PartitionLeaseOptions {
  /** A JetStream KV bucket (history 1 is fine) created by the caller: see `openLeaseBucket`. */
  kv: KV;
  /** P, the number of partitions. */
  partitions: number;
  /** Unique per process (e.g. hostname:pid:random). */
  ownerId: string;
  /** A lease not renewed for this long may be taken over. */
  ttlMs: number;
  /** Default ttlMs / 3. */
  renewEveryMs?: number;
  /** Called when this process gains partition p; `fence` is the lease's fencing number (grows on every change of owner). */
  onAcquire(p: number, fence: number): void | Promise<void>;
  /** Called when p is lost or handed back. `voluntary` true: awaited before the lease is released (the owner drains its in-flight work first). */
  onLose(p: number, voluntary: boolean): void | Promise<void>;
  logger?: Logger;
}

/** Thrown by `assertFence` when this process may no longer commit for the partition with that fence. */
export class FencedError extends Error {
  readonly partition: number | undefined;
  readonly fence: number | undefined;
  constructor(message: string, options: { partition?: number; fence?: number; cause?: unknown } = {}) {
    super(message, 'cause' in options ? { cause: options.cause } : undefined);
    this.name = 'FencedError';
    this.partition = options.partition;
    this.fence = options.fence;
  }
}

/** The partition of a project: the first 4 bytes of sha256(projectId), big-endian, mod P. Stable across processes and versions. */
export function partitionOf(projectId: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  return createHash('sha256').update(projectId, 'utf8').digest().readUInt32BE(0) % partitions;
}

/** Opens (creating when absent) the KV bucket the leases live in: history 1, no per-key TTL. */
export function openLeaseBucket(js: JetStreamClient, name: string, opts: Partial<KvOptions> = {}): Promise<KV> {
  return openKv(js, name, { history: 1, ...opts });
}

interface LeaseValue {
  owner: string | null;
  fence: number;
}

/** A lease this process holds. */
interface Held {
  p: number;
  fence: number;
  /** The key's revision as of our last write. */
  rev: number;
  /** performance.now() when the last successful renewal (or the claim) was sent. */
  okSentAt: number;
  /** Dropped (lost or released): every late result about it is ignored. */
  gone: boolean;
  /** Being handed back: onLose(p, true) running or done, release pending. */
  handingBack: boolean;
  /** onLose(p, true) has returned; the release may be (re)tried. */
  drained: boolean;
  /** A KV write for this lease is in flight (writes to one key never overlap). */
  busy: boolean;
  /** onAcquire(p, fence), settled. */
  acquired: Promise<void>;
}

/** What this process has seen of a key: a revision, and since when (its own monotonic clock). */
interface Seen {
  rev: number;
  since: number;
}

const enc = new TextEncoder();
const NOTHING = Promise.resolve();

function isCasError(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: unknown } | null;
  return e?.api_error?.err_code === 10071 || (typeof e?.message === 'string' && /wrong last sequence/i.test(e.message));
}

function parseLease(entry: KvEntry | null): LeaseValue | null {
  if (!entry || entry.operation !== 'PUT') return null;
  try {
    const v = entry.json<Partial<LeaseValue>>();
    if (typeof v.fence !== 'number' || !Number.isFinite(v.fence)) return null;
    return { owner: typeof v.owner === 'string' ? v.owner : null, fence: v.fence };
  } catch {
    return null;
  }
}

function leaseKey(p: number): string {
  return `p.${p}`;
}

type State = 'new' | 'running' | 'stopping' | 'stopped' | 'abandoned';

export class PartitionLeases {
  private readonly kv: KV;
  private readonly partitions: number;
  private readonly ownerId: string;
  private readonly ttlMs: number;
  private readonly renewEveryMs: number;
  /** The owner stops acting on a partition this long after sending its last successful renewal. */
  private readonly selfExpiryMs: number;
  private readonly onAcquireCb: PartitionLeaseOptions['onAcquire'];
  private readonly onLoseCb: PartitionLeaseOptions['onLose'];
  private readonly log: Logger | undefined;
  private readonly presenceKey: string;
  /** Where this owner starts looking for partitions to claim: spreads contenders over different keys. */
  private readonly offset: number;

  private state: State = 'new';
  private readonly held = new Map<number, Held>();
  private readonly seenLeases = new Map<number, Seen>();
  private readonly seenPresence = new Map<string, Seen>();
  /** The highest fence seen per partition: a key deleted behind our back still restarts above it. */
  private readonly lastFence = new Map<number, number>();
  /** Per partition, the callbacks in flight: the next onAcquire of p runs after the previous onLose of p. */
  private readonly callbackTail = new Map<number, Promise<void>>();
  private loopTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = NOTHING;
  private stopping: Promise<void> | undefined;
  private balancing = false;
  private halted = false;
  private presenceBusy = false;
  private lastErr = { message: '', at: -Infinity };

  constructor(opts: PartitionLeaseOptions) {
    if (!Number.isInteger(opts.partitions) || opts.partitions < 1) throw new RangeError(`partitions must be a positive integer, got ${opts.partitions}`);
    if (!(opts.ttlMs > 0)) throw new RangeError(`ttlMs must be positive, got ${opts.ttlMs}`);
    if (!opts.ownerId) throw new RangeError('ownerId must not be empty');
    this.kv = opts.kv;
    this.partitions = opts.partitions;
    this.ownerId = opts.ownerId;
    this.ttlMs = opts.ttlMs;
    this.renewEveryMs = opts.renewEveryMs ?? opts.ttlMs / 3;
    if (!(this.renewEveryMs > 0)) throw new RangeError(`renewEveryMs must be positive, got ${this.renewEveryMs}`);
    if (this.renewEveryMs * 2 > this.ttlMs) opts.logger?.warn({ renewEveryMs: this.renewEveryMs, ttlMs: opts.ttlMs }, 'partition leases: renewing less often than ttl/2 makes every missed renewal a lost partition');
    this.selfExpiryMs = (this.ttlMs * 2) / 3;
    this.onAcquireCb = (p, fence) => opts.onAcquire(p, fence);
    this.onLoseCb = (p, voluntary) => opts.onLose(p, voluntary);
    this.log = opts.logger?.child({ component: 'partition-leases', owner: opts.ownerId });
    this.presenceKey = `w.${Buffer.from(opts.ownerId, 'utf8').toString('base64url')}`;
    this.offset = partitionOf(opts.ownerId, opts.partitions);
  }

  /** Announces presence, claims a fair share (as far as it can see the others already), starts the renew/balance loop. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`PartitionLeases.start: already ${this.state}`);
    this.state = 'running';
    this.watchdog = setInterval(() => this.expire(), Math.max(10, Math.floor(this.ttlMs / 12)));
    this.watchdog.unref?.();
    await this.runTick();
  }

  /** partition -> fence, for the partitions this process may still act on (held, renewed within 2/3 ttl). */
  owned(): ReadonlyMap<number, number> {
    const now = performance.now();
    const out = new Map<number, number>();
    for (const h of [...this.held.values()].sort((a, b) => a.p - b.p)) {
      if (!h.gone && now - h.okSentAt < this.selfExpiryMs) out.set(h.p, h.fence);
    }
    return out;
  }

  partitionOf(projectId: string): number {
    return partitionOf(projectId, this.partitions);
  }

  /**
   * Right before a commit: throws FencedError unless this process still holds p with that fence,
   * both by its own account (renewed within 2/3 ttl) and in the KV. A KV that cannot be read counts
   * as not holding (FencedError with the read error as `cause`).
   */
  async assertFence(p: number, fence: number): Promise<void> {
    if (this.owned().get(p) !== fence) throw new FencedError(`partition ${p}: fence ${fence} is not held by ${this.ownerId}`, { partition: p, fence });
    let entry: KvEntry | null;
    try {
      entry = await this.kv.get(leaseKey(p));
    } catch (err) {
      throw new FencedError(`partition ${p}: could not read the lease to check fence ${fence}`, { partition: p, fence, cause: err });
    }
    const v = parseLease(entry);
    if (!v || v.owner !== this.ownerId || v.fence !== fence) {
      throw new FencedError(`partition ${p}: fence ${fence} of ${this.ownerId} superseded (now ${v ? `${v.owner ?? 'free'} fence ${v.fence}` : 'absent'})`, { partition: p, fence });
    }
    // It may have expired locally while the read was in flight.
    if (this.owned().get(p) !== fence) throw new FencedError(`partition ${p}: fence ${fence} expired while being checked`, { partition: p, fence });
  }

  /** Graceful: removes presence, calls onLose(p, true) for each partition and awaits it, releases each lease (CAS), stops the loop. */
  stop(): Promise<void> {
    if (this.state === 'new') this.state = 'stopped';
    if (this.state === 'running') this.stopping = this.shutDown();
    return this.stopping ?? NOTHING;
  }

  private async shutDown(): Promise<void> {
    this.state = 'stopping'; // the loop keeps renewing (drains may take long) but no longer claims or balances
    await this.ticking;
    // Presence first: the others raise their share right away and pick up what is released below.
    await this.kv.delete(this.presenceKey).catch((err: unknown) => this.logError('removing presence', err));
    const handovers = [...this.held.values()].filter((h) => !h.gone).map((h) => this.handBack(h));
    await Promise.all(handovers);
    // Drained earlier (a balance hand-back) but whose release failed: one more try.
    for (const h of [...this.held.values()]) if (h.drained && !h.gone) await this.release(h);
    this.halt();
    await this.ticking;
    await Promise.all(this.callbackTail.values());
    // Leases whose release failed (NATS unreachable) are left to expire: nobody renews them any more.
    for (const h of this.held.values()) h.gone = true;
    this.held.clear();
    this.state = 'stopped';
  }

  /** For tests: stops renewing and balancing without releasing anything or calling back, as if the process died (kill -9). */
  abandon(): void {
    if (this.state === 'stopped' || this.state === 'abandoned') return;
    this.state = 'abandoned';
    this.halt();
  }

  // --- the loop -------------------------------------------------------------------------------

  private halt(): void {
    this.halted = true;
    clearTimeout(this.loopTimer);
    clearInterval(this.watchdog);
    this.loopTimer = undefined;
    this.watchdog = undefined;
  }

  private get live(): boolean {
    return this.state === 'running' || this.state === 'stopping';
  }

  private runTick(): Promise<void> {
    const tick = this.tick();
    this.ticking = tick;
    return tick;
  }

  private async tick(): Promise<void> {
    const startedAt = performance.now();
    try {
      await this.renewAll();
      if (this.state === 'running' && !this.balancing) {
        // The flag follows the balance itself, not the timeout: two balances never run at once.
        this.balancing = true;
        const balancing = this.balance().finally(() => {
          this.balancing = false;
        });
        await withTimeout(balancing, Math.max(2 * this.ttlMs, 2000), 'balancing partition leases');
      }
      this.retryReleases();
    } catch (err) {
      this.logError('renew/balance', err);
    }
    this.expire();
    if (!this.live || this.halted) return;
    const delay = Math.max(0, this.renewEveryMs - (performance.now() - startedAt));
    this.loopTimer = setTimeout(() => void this.runTick(), delay);
  }

  private logError(what: string, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    const now = performance.now();
    // One warning per distinct error per 5 s: a NATS outage would otherwise log every tick.
    if (message !== this.lastErr.message || now - this.lastErr.at > 5000) {
      this.lastErr = { message, at: now };
      this.log?.warn({ err }, `partition leases: ${what} failed`);
    } else {
      this.log?.debug({ err }, `partition leases: ${what} failed`);
    }
  }

  /** Drops every lease not renewed successfully for 2/3 ttl: a zombie stops before anyone may take over. */
  private expire(): void {
    if (!this.live) return;
    const now = performance.now();
    for (const h of this.held.values()) {
      if (!h.gone && now - h.okSentAt >= this.selfExpiryMs) {
        this.log?.warn({ partition: h.p, fence: h.fence, sinceRenewMs: Math.round(now - h.okSentAt) }, 'partition lease not renewed in time: giving it up');
        this.lose(h);
      }
    }
  }

  private async renewAll(): Promise<void> {
    const work: Promise<void>[] = [];
    if (this.state === 'running' && !this.presenceBusy) {
      this.presenceBusy = true;
      work.push(
        this.kv
          .put(this.presenceKey, enc.encode(JSON.stringify({ owner: this.ownerId })))
          .then(
            () => undefined,
            (err: unknown) => this.logError('presence renewal', err),
          )
          .finally(() => {
            this.presenceBusy = false;
          }),
      );
    }
    for (const h of this.held.values()) {
      if (!h.gone && !h.busy) work.push(this.write(h, () => this.renew(h)).catch((err: unknown) => this.logError(`renewing partition ${h.p}`, err)));
    }
    await Promise.all(work);
  }

  /** Runs a KV write for a held lease, never two at once for one key. */
  private async write(h: Held, fn: () => Promise<void>): Promise<void> {
    while (h.busy) await new Promise((r) => setTimeout(r, 5));
    h.busy = true;
    try {
      await fn();
    } finally {
      h.busy = false;
    }
  }

  private async renew(h: Held, retried = false): Promise<void> {
    if (h.gone || !this.live) return;
    const sentAt = performance.now();
    try {
      const rev = await this.kv.update(leaseKey(h.p), this.encode(h.fence), h.rev);
      if (h.gone || !this.live) return; // dropped meanwhile: the next balance sees owner == us and re-claims or releases
      h.rev = rev;
      h.okSentAt = Math.max(h.okSentAt, sentAt);
      this.seenLeases.set(h.p, { rev, since: performance.now() });
    } catch (err) {
      if (!isCasError(err) || h.gone || !this.live) throw err;
      // The revision moved. Either someone took the lease over, or an earlier write of ours timed out
      // on the way back but did land: then the key still has our owner and fence.
      const entry = await this.kv.get(leaseKey(h.p));
      const v = parseLease(entry);
      if (entry && v && v.owner === this.ownerId && v.fence === h.fence && !retried) {
        h.rev = entry.revision;
        return this.renew(h, true);
      }
      if (v) this.noteFence(h.p, v.fence);
      this.log?.warn({ partition: h.p, fence: h.fence, now: v }, 'partition lease taken over');
      this.lose(h);
    }
  }

  /** Involuntary loss: out of owned() now, onLose(p, false) once onAcquire has settled. */
  private lose(h: Held): void {
    if (h.gone) return;
    h.gone = true;
    if (this.held.get(h.p) === h) this.held.delete(h.p);
    if (this.state === 'abandoned') return;
    this.chainCallback(
      h.p,
      h.acquired.then(() => this.onLoseCb(h.p, false)).catch((err: unknown) => this.log?.error({ err, partition: h.p }, 'onLose failed')),
    );
  }

  private chainCallback(p: number, promise: Promise<unknown>): void {
    const tail = this.callbackTail.get(p) ?? NOTHING;
    const next = Promise.all([tail, promise]).then(() => undefined);
    this.callbackTail.set(p, next);
    void next.then(() => {
      if (this.callbackTail.get(p) === next) this.callbackTail.delete(p);
    });
  }

  /** Voluntary hand-back: onLose(p, true) awaited (the lease still renewed meanwhile), then the release. */
  private handBack(h: Held): Promise<void> {
    if (h.handingBack) return this.callbackTail.get(h.p) ?? NOTHING;
    h.handingBack = true;
    const done = h.acquired
      .then(() => this.onLoseCb(h.p, true))
      .catch((err: unknown) => this.log?.error({ err, partition: h.p }, 'onLose (voluntary) failed'))
      .then(() => {
        h.drained = true;
        return this.release(h);
      });
    this.chainCallback(h.p, done);
    return done;
  }

  /** Sets the lease free (owner null, same fence) by CAS. A failure leaves it held, retried next tick. */
  private async release(h: Held): Promise<void> {
    if (h.gone || !this.live) return;
    await this.write(h, async () => {
      if (h.gone || !this.live) return;
      try {
        const rev = await this.kv.update(leaseKey(h.p), this.encode(h.fence, null), h.rev);
        this.seenLeases.set(h.p, { rev, since: performance.now() });
        h.gone = true;
        if (this.held.get(h.p) === h) this.held.delete(h.p);
        this.log?.info({ partition: h.p, fence: h.fence }, 'partition handed back');
      } catch (err) {
        if (isCasError(err)) {
          // Taken over while draining (we could not renew in time): it is not ours to release.
          h.gone = true;
          if (this.held.get(h.p) === h) this.held.delete(h.p);
          return;
        }
        this.logError(`releasing partition ${h.p}`, err);
      }
    });
  }

  private retryReleases(): void {
    for (const h of this.held.values()) {
      if (h.drained && !h.gone && !h.busy) void this.release(h);
    }
  }

  private encode(fence: number, owner: string | null = this.ownerId): Uint8Array {
    return enc.encode(JSON.stringify({ owner, fence } satisfies LeaseValue));
  }

  private noteFence(p: number, fence: number): void {
    if (fence > (this.lastFence.get(p) ?? 0)) this.lastFence.set(p, fence);
  }

  /** How long this process has seen `rev` unchanged on a key, by its own clock (0 on a new revision). */
  private observe<K>(seen: Map<K, Seen>, key: K, rev: number, at: number): number {
    const s = seen.get(key);
    if (!s || s.rev !== rev) {
      seen.set(key, { rev, since: at });
      return 0;
    }
    return at - s.since;
  }

  /** The live workers (fresh presence), this one included; stale presence keys are deleted (CAS). */
  private async liveOwners(): Promise<Set<string>> {
    const keys: string[] = [];
    const iter = await this.kv.keys('w.*');
    await withTimeout(
      (async () => {
        for await (const k of iter) keys.push(k);
      })(),
      Math.max(this.ttlMs, 1000),
      'listing presence keys',
    );
    const entries = await Promise.all(keys.map((k) => this.kv.get(k)));
    const at = performance.now();
    const live = new Set<string>([this.ownerId]);
    const present = new Set<string>();
    for (const [i, entry] of entries.entries()) {
      const key = keys[i]!;
      if (!entry || entry.operation !== 'PUT' || key === this.presenceKey) continue;
      present.add(key);
      let owner: string | undefined;
      try {
        owner = entry.json<{ owner?: string }>().owner;
      } catch {
        owner = undefined;
      }
      const unchangedFor = this.observe(this.seenPresence, key, entry.revision, at);
      if (unchangedFor < this.ttlMs) {
        if (owner) live.add(owner);
      } else {
        this.kv.delete(key, { previousSeq: entry.revision }).catch(() => undefined); // a CAS too: a worker that came back keeps its key
        this.seenPresence.delete(key);
      }
    }
    for (const key of this.seenPresence.keys()) if (!present.has(key)) this.seenPresence.delete(key);
    return live;
  }

  private async balance(): Promise<void> {
    const live = await this.liveOwners();
    if (this.state !== 'running') return;
    const P = this.partitions;
    const entries = await Promise.all(Array.from({ length: P }, (_, p) => this.kv.get(leaseKey(p))));
    if (this.state !== 'running') return;
    const at = performance.now();

    type Claimable = { p: number; rev: number | null; fence: number };
    const free: Claimable[] = [];
    const orphans: Claimable[] = []; // owner == us in the KV, but not held here (dropped after a lost renewal, or a restart with the same ownerId)
    const stale: Claimable[] = [];
    const counts = new Map<string, number>();
    for (let p = 0; p < P; p++) {
      const entry = entries[p] ?? null;
      const v = parseLease(entry);
      if (v) this.noteFence(p, v.fence);
      if (!entry || !v) {
        // Absent, deleted or unreadable: created anew (kv.create also takes over a deleted key), above any fence seen.
        this.seenLeases.delete(p);
        if (!this.held.has(p)) free.push({ p, rev: null, fence: this.lastFence.get(p) ?? 0 });
        continue;
      }
      const unchangedFor = this.observe(this.seenLeases, p, entry.revision, at);
      if (this.held.has(p)) continue;
      if (v.owner === null) free.push({ p, rev: entry.revision, fence: v.fence });
      else if (v.owner === this.ownerId) orphans.push({ p, rev: entry.revision, fence: v.fence });
      else if (unchangedFor >= this.ttlMs) stale.push({ p, rev: entry.revision, fence: v.fence });
      else counts.set(v.owner, (counts.get(v.owner) ?? 0) + 1);
    }

    const target = Math.ceil(P / live.size);
    const mine = [...this.held.values()].filter((h) => !h.gone && !h.handingBack);
    const rotate = (list: Claimable[]): Claimable[] => list.sort((a, b) => ((a.p - this.offset + P) % P) - ((b.p - this.offset + P) % P));

    if (mine.length > target) {
      // Hand back only as many as the live workers below their share can take.
      let deficit = 0;
      for (const owner of live) if (owner !== this.ownerId) deficit += Math.max(0, target - (counts.get(owner) ?? 0));
      const extra = Math.min(mine.length - target, deficit);
      if (extra > 0) {
        const giveUp = mine.sort((a, b) => b.p - a.p).slice(0, extra);
        this.log?.info({ partitions: giveUp.map((h) => h.p), target, live: live.size }, 'handing partitions back for balance');
        for (const h of giveUp) void this.handBack(h);
      }
    }

    let want = target - mine.length;
    for (const c of [...rotate(orphans), ...rotate(free), ...rotate(stale)]) {
      if (this.state !== 'running') return;
      if (want <= 0) break;
      if (await this.claim(c)) want--;
    }
    // Our own leftovers we do not want: set them free now instead of letting the others wait a ttl.
    if (want <= 0) {
      for (const o of orphans) {
        if (this.held.has(o.p) || this.state !== 'running') continue;
        await this.kv.update(leaseKey(o.p), this.encode(o.fence, null), o.rev!).catch((err: unknown) => {
          if (!isCasError(err)) this.logError(`releasing leftover partition ${o.p}`, err);
        });
      }
    }
  }

  /** One CAS: a new lease with fence + 1. False when someone else won the race. */
  private async claim(c: { p: number; rev: number | null; fence: number }): Promise<boolean> {
    const fence = c.fence + 1;
    const sentAt = performance.now();
    let rev: number;
    try {
      rev = c.rev === null ? await this.kv.create(leaseKey(c.p), this.encode(fence)) : await this.kv.update(leaseKey(c.p), this.encode(fence), c.rev);
    } catch (err) {
      if (isCasError(err)) return false;
      throw err;
    }
    this.noteFence(c.p, fence);
    this.seenLeases.set(c.p, { rev, since: performance.now() });
    if (this.state !== 'running') {
      // stop() or abandon() came while the claim was in flight: a stopping owner gives it straight back.
      if (this.state === 'stopping') await this.kv.update(leaseKey(c.p), this.encode(fence, null), rev).catch(() => undefined);
      return false;
    }
    const h: Held = { p: c.p, fence, rev, okSentAt: sentAt, gone: false, handingBack: false, drained: false, busy: false, acquired: NOTHING };
    const previous = this.callbackTail.get(c.p) ?? NOTHING;
    h.acquired = previous.then(() => this.onAcquireCb(c.p, fence)).then(
      () => undefined,
      (err: unknown) => this.log?.error({ err, partition: c.p, fence }, 'onAcquire failed'),
    );
    this.chainCallback(c.p, h.acquired);
    this.held.set(c.p, h);
    this.log?.info({ partition: c.p, fence }, 'partition acquired');
    return true;
  }
}

// The queue's storage on disk: one LMDB environment under the data dir, owned by one process. A
// table is an LMDB database; a write batch is one LMDB transaction.
import { mkdirSync, statfsSync } from 'node:fs';
import { setImmediate as turn } from 'node:timers/promises';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { DomainEvent } from '../domain/events.js';
import { isOutOfSpace } from '../domain/storage-errors.js';
import type { QueueStorage, StorageTables, StorageWrite, TableName, WriteOptions } from './storage.js';
import type { OutboxEntry } from './types.js';

const DB_NAMES: Record<TableName, string> = {
  jobs: 'jobs',
  receipts: 'idempotency',
  attempts: 'attempts',
  plans: 'plans',
  deadPlans: 'dead-plans',
  dead: 'dead',
  firstErrors: 'first-errors',
  meta: 'meta',
};

const OUTBOX_SEQ = 'outbox.seq';

export class LmdbStorage implements QueueStorage {
  private readonly root: RootDatabase;
  private readonly dbs: { [T in TableName]: Database<StorageTables[T], string> };
  private readonly outbox: Database<DomainEvent, number>;

  constructor(private readonly path: string) {
    mkdirSync(path, { recursive: true });
    // overlappingSync stays on (fast group commits); a durable write awaits `flushed`.
    // JSON values: LMDB's default msgpack with shared structures is slow for records of varying shape.
    this.root = open({ path, maxDbs: 16, mapSize: 64 * 1024 * 1024 * 1024 });
    observeCommitFailures();
    const json = <T>(name: string): Database<T, string> => this.root.openDB<T, string>({ name, encoding: 'json' });
    this.dbs = {
      // Job records as JSON bytes: payloads vary in shape, which makes LMDB's shared-structure msgpack slow.
      // LZ4-compressed on lmdb's writer side (records over 1,000 bytes): the queue's pages are what a
      // backlog writes, syncs and maps back in when the pipeline reads it. A record stored before
      // compression reads as it is: lmdb only decompresses values whose first byte is ≥ 250, and JSON
      // starts with `{`.
      jobs: this.root.openDB<Uint8Array, string>({ name: DB_NAMES.jobs, encoding: 'binary', compression: true }),
      receipts: json(DB_NAMES.receipts),
      attempts: json(DB_NAMES.attempts),
      plans: json(DB_NAMES.plans),
      deadPlans: json(DB_NAMES.deadPlans),
      dead: json(DB_NAMES.dead),
      firstErrors: json(DB_NAMES.firstErrors),
      meta: json(DB_NAMES.meta),
    };
    this.outbox = this.root.openDB<DomainEvent, number>({ name: 'outbox', keyEncoding: 'uint32', encoding: 'json' });
  }

  private db<T extends TableName>(table: T): Database<StorageTables[T], string> {
    return this.dbs[table];
  }

  get<T extends TableName>(table: T, key: string): StorageTables[T] | undefined {
    return table === 'jobs' ? (this.dbs.jobs.getBinary(key) as StorageTables[T] | undefined) : this.db(table).get(key);
  }

  has(table: TableName, key: string): boolean {
    return this.db(table).doesExist(key);
  }

  *keys(table: TableName, opts: { after?: string; limit?: number; reverse?: boolean } = {}): Iterable<string> {
    const { after, limit, reverse } = opts;
    let left = limit ?? Number.POSITIVE_INFINITY;
    // `start` is inclusive: the cursor's own key is skipped.
    for (const key of this.db(table).getKeys({ ...(after !== undefined ? { start: after } : {}), ...(reverse ? { reverse: true } : {}) })) {
      if (left <= 0) return;
      if (key === after) continue;
      left--;
      yield key;
    }
  }

  *entries<T extends TableName>(table: T, opts: { after?: string; limit?: number } = {}): Iterable<[string, StorageTables[T]]> {
    const { after, limit } = opts;
    let left = limit ?? Number.POSITIVE_INFINITY;
    for (const { key, value } of this.db(table).getRange(after !== undefined ? { start: after } : {})) {
      if (left <= 0) return;
      if (key === after) continue;
      left--;
      yield [key, value];
    }
  }

  count(table: TableName): number {
    return this.db(table).getCount();
  }

  async write(body: (w: StorageWrite) => void, opts: WriteOptions = {}): Promise<void> {
    if (opts.blind) return this.writeBlind(body, opts);
    const w: StorageWrite = {
      put: (table, key, value) => void this.db(table).put(key, value),
      remove: (table, key) => void this.db(table).remove(key),
      appendOutbox: (events) => {
        let seq = this.dbs.meta.get(OUTBOX_SEQ) ?? 0;
        for (const event of events) void this.outbox.put(++seq, event);
        void this.dbs.meta.put(OUTBOX_SEQ, seq);
      },
      trimOutbox: (seq) => {
        for (const key of this.outbox.getKeys({ end: seq + 1 })) void this.outbox.remove(key);
      },
    };
    await settleWrite(this.root.transaction(() => body(w)));
    if (opts.durable) await this.root.flushed;
  }

  /**
   * Single operations instead of a transaction callback: lmdb commits every operation issued in one
   * event turn in one transaction, so the batch stays atomic, and its writer thread commits it
   * without waiting for this thread to run a callback. Under saturating ingest that wait was an
   * event-loop turn of a busy thread for every acknowledgement.
   */
  private async writeBlind(body: (w: StorageWrite) => void, opts: WriteOptions): Promise<void> {
    // Collected first and issued together: a body that throws writes nothing.
    const ops: (() => Promise<boolean>)[] = [];
    body({
      put: (table, key, value) => void ops.push(() => this.db(table).put(key, value)),
      remove: (table, key) => void ops.push(() => this.db(table).remove(key)),
      appendOutbox: () => {
        throw new Error('a blind write cannot append to the outbox (it reads the sequence)');
      },
      trimOutbox: () => {
        throw new Error('a blind write cannot trim the outbox (it reads its keys)');
      },
    });
    await settleWrite(Promise.all(ops.map((op) => op())));
    if (opts.durable) await this.root.flushed;
  }

  readOutbox(afterSeq: number, limit: number): OutboxEntry[] {
    return [...this.outbox.getRange({ start: afterSeq + 1, limit })].map((e) => ({ seq: e.key, event: e.value }));
  }

  /** Pages of the jobs and dead databases. */
  usedBytes(): number {
    let bytes = 0;
    for (const db of [this.dbs.jobs, this.dbs.dead] as Database<unknown, string>[]) {
      const s = db.getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
      bytes += (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize;
    }
    return bytes;
  }

  /**
   * lmdb writes pages through its memory map, so a full disk surfaces as EIO about as often as
   * ENOSPC: when the disk has no room for the batch, an EIO is called what it is.
   */
  explainWriteError(err: unknown, bytes: number): unknown {
    if (isOutOfSpace(err)) return err;
    try {
      const s = statfsSync(this.path);
      const free = s.bavail * s.bsize;
      if (free >= bytes + 1024 * 1024) return err;
      const message = err instanceof Error ? err.message : String(err);
      return Object.assign(new Error(`${message} (the disk is full: ${free} bytes free)`, { cause: err }), { code: 'ENOSPC' });
    } catch {
      return err;
    }
  }

  async close(): Promise<void> {
    await this.root.flushed;
    await this.root.close();
  }
}

/** lmdb's error for a failed commit: every write of that commit is rejected with one. */
function isCommitFailure(err: unknown): err is Error & { commitError: Promise<unknown> } {
  return err instanceof Error && (err as { commitError?: unknown }).commitError instanceof Promise;
}

let commitFailuresObserved = false;

/**
 * lmdb's event-turn batching rejects one more promise per failed commit, created inside lmdb where
 * no caller can observe it: as an unhandled rejection it would kill the process on a full disk. The
 * writes of that commit are rejected too, and the storage handles those (settleWrite), so this
 * one is dropped; any other unhandled rejection is rethrown, which ends the process as before.
 */
function observeCommitFailures(): void {
  if (commitFailuresObserved) return;
  commitFailuresObserved = true;
  process.on('unhandledRejection', (reason) => {
    if (!isCommitFailure(reason)) throw reason;
    reason.commitError.catch(() => {});
  });
}

/**
 * A failed commit rejects its writes with lmdb's "Commit failed" and also rejects a `commitError`
 * promise shared by them: observed here, and its cause (ENOSPC, …) rethrown, so callers and
 * isOutOfSpace see why.
 */
async function settleWrite<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (!isCommitFailure(err)) throw err;
    const commitError = err.commitError;
    // Rejected in the same lmdb callback as `write`, so settled by now; the race only guards a change in lmdb.
    const cause = await Promise.race([commitError.then(() => undefined, (e: unknown) => e), turn().then(() => undefined)]);
    if (!(cause instanceof Error)) throw err;
    throw Object.assign(new Error(`queue write failed: ${cause.message}`, { cause }), { code: (cause as { code?: unknown }).code });
  }
}

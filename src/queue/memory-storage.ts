// The queue's storage in memory: what the contract suite runs the engine on, apart from any
// database. "Durable" here means the object outlives the queue: reopening the engine on the same
// MemoryStorage is a restart (the in-memory sets are rebuilt from it, as from LMDB after a crash).
// A write batch is applied whole or not at all; values are copied in and out, as a database would.
import type { DomainEvent } from '../domain/events.js';
import type { QueueStorage, StorageTables, StorageWrite, TableName } from './storage.js';
import type { OutboxEntry } from './types.js';

type Op = { kind: 'put'; table: TableName; key: string; value: unknown } | { kind: 'remove'; table: TableName; key: string } | { kind: 'append'; events: DomainEvent[] } | { kind: 'trim'; seq: number };

const TABLES: TableName[] = ['jobs', 'receipts', 'attempts', 'plans', 'deadPlans', 'dead', 'firstErrors', 'meta'];

function copy<T>(value: T): T {
  return value instanceof Uint8Array ? (new Uint8Array(value) as T) : structuredClone(value);
}

export class MemoryStorage implements QueueStorage {
  private readonly tables = new Map<TableName, Map<string, unknown>>(TABLES.map((t) => [t, new Map()]));
  private readonly outbox = new Map<number, DomainEvent>();
  private outboxSeq = 0;
  /** The next write fails with this error (tests of a failed commit, e.g. a full disk). */
  failNextWrite: Error | undefined;

  private table(t: TableName): Map<string, unknown> {
    return this.tables.get(t)!;
  }

  get<T extends TableName>(table: T, key: string): StorageTables[T] | undefined {
    const v = this.table(table).get(key) as StorageTables[T] | undefined;
    return v === undefined ? undefined : copy(v);
  }

  has(table: TableName, key: string): boolean {
    return this.table(table).has(key);
  }

  private sortedKeys(table: TableName): string[] {
    return [...this.table(table).keys()].sort();
  }

  *keys(table: TableName, opts: { after?: string; limit?: number; reverse?: boolean } = {}): Iterable<string> {
    let keys = this.sortedKeys(table);
    if (opts.reverse) keys.reverse();
    if (opts.after !== undefined) {
      const after = opts.after;
      keys = keys.filter((k) => (opts.reverse ? k < after : k > after));
    }
    yield* keys.slice(0, opts.limit ?? keys.length);
  }

  *entries<T extends TableName>(table: T, opts: { after?: string; limit?: number } = {}): Iterable<[string, StorageTables[T]]> {
    for (const key of this.keys(table, opts)) yield [key, this.get(table, key)!];
  }

  count(table: TableName): number {
    return this.table(table).size;
  }

  async write(body: (w: StorageWrite) => void): Promise<void> {
    const ops: Op[] = [];
    body({
      put: (table, key, value) => void ops.push({ kind: 'put', table, key, value: copy(value) }),
      remove: (table, key) => void ops.push({ kind: 'remove', table, key }),
      appendOutbox: (events) => void ops.push({ kind: 'append', events: events.map(copy) }),
      trimOutbox: (seq) => void ops.push({ kind: 'trim', seq }),
    });
    // A turn, as a database commit takes one: callers must not rely on a write landing synchronously.
    await Promise.resolve();
    const failure = this.failNextWrite;
    if (failure) {
      this.failNextWrite = undefined;
      throw failure;
    }
    for (const op of ops) {
      if (op.kind === 'put') this.table(op.table).set(op.key, op.value);
      else if (op.kind === 'remove') this.table(op.table).delete(op.key);
      else if (op.kind === 'append') for (const e of op.events) this.outbox.set(++this.outboxSeq, e);
      else for (const seq of [...this.outbox.keys()]) if (seq <= op.seq) this.outbox.delete(seq);
    }
  }

  readOutbox(afterSeq: number, limit: number): OutboxEntry[] {
    return [...this.outbox.entries()]
      .filter(([seq]) => seq > afterSeq)
      .sort((a, b) => a[0] - b[0])
      .slice(0, limit)
      .map(([seq, event]) => ({ seq, event: copy(event) }));
  }

  usedBytes(): number {
    let bytes = 0;
    for (const v of this.table('jobs').values()) bytes += (v as Uint8Array).length;
    for (const v of this.table('dead').values()) bytes += JSON.stringify(v).length;
    return bytes;
  }

  explainWriteError(err: unknown): unknown {
    return err;
  }

  async close(): Promise<void> {
    // Nothing to release: the data stays for the next queue opened on this object.
  }
}

// The narrow storage under the queue engine (./engine.ts): named tables of key → value, read
// synchronously, written in atomic batches, and the outbox as an append-only log. The engine
// decides everything (leases, failures, receipts, dead jobs); a storage only keeps bytes. Two
// implement it: LMDB on disk (./lmdb-storage.ts, the daemon's default) and memory
// (./memory-storage.ts, which the contract suite runs the engine on).
import type { DomainEvent } from '../domain/events.js';
import type { DeadJob, LeasePlan, OutboxEntry } from './types.js';

/** (project, idempotency key) → what enqueue answered. */
export interface ReceiptRecord {
  receiptId: string;
  acceptedExecutions: number;
  receivedAt: number;
}

/** A frozen lease: its jobs and the plan saved before its first write. */
export interface PlanRecord {
  jobIds: string[];
  plan: LeasePlan;
}

export interface StorageTables {
  /** Job id → the job as UTF-8 JSON of `StoredJob` (ids sort in receipt order). */
  jobs: Uint8Array;
  receipts: ReceiptRecord;
  /** Job id → attempts charged. */
  attempts: number;
  /** Lease id → the plan of a live frozen lease. */
  plans: PlanRecord;
  /** Lease id → the plan of a frozen lease that died, kept so its jobs can be requeued as that lease. */
  deadPlans: PlanRecord;
  /** Job id → its dead record. */
  dead: DeadJob;
  /** Job id → the first failure charged to a job still queued. */
  firstErrors: string;
  /** Outbox cursors and counters. */
  meta: number;
}

export type TableName = keyof StorageTables;

/** The writes of one atomic batch. */
export interface StorageWrite {
  put<T extends TableName>(table: T, key: string, value: StorageTables[T]): void;
  remove(table: TableName, key: string): void;
  /** Appends events to the outbox under the next sequence numbers. */
  appendOutbox(events: readonly DomainEvent[]): void;
  /** Drops outbox entries up to and including `seq`. */
  trimOutbox(seq: number): void;
}

export interface WriteOptions {
  /** Resolve once on disk (what a 202 promises), not only committed. */
  durable?: boolean;
  /**
   * `body` only puts and removes: it reads nothing that another write still in flight could change
   * (the door's new job and receipt). A storage may then apply it without a transaction callback.
   */
  blind?: boolean;
}

export interface QueueStorage {
  get<T extends TableName>(table: T, key: string): StorageTables[T] | undefined;
  has(table: TableName, key: string): boolean;
  /** Keys in order (after `after`, exclusive), or newest first with `reverse`. */
  keys(table: TableName, opts?: { after?: string; limit?: number; reverse?: boolean }): Iterable<string>;
  /** Entries in key order, after `after` (exclusive). */
  entries<T extends TableName>(table: T, opts?: { after?: string; limit?: number }): Iterable<[string, StorageTables[T]]>;
  count(table: TableName): number;
  /**
   * Runs `body` as one atomic batch: all of it is stored or none. Resolves once committed; with
   * `durable`, once on disk (what a 202 promises).
   */
  write(body: (w: StorageWrite) => void, opts?: WriteOptions): Promise<void>;
  readOutbox(afterSeq: number, limit: number): OutboxEntry[];
  /** Bytes the jobs and dead jobs take (what acks and drops free): the queue's size cap compares it. */
  usedBytes(): number;
  /** A write error in the user's terms (a full disk named as such), given the size being written. */
  explainWriteError(err: unknown, bytes: number): unknown;
  close(): Promise<void>;
}

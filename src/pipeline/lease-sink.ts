// What an executions exporter writes through: the sink of one delivery of a lease. It names the
// lease's writes (the insert_deduplication_token `lease:<lease>:<part>`, so a redelivered frozen
// lease writes nothing twice) and records that the delivery wrote, which the runtime needs when the
// lease fails: a lease frozen in this delivery that wrote nothing may be unfrozen and split; one that
// wrote must keep its composition (src/queue/types.ts, PipelineRuntime.processLease).
//
// It replaces a Proxy over the store that marked every lease in its exporters stage as written on
// any store write: the sink knows which lease wrote, and only writes made under the lease's tokens
// count (a custom exporter's unrelated store calls no longer pin a lease).
import type { Store } from '../store/client.js';
import type { TsvColumns } from '../store/tsv.js';

export interface LeaseSink {
  /** The lease (or routed batch) whose writes these are: `WorkBatch.leaseId`. */
  readonly leaseId: string;
  /**
   * The deduplication token of one part of the lease's writes, `lease:<leaseId>:<part>`: the same
   * on every delivery of a frozen lease. One token per insert (a part is usually a table). These
   * tokens are stored data's identity across upgrades: never change their shape.
   */
  token(part: string): string;
  /** Inserts JSON rows under `token(part)`; counts as written once the insert succeeded. */
  insert(table: string, rows: readonly object[], part: string): Promise<void>;
  /** Inserts TabSeparated rows under `token(part)`; counts as written once the insert succeeded. */
  insertTsv(table: string, columns: TsvColumns, rows: readonly Record<string, unknown>[], part: string): Promise<void>;
  /**
   * For an effect outside the store that is keyed by the lease's id (`token`): says it took place,
   * so that a failure afterwards keeps the lease whole (a split would repeat it under new ids).
   * An effect keyed by the jobs themselves, the same whatever lease carries them, need not call it.
   */
  wrote(): void;
}

/** What one delivery of a lease wrote: shared by the sinks of its batches. */
export interface LeaseWrites {
  wrote: boolean;
}

/** The insert_deduplication_token of a part of a lease's writes. */
export function leaseToken(leaseId: string, part: string): string {
  return `lease:${leaseId}:${part}`;
}

/** A sink writing through `store` (only its insert methods are called, and only when used). */
export function leaseSink(store: Pick<Store, 'insert' | 'insertTsv'>, leaseId: string, writes: LeaseWrites = { wrote: false }): LeaseSink {
  return {
    leaseId,
    token: (part) => leaseToken(leaseId, part),
    async insert(table, rows, part) {
      // A failed insert wrote nothing: ClickHouse inserts a block atomically, one block per call.
      await store.insert(table, rows, leaseToken(leaseId, part));
      writes.wrote = true;
    },
    async insertTsv(table, columns, rows, part) {
      await store.insertTsv(table, columns, rows, leaseToken(leaseId, part));
      writes.wrote = true;
    },
    wrote() {
      writes.wrote = true;
    },
  };
}

// Everything that crosses between the main thread and the pipeline thread, declared once. Both
// sides are typed from these declarations (rpc.ts): a caller names a call and gets its arguments
// and result checked; a side that serves calls hands `serveRpc` one handler per name, so a call
// without a handler, or a handler with other arguments or result, does not compile.
import type { ClickHouseSettings } from '@clickhouse/client';
import type { DomainEvent } from '../../domain/events.js';
import type { DequeueOptions, LeasePlan, NackOptions, OutboxEntry, RawLease } from '../../queue/types.js';
import type { ReloadResult } from '../reload.js';
import type { WorkerStats } from '../runtime.js';

/** Calls the pipeline thread makes to the main thread, which owns the store and the queue. */
export interface MainCalls {
  // The store (remote.ts turns these into a Store on the pipeline thread).
  'store.queryText': (sql: string, params?: Record<string, unknown>) => string;
  'store.command': (sql: string, params?: Record<string, unknown>, settings?: ClickHouseSettings) => void;
  'store.insertJsonBody': (table: string, body: string, dedupToken: string) => void;
  /** `body` is moved (transferred), not copied. */
  'store.insertTsvBody': (table: string, columns: readonly string[], body: Uint8Array, dedupToken: string) => void;
  // The queue's worker side (WorkerQueue). Job payloads come back as moved bytes.
  'queue.dequeueRaw': (opts: DequeueOptions) => RawLease | null;
  'queue.savePlan': (leaseId: string, plan: LeasePlan) => void;
  'queue.ack': (leaseId: string) => void;
  'queue.nack': (leaseId: string, error: string, opts?: NackOptions) => void;
  'queue.failJob': (leaseId: string, jobId: string, error: string) => void;
  'queue.waitForWork': (timeoutMs: number) => void;
  // The outbox (events out of leases, and the dispatcher's cursors).
  'outbox.append': (events: readonly DomainEvent[]) => void;
  'outbox.read': (afterSeq: number, limit: number) => OutboxEntry[];
  'outbox.cursor': (subscriber: string) => number;
  'outbox.setCursor': (subscriber: string, seq: number) => void;
  'outbox.trim': (subscribers: readonly string[]) => void;
  'outbox.waitForEntries': (timeoutMs: number) => void;
  /** Whether this process dispatches the outbox now (OutboxReader.dispatchesHere; always, on one process). */
  'outbox.dispatchesHere': () => boolean;
}

/** Calls the main thread makes to the pipeline thread. */
export interface WorkerCalls {
  /** Resolves once the lease loop is held (no lease in hand, none starts) until `resume(id)`. */
  pause: (id: number) => void;
  resume: (id: number) => void;
  /**
   * Re-reads the pipeline file; if it is valid and its receivers are those running, lets the lease
   * in hand finish and swaps processors, exporters and connectors for the new file's.
   */
  reload: () => ReloadResult;
  /** Lets the lease in hand finish, stops the components, and sends the last counters first. */
  shutdown: () => void;
  /** Whether delivered events are sent to the main thread (only while something there listens). */
  relayEvents: (on: boolean) => void;
}

/** Notifications from the pipeline thread (no answer expected). */
export type ToMain =
  | { kind: 'ready' }
  | { kind: 'fatal'; message: string }
  | { kind: 'log'; line: string }
  /** Events delivered in one turn of the thread, in order (one message, not one per event). */
  | { kind: 'events'; events: DomainEvent[] }
  | { kind: 'stats'; stats: WorkerStats };

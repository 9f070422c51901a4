// What a component sees of a storage extension (after the OpenTelemetry Collector's
// `storage.Client`): a small key-value store of JSON values, namespaced to the component that
// asked for it. Types only, so the component model (./component.ts) names them without loading
// LMDB. The implementation is src/extensions/file-storage.ts.

/** Keys: strings, or numbers (kept in numeric order, before every string). */
export type StorageKey = string | number;

export interface StorageEntry<V, K extends StorageKey = string> {
  key: K;
  value: V;
}

export type StorageOp<V, K extends StorageKey = string> = { op: 'set'; key: K; value: V } | { op: 'delete'; key: K };

/**
 * A component's durable key-value state. Every write resolves once it is committed and on disk:
 * a component that records "sent" before it returns keeps that record across a crash. Reads are
 * local (a memory-mapped file) and synchronous. Values are stored as JSON.
 */
export interface StorageClient<V, K extends StorageKey = string> {
  /** The value under `key`; inside `transaction`, as the transaction sees it. */
  get(key: K): V | undefined;
  /** Durable when it resolves. Inside `transaction`, part of it (need not be awaited there). */
  set(key: K, value: V): Promise<void>;
  /** Durable when it resolves; no-op when absent. Inside `transaction`, part of it. */
  delete(key: K): Promise<void>;
  /** Several writes, all or none; durable when it resolves. */
  batch(ops: readonly StorageOp<V, K>[]): Promise<void>;
  /** Entries in key order (numbers before strings), from `start` (inclusive) to `end` (exclusive). */
  range(opts?: { start?: K; end?: K }): Iterable<StorageEntry<V, K>>;
  count(): number;
  /**
   * Runs `fn` as one write transaction, all or nothing, over every client of the same storage
   * extension (a component's several named clients among them): a check-and-set reads and writes
   * in `fn`, synchronously. Durable when it resolves, with `fn`'s result.
   */
  transaction<T>(fn: () => T): Promise<T>;
}

/** The component a client belongs to, as the Collector names it (`exporter`, `notify/team`, `dedupe`). */
export interface StorageOwner {
  kind: 'receiver' | 'processor' | 'exporter' | 'connector';
  /** The component id in the pipeline file: `type` or `type/name`. */
  id: string;
  /** A further namespace within the component (one component, several stores). */
  name?: string;
}

/** What a storage extension offers the host. */
export interface StorageProvider {
  client<V, K extends StorageKey = string>(owner: StorageOwner): StorageClient<V, K>;
}

// The pipeline thread's view of the store and the queue: both live on the main thread (chDB binds
// one engine per process and the queue keeps its ready/leased sets in one place), so every call is
// a message. The heavy parts stay here: payloads are decoded and TSV bodies encoded in this thread,
// and cross as transferred bytes.
import type { ClickHouseSettings } from '@clickhouse/client';
import type { DomainEvent } from '../../domain/events.js';
import type { DequeueOptions, Job, Lease, LeasePlan, NackOptions, OutboxReader, StoredJob, WorkerQueue } from '../../queue/types.js';
import type { Store } from '../../store/client.js';
import { encodeTsv, type TsvColumns } from '../../store/tsv.js';
import type { MainCalls } from './protocol.js';
import type { RpcClient } from './rpc.js';

type MainRpc = RpcClient<MainCalls>;

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export function remoteStore(rpc: MainRpc, database: string, embedded: boolean): Store {
  const table = (name: string): string => `\`${database}\`.\`${name}\``;
  const insertTsvBody = async (t: string, columnNames: readonly string[], body: string | Uint8Array, dedupToken: string): Promise<void> => {
    const bytes = typeof body === 'string' ? encoder.encode(body) : body;
    if (bytes.length === 0) return;
    // Moved, not copied: the encoder's output owns its ArrayBuffer.
    await rpc.callTransferring(bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : [], 'store.insertTsvBody', t, columnNames, bytes, dedupToken);
  };
  return {
    database,
    embedded,
    table,
    // Results cross as JSONEachRow text and are decoded here: decoding on the main thread and
    // cloning the objects across cost the HTTP thread more than the query itself.
    query: async <T>(sql: string, params?: Record<string, unknown>) => parseJsonEachRow<T>(await rpc.call('store.queryText', sql, params)),
    queryText: (sql: string, params?: Record<string, unknown>) => rpc.call('store.queryText', sql, params),
    command: (sql: string, params?: Record<string, unknown>, settings?: ClickHouseSettings) => rpc.call('store.command', sql, params, settings),
    insert: (t: string, rows: readonly object[], dedupToken: string) =>
      rows.length === 0 ? Promise.resolve() : rpc.call('store.insertJsonBody', t, rows.map((r) => JSON.stringify(r)).join('\n'), dedupToken),
    insertJsonBody: (t: string, body: string, dedupToken: string) => rpc.call('store.insertJsonBody', t, body, dedupToken),
    async insertTsv(t: string, columns: TsvColumns, rows: readonly Record<string, unknown>[], dedupToken: string) {
      if (rows.length === 0) return;
      await insertTsvBody(t, columns.names, await encodeTsv(rows, columns.names, columns.plain), dedupToken);
    },
    insertTsvBody,
    // The main thread owns the store and closes it.
    close: () => Promise.resolve(),
  };
}

function parseJsonEachRow<T>(text: string): T[] {
  const rows: T[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    if (end > start) rows.push(JSON.parse(text.slice(start, end)) as T);
    start = end + 1;
  }
  return rows;
}

/** The queue operations the worker loop and the event dispatcher use (WorkerQueue); the rest stays on the main thread. */
export function remoteQueue(rpc: MainRpc): WorkerQueue {
  const outbox: OutboxReader = {
    append: (events: readonly DomainEvent[]) => rpc.call('outbox.append', events),
    read: (afterSeq: number, limit: number) => rpc.call('outbox.read', afterSeq, limit),
    cursor: (subscriber: string) => rpc.call('outbox.cursor', subscriber),
    setCursor: (subscriber: string, seq: number) => rpc.call('outbox.setCursor', subscriber, seq),
    trim: (subscribers: readonly string[]) => rpc.call('outbox.trim', subscribers),
    waitForEntries: (timeoutMs: number) => rpc.call('outbox.waitForEntries', timeoutMs),
    dispatchesHere: () => rpc.call('outbox.dispatchesHere'),
  };
  return {
    async dequeue(opts: DequeueOptions): Promise<Lease | null> {
      const raw = await rpc.call('queue.dequeueRaw', opts);
      if (!raw) return null;
      const jobs: Job[] = raw.jobs.map((j) => {
        const rec = JSON.parse(decoder.decode(j.json)) as StoredJob;
        const id = j.id ?? rec.id;
        return { ...rec, id, receiptId: rec.receiptId ?? id, attempts: j.attempts };
      });
      return { id: raw.id, jobs, attempt: raw.attempt, ...(raw.plan ? { plan: raw.plan } : {}) };
    },
    savePlan: (leaseId: string, plan: LeasePlan) => rpc.call('queue.savePlan', leaseId, plan),
    ack: (leaseId: string) => rpc.call('queue.ack', leaseId),
    failJob: (leaseId: string, jobId: string, error: string) => rpc.call('queue.failJob', leaseId, jobId, error),
    nack: (leaseId: string, error: string, opts?: NackOptions) => rpc.call('queue.nack', leaseId, error, opts),
    waitForWork: (timeoutMs: number) => rpc.call('queue.waitForWork', timeoutMs),
    outbox,
  };
}

// Creates (or updates) the streams and KV buckets of one queue prefix.
import { DiscardPolicy, RetentionPolicy, StorageType, nanos, type JetStreamClient, type JetStreamManager, type KV, type KvOptions, type StreamConfig } from 'nats';
import type { NatsNames } from './names.js';
import { isNotFound } from './errors.js';

export interface StreamLimits {
  /** Jobs stream limits: a full stream refuses the publish (DiscardPolicy.New). */
  maxMsgs?: number;
  maxBytes?: number;
  duplicateWindowMs: number;
}

export interface QueueStreams {
  /** When the jobs stream was created (ms): part of every receipt id. */
  jobsCreatedMs: number;
  receipts: KV;
  plans: KV;
  attempts: KV;
  cursors: KV;
}

/** The answer to a create that another process won meanwhile (workers starting together on a new NATS). */
function isCreateRace(err: unknown): boolean {
  return /already in use|exists|subjects overlap/i.test(String(err));
}

/**
 * Opens a KV bucket, creating it when absent. js.views.kv looks the bucket up and then creates
 * it: two processes starting at once can both miss it, and the slower create is refused; the
 * bucket is there then, so it is opened again.
 */
export async function openKv(js: JetStreamClient, name: string, opts: Partial<KvOptions> = {}): Promise<KV> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await js.views.kv(name, opts);
    } catch (err) {
      if (attempt >= 3 || !isCreateRace(err)) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

async function ensureStream(jsm: JetStreamManager, cfg: Partial<StreamConfig> & { name: string }): Promise<{ created: string }> {
  try {
    await jsm.streams.info(cfg.name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      const info = await jsm.streams.add(cfg);
      return { created: info.created };
    } catch (addErr) {
      // Another process created it meanwhile: fall through to the update.
      if (!isCreateRace(addErr)) throw addErr;
    }
  }
  const info = await jsm.streams.update(cfg.name, cfg);
  return { created: info.created };
}

export async function ensureQueueStreams(js: JetStreamClient, jsm: JetStreamManager, names: NatsNames, limits: StreamLimits): Promise<QueueStreams> {
  const jobs = await ensureStream(jsm, {
    name: names.jobsStream,
    subjects: [names.jobsWildcard],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    duplicate_window: nanos(limits.duplicateWindowMs),
    max_msgs: limits.maxMsgs && limits.maxMsgs > 0 ? limits.maxMsgs : -1,
    max_bytes: limits.maxBytes && limits.maxBytes > 0 ? limits.maxBytes : -1,
  });
  await ensureStream(jsm, {
    name: names.deadStream,
    subjects: [names.deadSubject],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    duplicate_window: nanos(limits.duplicateWindowMs),
  });
  await ensureStream(jsm, {
    name: names.outboxStream,
    subjects: [names.outboxSubject],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    duplicate_window: nanos(limits.duplicateWindowMs),
  });
  const [receipts, plans, attempts, cursors] = await Promise.all([
    openKv(js, names.receiptsBucket, { history: 1, storage: StorageType.File }),
    openKv(js, names.plansBucket, { history: 1, storage: StorageType.File }),
    // Attempt records of jobs finished long ago are garbage: a week is far beyond any backoff.
    openKv(js, names.attemptsBucket, { history: 1, storage: StorageType.File, ttl: 7 * 24 * 3600 * 1000 }),
    openKv(js, names.cursorsBucket, { history: 1, storage: StorageType.File }),
  ]);
  return { jobsCreatedMs: Date.parse(jobs.created), receipts, plans, attempts, cursors };
}

/** A KV value as JSON, or undefined for a missing or deleted key. */
export async function kvGetJson<T>(kv: KV, key: string): Promise<T | undefined> {
  const e = await kv.get(key);
  if (!e || e.operation !== 'PUT' || e.value.length === 0) return undefined;
  return JSON.parse(new TextDecoder().decode(e.value)) as T;
}

export async function kvPutJson(kv: KV, key: string, value: unknown): Promise<void> {
  await kv.put(key, new TextEncoder().encode(JSON.stringify(value)));
}

/** Rejects when `promise` has not settled within `ms` (a NATS iterator whose server went away never ends). */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** How long listing a bucket's keys may take before it is given up (and retried by its caller). */
const KEYS_TIMEOUT_MS = 10_000;

/** All keys under `filter` (a KV key wildcard such as `live.3.>`). */
export async function kvKeys(kv: KV, filter: string): Promise<string[]> {
  const out: string[] = [];
  const it = await kv.keys(filter);
  const listing = (async () => {
    for await (const k of it) out.push(k);
  })();
  try {
    await withTimeout(listing, KEYS_TIMEOUT_MS, `listing the keys ${filter}`);
  } catch (err) {
    it.stop();
    throw err;
  }
  return out;
}

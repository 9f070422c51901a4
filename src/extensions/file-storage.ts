// `file_storage`, after the Collector's extension of that name: components' durable state in ONE
// LMDB environment under `directory` (default <data dir>/component-state), one named database per
// component and name (`exporter_notify:dedupe`, `exporter_tracker`), so two components never see
// each other's keys. Writes resolve once committed and flushed to disk (the notifier records a
// notification as queued before its exportEvent returns; the tracker records an issue as being
// opened before it POSTs). A transaction may span every client of the environment, and is
// aborted whole when its callback throws.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Extension, ExtensionFactory, ExtensionSettings } from '../pipeline/extension.js';
import type { StorageClient, StorageEntry, StorageKey, StorageOp, StorageOwner, StorageProvider } from '../pipeline/storage.js';

const config = z
  .object({
    /** Where the environment lives; relative to the data directory. Default `<data dir>/component-state`. */
    directory: z.string().min(1).optional(),
  })
  .strict();
export type FileStorageConfig = z.output<typeof config>;

/** The default directory, under the data directory. */
export const COMPONENT_STATE_DIR = 'component-state';

export const fileStorageFactory: ExtensionFactory<FileStorageConfig> = {
  kind: 'extension',
  type: 'file_storage',
  description: 'durable component state (notification dedupe, tracker state) in one LMDB environment, namespaced per component',
  configSchema: config,
  storage: true,
  create: (cfg: FileStorageConfig, settings: ExtensionSettings) =>
    new FileStorage(path.resolve(settings.dataDir, cfg.directory ?? COMPONENT_STATE_DIR), settings.logger),
};

/** A namespace part: component ids are `type` or `type/name` (src/pipeline/graph.ts), names alike. */
const NAME = /^[A-Za-z0-9_./-]+$/;

/** The database a component's client uses: `<kind>_<id>` as the Collector names it, `:<name>` after. */
export function storageName(owner: StorageOwner): string {
  if (!NAME.test(owner.id)) throw new Error(`file_storage: invalid component id "${owner.id}"`);
  if (owner.name !== undefined && !NAME.test(owner.name)) throw new Error(`file_storage: invalid storage name "${owner.name}"`);
  return `${owner.kind}_${owner.id}${owner.name !== undefined ? `:${owner.name}` : ''}`;
}

export class FileStorage implements Extension, StorageProvider {
  private root: RootDatabase | undefined;
  private readonly dbs = new Map<string, Database<unknown, StorageKey>>();
  /** Inside a transaction's callback: writes go into it. */
  private inTransaction = 0;

  constructor(
    readonly directory: string,
    private readonly logger?: Logger,
  ) {}

  get storage(): StorageProvider {
    return this;
  }

  async start(): Promise<void> {
    if (this.root) return;
    mkdirSync(this.directory, { recursive: true });
    // overlappingSync stays on (lmdb's default); every write awaits `flushed` before it resolves.
    this.root = open({ path: this.directory, maxDbs: 1024, mapSize: 4 * 1024 * 1024 * 1024 });
    this.logger?.debug({ directory: this.directory }, 'file_storage started');
  }

  async shutdown(): Promise<void> {
    const root = this.root;
    if (!root) return;
    this.root = undefined;
    this.dbs.clear();
    await root.flushed;
    await root.close();
  }

  client<V, K extends StorageKey = string>(owner: StorageOwner): StorageClient<V, K> {
    const name = storageName(owner);
    const root = this.env();
    let db = this.dbs.get(name);
    if (!db) {
      db = root.openDB<unknown, StorageKey>({ name, encoding: 'json' });
      this.dbs.set(name, db);
    }
    return this.wrap<V, K>(db as unknown as Database<V, K>);
  }

  private env(): RootDatabase {
    if (!this.root) throw new Error(`file_storage (${this.directory}) is not running`);
    return this.root;
  }

  private wrap<V, K extends StorageKey>(db: Database<V, K>): StorageClient<V, K> {
    const durable = async (write: Promise<unknown>): Promise<void> => {
      await write;
      await this.env().flushed;
    };
    const client: StorageClient<V, K> = {
      get: (key) => {
        this.env();
        return db.get(key);
      },
      set: (key, value) => {
        if (this.inTransaction > 0) {
          db.putSync(key, value);
          return Promise.resolve();
        }
        return durable(db.put(key, value));
      },
      delete: (key) => {
        if (this.inTransaction > 0) {
          db.removeSync(key);
          return Promise.resolve();
        }
        return durable(db.remove(key));
      },
      batch: async (ops: readonly StorageOp<V, K>[]) => {
        if (ops.length === 0) return;
        await client.transaction(() => {
          for (const o of ops) void (o.op === 'set' ? client.set(o.key, o.value) : client.delete(o.key));
        });
      },
      range: (opts = {}) => {
        this.env();
        const iter = db.getRange({ ...(opts.start !== undefined ? { start: opts.start } : {}), ...(opts.end !== undefined ? { end: opts.end } : {}) });
        return iter.map(({ key, value }): StorageEntry<V, K> => ({ key, value }));
      },
      count: () => {
        this.env();
        return db.getCount();
      },
      transaction: async <T>(fn: () => T): Promise<T> => {
        const root = this.env();
        // Synchronous: lmdb's queued `transaction` commits what a throwing callback wrote before
        // it threw; this one is aborted whole. Writes here are small (a check-and-set, a patch).
        this.inTransaction++;
        let result: T;
        try {
          result = root.transactionSync(fn);
        } finally {
          this.inTransaction--;
        }
        // Covers synchronous commits too (lmdb's `lastSyncTxnFlush`).
        await root.flushed;
        return result;
      },
    };
    return client;
  }
}

// Moving a component's state from the LMDB environment it used to open by itself (before the
// storage extension) into its storage clients, once. The copy and a marker commit in one
// transaction, so a crash before the old directory is renamed copies nothing twice (a re-copy
// would bring back deliveries already sent); the old directory is then renamed `<dir>.migrated`,
// left for the operator to delete.
import { existsSync, renameSync } from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import type { Logger } from 'pino';
import type { StorageClient, StorageKey } from '../pipeline/storage.js';

export interface LegacyDatabase {
  /** Its name in the old environment. */
  name: string;
  /** How the old environment encoded its keys (default: lmdb's ordered keys). */
  keyEncoding?: 'uint32';
  into: StorageClient<unknown, StorageKey>;
}

export interface LegacyMigration {
  /** The old environment's directory (`<data dir>/notify`, `<data dir>/tracker`). */
  dir: string;
  databases: readonly LegacyDatabase[];
  /** Where the copy is recorded (under `legacy-migration`), in the copy's own transaction. */
  marker: StorageClient<unknown, string>;
  logger: Logger;
}

const MARKER_KEY = 'legacy-migration';

/** Entries copied; null when there was nothing to migrate (no old directory, or already done). */
export async function migrateLegacyLmdb(m: LegacyMigration): Promise<number | null> {
  if (!existsSync(path.join(m.dir, 'data.mdb'))) return null;
  let copied: number | null = null;
  if (m.marker.get(MARKER_KEY) === undefined) {
    const old = open({ path: m.dir, maxDbs: Math.max(4, m.databases.length) });
    try {
      const sources = m.databases.map((d) => ({ d, db: old.openDB<unknown, StorageKey>({ name: d.name, encoding: 'json', ...(d.keyEncoding ? { keyEncoding: d.keyEncoding } : {}) }) }));
      const entries = sources.map(({ d, db }) => ({ into: d.into, rows: [...db.getRange()].map(({ key, value }) => ({ key, value })) }));
      copied = entries.reduce((n, e) => n + e.rows.length, 0);
      await m.marker.transaction(() => {
        for (const { into, rows } of entries) for (const r of rows) void into.set(r.key, r.value);
        void m.marker.set(MARKER_KEY, { from: m.dir, entries: copied, at: new Date().toISOString() });
      });
    } finally {
      await old.close();
    }
  }
  let to = `${m.dir}.migrated`;
  for (let i = 2; existsSync(to); i++) to = `${m.dir}.migrated-${i}`;
  try {
    renameSync(m.dir, to);
  } catch (err) {
    // Copied and recorded already: the next start only tries the rename again.
    m.logger.warn({ err, from: m.dir, entries: copied ?? 'already copied' }, 'component state moved into the storage extension; cannot rename the old directory');
    return copied;
  }
  m.logger.info({ from: m.dir, renamedTo: to, entries: copied ?? 'already copied' }, 'component state moved into the storage extension');
  return copied;
}

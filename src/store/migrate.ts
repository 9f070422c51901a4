// Numbered SQL migrations from ./migrations, applied in order and recorded in schema_migrations.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Store } from './client.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const sql = readFileSync(`${dir}/${file}`, 'utf8');
      return { version: Number(file.split('_')[0]), name: file, statements: splitStatements(sql) };
    });
}

/** Splits on `;` at the end of a line; comment-only chunks are dropped. */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter((s) => s.length > 0);
}

/** Applies the migrations of `dir` not yet recorded; returns their versions. */
export async function migrate(store: Store, dir = MIGRATIONS_DIR): Promise<number[]> {
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${store.table('schema_migrations')} (version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = ReplacingMergeTree ORDER BY version`,
  );
  const done = new Set(
    (await store.query<{ version: number }>(`SELECT version FROM ${store.table('schema_migrations')} FINAL`)).map((r) => Number(r.version)),
  );
  const applied: Migration[] = [];
  let failure: { error: unknown } | undefined;
  for (const m of loadMigrations(dir)) {
    if (done.has(m.version)) continue;
    try {
      for (const stmt of m.statements) await store.command(stmt.replaceAll('{db}', `\`${store.database}\``));
    } catch (error) {
      failure = { error };
      break;
    }
    applied.push(m);
  }
  // One insert records them all (a new database applies every migration: one part, not eight), also
  // when a later one failed, so the next start resumes after the last that succeeded.
  if (applied.length > 0) {
    await store.insert(
      'schema_migrations',
      applied.map((m) => ({ version: m.version, name: m.name })),
      `migration:${applied.map((m) => m.version).join(',')}`,
    );
  }
  if (failure) throw failure.error;
  return applied.map((m) => m.version);
}

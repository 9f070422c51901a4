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

export async function migrate(store: Store): Promise<number[]> {
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${store.table('schema_migrations')} (version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = ReplacingMergeTree ORDER BY version`,
  );
  const done = new Set(
    (await store.query<{ version: number }>(`SELECT version FROM ${store.table('schema_migrations')} FINAL`)).map((r) => Number(r.version)),
  );
  const applied: number[] = [];
  for (const m of loadMigrations()) {
    if (done.has(m.version)) continue;
    for (const stmt of m.statements) await store.command(stmt.replaceAll('{db}', `\`${store.database}\``));
    await store.insert('schema_migrations', [{ version: m.version, name: m.name }], `migration:${m.version}`);
    applied.push(m.version);
  }
  return applied;
}

// Numbered SQL migrations from ./migrations, applied in order and recorded in schema_migrations.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Store } from './client.js';
import { clusterStatements } from './cluster-ddl.js';

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

/** The table that records applied migrations (a statement like the migrations', `{db}` and all). */
export const SCHEMA_MIGRATIONS_DDL =
  "CREATE TABLE IF NOT EXISTS {db}.schema_migrations (version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = ReplacingMergeTree ORDER BY version";

/**
 * The statements to run for `statements` of a migration: as written, `{db}` replaced, on one server
 * (or chDB); with `cluster`, their replicated + Distributed form (cluster-ddl.ts,
 * docs/clickhouse-cluster.md).
 */
export function statementsFor(statements: readonly string[], database: string, cluster?: string): string[] {
  if (cluster !== undefined) return clusterStatements(statements, { cluster, database });
  return statements.map((stmt) => stmt.replaceAll('{db}', `\`${database}\``));
}

/** Applies the migrations of `dir` not yet recorded; returns their versions. */
export async function migrate(store: Store, dir = MIGRATIONS_DIR): Promise<number[]> {
  const cluster = store.cluster;
  // Every pending migration is rewritten before any of them runs: a shape the cluster rewriter does
  // not know fails the start before a migration ran half.
  const pending = (done: Set<number>) =>
    loadMigrations(dir)
      .filter((m) => !done.has(m.version))
      .map((m) => ({ ...m, statements: statementsFor(m.statements, store.database, cluster) }));
  for (const stmt of statementsFor([SCHEMA_MIGRATIONS_DDL], store.database, cluster)) await store.command(stmt);
  if (cluster !== undefined) await refuseUnclustered(store);
  const done = new Set(
    (await store.query<{ version: number }>(`SELECT version FROM ${store.table('schema_migrations')} FINAL`)).map((r) => Number(r.version)),
  );
  const applied: Migration[] = [];
  let failure: { error: unknown } | undefined;
  for (const m of pending(done)) {
    try {
      for (const stmt of m.statements) await store.command(stmt);
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

/**
 * A database created on one server keeps its plain tables under the names the cluster schema gives
 * its Distributed tables (CREATE ... IF NOT EXISTS skips them): refused, rather than running a
 * "cluster" on one server's tables (docs/clickhouse-cluster.md "What was not run, and known gaps").
 */
async function refuseUnclustered(store: Store): Promise<void> {
  const rows = await store.query<{ engine: string }>(
    'SELECT engine FROM system.tables WHERE database = {db:String} AND name = {name:String}',
    { db: store.database, name: 'schema_migrations' },
  );
  const engine = rows[0]?.engine;
  if (engine !== 'Distributed') {
    throw new Error(
      `SERVICE_CLICKHOUSE_CLUSTER is set but ${store.database}.schema_migrations is ${engine ?? 'missing'}, not Distributed: the database was created without a cluster; use a new database for the cluster schema`,
    );
  }
}

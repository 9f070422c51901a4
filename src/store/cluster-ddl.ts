// The migrations as a replicated, sharded ClickHouse cluster runs them (SERVICE_CLICKHOUSE_CLUSTER,
// docs/clickhouse-cluster.md). Pure: migration statements in (with their `{db}` placeholder), cluster
// statements out; migrate.ts runs them instead of the originals when a cluster is configured.
//
// Every MergeTree-family table `t` becomes
//   - `t_local`, created ON CLUSTER with the Replicated engine of its family (the data, per shard),
//   - `t`, a Distributed table over `t_local` (what the application reads and writes, unchanged),
// materialized views read `<source>_local` and write `<target>_local` (each shard rolls up its own
// inserts), and every other statement runs ON CLUSTER against the table it must reach.
//
// Only the statement shapes the migrations use are understood. Anything else throws
// ClusterDdlError, so a new migration cannot silently stay un-clustered: teach this file its shape
// (and regenerate test/fixtures/clickhouse/cluster-ddl.sql) when one fails.

export interface ClusterDdlOptions {
  /** The cluster name of the servers' remote_servers configuration. */
  cluster: string;
  /** The database that holds our tables (replaces `{db}`). */
  database: string;
}

export class ClusterDdlError extends Error {
  override name = 'ClusterDdlError';
}

/** The suffix of the replicated table behind each Distributed table. */
export const LOCAL_SUFFIX = '_local';

/** The dedup window of every replicated table: as many blocks as the migrations' non-replicated windows. */
export const DEDUP_WINDOW = 10000;

const CLUSTER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DB_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const NAME = '([A-Za-z_][A-Za-z0-9_]*)';
const DB_REF = new RegExp(`\\{db\\}\\.${NAME}`, 'g');

/** The MergeTree engines a table may use; each has a Replicated twin taking the same arguments. */
const MERGE_TREE_ENGINES = new Set([
  'MergeTree',
  'ReplacingMergeTree',
  'SummingMergeTree',
  'AggregatingMergeTree',
  'CollapsingMergeTree',
  'VersionedCollapsingMergeTree',
]);

/** The clauses that may follow a CREATE TABLE's ENGINE (in any order ClickHouse accepts); COMMENT is refused. */
const TABLE_CLAUSES = /\b(PARTITION BY|ORDER BY|PRIMARY KEY|SAMPLE BY|TTL|SETTINGS|COMMENT)\b/g;

/** The settings of a Distributed insert-select in a migration (the backfill of 015). */
const BACKFILL_SETTINGS = 'insert_deduplicate = 0, distributed_foreground_insert = 1';

/** The cluster form of `statements` (in order); throws ClusterDdlError for a shape it does not know. */
export function clusterStatements(statements: readonly string[], opts: ClusterDdlOptions): string[] {
  if (!CLUSTER_NAME.test(opts.cluster)) throw new ClusterDdlError(`invalid ClickHouse cluster name: ${opts.cluster}`);
  if (!DB_NAME.test(opts.database)) throw new ClusterDdlError(`invalid ClickHouse database name: ${opts.database}`);
  const ctx = new Context(opts);
  return statements.flatMap((stmt) => ctx.rewrite(stmt.trim()));
}

class Context {
  readonly onCluster: string;
  /** Views created by the statements seen so far: an ALTER or TRUNCATE of one is refused. */
  private readonly views = new Set<string>();

  constructor(private readonly opts: ClusterDdlOptions) {
    this.onCluster = `ON CLUSTER ${quote(opts.cluster)}`;
  }

  /** `{db}.name` as the qualified, quoted name. */
  private t(name: string): string {
    return `\`${this.opts.database}\`.\`${name}\``;
  }

  rewrite(stmt: string): string[] {
    const head = stmt.replace(/\s+/g, ' ').slice(0, 80);
    let m: RegExpMatchArray | null;
    if ((m = stmt.match(new RegExp(`^CREATE TABLE (IF NOT EXISTS )?\\{db\\}\\.${NAME}\\s*\\(([\\s\\S]*)\\)\\s*ENGINE\\s*=\\s*([A-Za-z]+)(?:\\(([^()]*)\\))?([\\s\\S]*)$`)))) {
      return this.createTable(m[2]!, m[3]!, m[4]!, m[5], m[6]!, head);
    }
    if ((m = stmt.match(new RegExp(`^CREATE MATERIALIZED VIEW (IF NOT EXISTS )?\\{db\\}\\.${NAME} TO \\{db\\}\\.${NAME} AS\\s+(SELECT\\b[\\s\\S]*)$`)))) {
      return [this.materializedView(m[2]!, m[3]!, m[4]!, head)];
    }
    if ((m = stmt.match(new RegExp(`^CREATE VIEW (IF NOT EXISTS )?\\{db\\}\\.${NAME} AS\\s+(SELECT\\b[\\s\\S]*)$`)))) {
      // A plain view reads through the Distributed tables, like the application: only ON CLUSTER.
      this.views.add(m[2]!);
      return [`CREATE VIEW IF NOT EXISTS ${this.t(m[2]!)} ${this.onCluster} AS\n${this.qualify(m[3]!)}`];
    }
    if ((m = stmt.match(new RegExp(`^ALTER TABLE \\{db\\}\\.${NAME}\\s+([\\s\\S]+)$`)))) {
      return this.alterTable(m[1]!, m[2]!, head);
    }
    if ((m = stmt.match(new RegExp(`^DROP VIEW (IF EXISTS )?\\{db\\}\\.${NAME}$`)))) {
      this.views.delete(m[2]!);
      // SYNC: the view is gone on every replica before the statement that recreates it runs.
      return [`DROP VIEW IF EXISTS ${this.t(m[2]!)} ${this.onCluster} SYNC`];
    }
    if ((m = stmt.match(new RegExp(`^TRUNCATE TABLE (IF EXISTS )?\\{db\\}\\.${NAME}$`)))) {
      this.refuseView(m[2]!, head);
      // A Distributed table cannot be truncated: the shards' replicated tables are.
      return [`TRUNCATE TABLE IF EXISTS ${this.t(m[2]! + LOCAL_SUFFIX)} ${this.onCluster}`];
    }
    if ((m = stmt.match(new RegExp(`^INSERT INTO \\{db\\}\\.${NAME}\\s+(SELECT\\b[\\s\\S]*)$`)))) {
      return [this.insertSelect(m[1]!, m[2]!, head)];
    }
    throw new ClusterDdlError(`cannot run on a cluster, unknown statement shape (teach src/store/cluster-ddl.ts): ${head}`);
  }

  private createTable(name: string, columns: string, engine: string, engineArgs: string | undefined, tail: string, head: string): string[] {
    if (name.endsWith(LOCAL_SUFFIX)) throw new ClusterDdlError(`table names ending in ${LOCAL_SUFFIX} are reserved for the cluster's replicated tables: ${head}`);
    if (!MERGE_TREE_ENGINES.has(engine)) {
      throw new ClusterDdlError(`cannot run on a cluster, engine ${engine} is not a MergeTree family engine with a Replicated twin: ${head}`);
    }
    const clauses = parseClauses(tail, head);
    const orderBy = clauses.get('ORDER BY');
    if (orderBy === undefined) throw new ClusterDdlError(`a MergeTree table without ORDER BY: ${head}`);
    const local = name + LOCAL_SUFFIX;
    const path = `'/clickhouse/tables/{shard}/{database}/${name}'`;
    const args = [path, `'{replica}'`, ...(engineArgs?.trim() ? [engineArgs.trim()] : [])].join(', ');
    const settings = replicatedSettings(clauses.get('SETTINGS'));
    // The clauses in their order, SETTINGS replaced (or added last).
    const body = [`ENGINE = Replicated${engine}(${args})`];
    for (const [clause, value] of clauses) if (clause !== 'SETTINGS') body.push(`${clause} ${value}`);
    body.push(`SETTINGS ${settings}`);
    return [
      `CREATE TABLE IF NOT EXISTS ${this.t(local)} ${this.onCluster}\n(${columns})\n${body.join('\n')}`,
      `CREATE TABLE IF NOT EXISTS ${this.t(name)} ${this.onCluster} AS ${this.t(local)}\n` +
        `ENGINE = Distributed(${quote(this.opts.cluster)}, ${quote(this.opts.database)}, ${quote(local)}, ${shardingKey(columns, orderBy)})`,
    ];
  }

  private materializedView(name: string, target: string, select: string, head: string): string {
    const sources = [...select.matchAll(DB_REF)];
    if (sources.length !== 1 || !new RegExp(`\\bFROM\\s+\\{db\\}\\.${sources[0]![1]}\\b`).test(select)) {
      throw new ClusterDdlError(`cannot run on a cluster, a materialized view must read exactly one table (FROM {db}.<table>, no joins or subqueries over others): ${head}`);
    }
    this.views.add(name);
    const local = select.replace(DB_REF, (_, source: string) => this.t(source + LOCAL_SUFFIX));
    return `CREATE MATERIALIZED VIEW IF NOT EXISTS ${this.t(name)} ${this.onCluster} TO ${this.t(target + LOCAL_SUFFIX)} AS\n${local}`;
  }

  private alterTable(name: string, actions: string, head: string): string[] {
    this.refuseView(name, head);
    for (const action of splitTopLevel(actions, ',')) {
      // A column is added to the replicated table and to the Distributed table reading it.
      if (!/^ADD COLUMN\b/i.test(action.trim())) {
        throw new ClusterDdlError(`cannot run on a cluster, unknown ALTER action (only ADD COLUMN is known): ${action.trim().slice(0, 80)}`);
      }
    }
    const body = actions.trim();
    return [`ALTER TABLE ${this.t(name + LOCAL_SUFFIX)} ${this.onCluster}\n    ${body}`, `ALTER TABLE ${this.t(name)} ${this.onCluster}\n    ${body}`];
  }

  private insertSelect(name: string, select: string, head: string): string {
    if (/\bSETTINGS\b/i.test(select)) throw new ClusterDdlError(`an INSERT ... SELECT with its own SETTINGS: ${head}`);
    // Through the Distributed tables: rows are read from every shard and each lands on the shard of
    // its sharding key, as the application's inserts do. In the foreground, so the migration fails
    // when a shard does. Not deduplicated: it follows a TRUNCATE that makes a retry exact, and a
    // retry's blocks equal the first attempt's, which the replicated dedup log would drop.
    return `INSERT INTO ${this.t(name)}\n${this.qualify(select)}\nSETTINGS ${BACKFILL_SETTINGS}`;
  }

  private qualify(sql: string): string {
    return sql.replace(DB_REF, (_, n: string) => this.t(n));
  }

  private refuseView(name: string, head: string): void {
    if (this.views.has(name)) throw new ClusterDdlError(`cannot run on a cluster, ${name} is a view: ${head}`);
  }
}

/** The clauses after ENGINE, by keyword; throws on text that is not one of them or a repeated one. */
function parseClauses(tail: string, head: string): Map<string, string> {
  const clauses = new Map<string, string>();
  const text = tail.trim();
  const marks = [...text.matchAll(TABLE_CLAUSES)].filter((m) => atTopLevel(text, m.index));
  if (text !== '' && (marks.length === 0 || marks[0]!.index !== 0)) {
    throw new ClusterDdlError(`cannot run on a cluster, unknown text after ENGINE: ${text.slice(0, 60)} (in ${head})`);
  }
  marks.forEach((m, i) => {
    const keyword = m[1]!;
    if (keyword === 'COMMENT') throw new ClusterDdlError(`cannot run on a cluster, a table COMMENT is not known: ${head}`);
    if (clauses.has(keyword)) throw new ClusterDdlError(`cannot run on a cluster, ${keyword} twice after ENGINE: ${head}`);
    const end = i + 1 < marks.length ? marks[i + 1]!.index : text.length;
    clauses.set(keyword, text.slice(m.index + keyword.length, end).trim());
  });
  return clauses;
}

/**
 * The table SETTINGS on a replicated table. A non-replicated dedup window becomes the replicated
 * one; a table without one gets replicated_deduplication_window = 0, so it behaves as it does on a
 * single server (no token-based dedup: its writes are idempotent by version, or want every row).
 */
function replicatedSettings(settings: string | undefined): string {
  const out: string[] = [];
  let window = 0;
  for (const item of settings === undefined ? [] : splitTopLevel(settings, ',')) {
    const m = item.trim().match(/^([a-z_]+)\s*=\s*(.+)$/);
    if (!m) throw new ClusterDdlError(`cannot run on a cluster, unknown table setting: ${item.trim()}`);
    if (m[1] === 'non_replicated_deduplication_window') window = Number(m[2]);
    else if (m[1] === 'replicated_deduplication_window') throw new ClusterDdlError('a migration sets replicated_deduplication_window itself');
    else out.push(`${m[1]} = ${m[2]!.trim()}`);
  }
  if (!Number.isInteger(window) || window < 0) throw new ClusterDdlError(`invalid non_replicated_deduplication_window: ${window}`);
  return [`replicated_deduplication_window = ${window}`, ...out].join(', ');
}

/**
 * How the Distributed table spreads rows: one project on one shard (cityHash64(project_id)), so a
 * project's queries, FINAL and GROUP BY project_id all run shard-locally and exactly. A table without
 * project_id is sharded by its sorting key, never rand(): rows that ReplacingMergeTree must collapse
 * (same key) have to meet on one shard. (projects is sorted by id, the project's id: the same hash.)
 */
function shardingKey(columns: string, orderBy: string): string {
  if (/(^|[(,\n])\s*project_id\s+/.test(columns)) return 'cityHash64(project_id)';
  const key = orderBy.trim().replace(/^\((.*)\)$/s, '$1').trim();
  if (key === '' || key === 'tuple()') throw new ClusterDdlError('a table without project_id and without a sorting key has no sharding key');
  return `cityHash64(${key})`;
}

/**
 * Walks `text` up to `end`, calling `visit` with each index outside parentheses and quotes;
 * returns whether `end` itself is outside them.
 */
function walkTopLevel(text: string, end: number, visit?: (i: number) => void): boolean {
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < end; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (depth === 0) visit?.(i);
  }
  return depth === 0 && quote === null;
}

/** `text` split on `sep` outside parentheses and quotes. */
function splitTopLevel(text: string, sep: string): string[] {
  const parts: string[] = [];
  let start = 0;
  walkTopLevel(text, text.length, (i) => {
    if (text[i] !== sep) return;
    parts.push(text.slice(start, i));
    start = i + 1;
  });
  parts.push(text.slice(start));
  return parts;
}

/** Whether position `at` of `text` is outside parentheses and quotes. */
function atTopLevel(text: string, at: number): boolean {
  return walkTopLevel(text, at);
}

function quote(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

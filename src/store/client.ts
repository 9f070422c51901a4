// One ClickHouse client API for both ways of running: embedded chDB under the data dir (default)
// or a ClickHouse server by URL. Same SQL and migrations either way.
import { mkdirSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { ClickHouseClient, ClickHouseClientConfigOptions, ClickHouseSettings } from '@clickhouse/client';
import { encodeTsv, type TsvColumns } from './tsv.js';
import { inlineParams } from './inline-params.js';
import { setEngineMallocConf } from './engine-malloc.js';

export interface StoreOptions {
  /** Embedded chDB data path; used when `url` is unset. */
  chdbPath?: string;
  url?: string;
  user?: string;
  password?: string;
  /** Database that holds our tables (created if missing). */
  database: string;
  /**
   * ClickHouse cluster (a server's remote_servers name; requires `url`): migrations create replicated
   * tables behind Distributed ones, ON CLUSTER (cluster-ddl.ts), and inserts wait for the shards.
   */
  cluster?: string;
}

/**
 * Queries and inserts: the store as every thread has it. On the pipeline thread it is a proxy that
 * calls the main thread's (pipeline/thread/remote.ts); what cannot cross a thread is in OpenedStore.
 */
export interface Store {
  readonly database: string;
  readonly embedded: boolean;
  /** The ClickHouse cluster the tables span (StoreOptions.cluster); undefined on one server or chDB. */
  readonly cluster?: string;
  /** Fully qualified, quoted table name. */
  table(name: string): string;
  query<T>(sql: string, params?: Record<string, unknown>): Promise<T[]>;
  /**
   * As `query`, for a request's read (the API's): beside the pipeline's queries, not behind them.
   * Embedded only (elsewhere `query` already is that): chdb-node runs the bound queries of the whole
   * process one at a time, and the queries of one connection one at a time, so this runs on read
   * connections of its own with its parameters written into the SQL (inline-params.ts).
   */
  readQuery?<T>(sql: string, params?: Record<string, unknown>): Promise<T[]>;
  /** As `query`, undecoded: JSONEachRow text (the pipeline thread decodes it on its own thread). */
  queryText(sql: string, params?: Record<string, unknown>): Promise<string>;
  command(sql: string, params?: Record<string, unknown>, settings?: ClickHouseSettings): Promise<void>;
  /**
   * Inserts rows as one block set. `dedupToken` is required: a redelivered insert with the same
   * token is dropped by ClickHouse, here and in every materialized view fed by the table.
   * (It must be explicit on every insert: chDB keeps SET values for the whole session, so a token
   * left over from an earlier insert would silently swallow the next one.)
   */
  insert(table: string, rows: readonly object[], dedupToken: string): Promise<void>;
  /** As `insert`, but TabSeparated with an explicit column list: the fast path for big batches. */
  insertTsv(table: string, columns: TsvColumns, rows: readonly Record<string, unknown>[], dedupToken: string): Promise<void>;
  /**
   * Embedded only (undefined on a server and on the pipeline thread): a read-only connection of its
   * own for an analyst's query (the SQL endpoint), on the same streaming sessions as `stream`.
   * `setup` statements (SETs, USE) run first, in order; the caller ends with `SET readonly = 1` so
   * nothing after can change them.
   */
  readSession?(setup: readonly string[]): Promise<ReadSession>;
  /** Inserts an already encoded JSONEachRow body (the pipeline thread encodes, this thread sends). */
  insertJsonBody(table: string, body: string, dedupToken: string): Promise<void>;
  /** Inserts an already encoded TabSeparated body (the pipeline thread encodes, this thread sends). */
  insertTsvBody(table: string, columnNames: readonly string[], body: string | Uint8Array, dedupToken: string): Promise<void>;
  close(): Promise<void>;
}

/** The store on the thread that opened it: also the raw client and streaming reads. */
export interface OpenedStore extends Store {
  readonly client: ClickHouseClient;
  /**
   * Streams a SELECT's JSONEachRow output in chunks, fetching the next only when the consumer asks,
   * so a result of any size takes the memory of a block or two. (`query` cannot: the embedded chDB
   * connection materialises the whole result first; here chDB streams on a session of its own over
   * the same data directory, one stream per session.) Breaking out of the loop cancels the query.
   */
  stream(sql: string, params?: Record<string, unknown>, signal?: AbortSignal): AsyncIterable<Buffer>;
}

export interface ReadSession {
  /** A small result, whole (EXPLAIN); `params` bind `{name:Type}` placeholders. */
  text(sql: string, format: string, params?: Record<string, unknown>): Promise<string>;
  /** A SELECT's output in `format` (a FORMAT clause in `sql` wins), block by block. */
  stream(sql: string, format: string, params?: Record<string, unknown>, signal?: AbortSignal): AsyncGenerator<{ bytes: Buffer; rows: number }>;
  close(): void;
}

const DB_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const CLUSTER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

export async function openStore(opts: StoreOptions): Promise<OpenedStore> {
  if (!DB_NAME.test(opts.database)) throw new Error(`invalid ClickHouse database name: ${opts.database}`);
  if (opts.cluster !== undefined && !opts.url) throw new Error('a ClickHouse cluster needs a ClickHouse server URL (chDB is one process)');
  if (opts.cluster !== undefined && !CLUSTER_NAME.test(opts.cluster)) throw new Error(`invalid ClickHouse cluster name: ${opts.cluster}`);
  let client: ClickHouseClient;
  let embedded = false;
  // Embedded only: chDB's raw insert hands the body to the engine as bytes, zero-copy, and builds
  // the statement on a libuv thread. The client's exec path would copy a lease's multi-megabyte
  // body into one SQL string on this thread, blocking it (and every request behind it) meanwhile.
  let rawInsert: RawInsert | undefined;
  // Loaded when a store opens: the CLI commands that only read this module's helpers start faster.
  const { createClient } = await import('@clickhouse/client');
  if (opts.url) {
    client = createClient({
      url: opts.url,
      username: opts.user ?? 'default',
      password: opts.password ?? '',
      clickhouse_settings: { output_format_json_quote_64bit_integers: 1, ...(opts.cluster !== undefined ? CLUSTER_QUERY_SETTINGS : {}) },
    });
  } else {
    if (!opts.chdbPath) throw new Error('either a ClickHouse URL or an embedded chDB path is required');
    mkdirSync(opts.chdbPath, { recursive: true });
    // Loaded lazily: a server deployment never loads the 500 MB engine. Its allocator reads its
    // setting when it loads (./engine-malloc.ts).
    setEngineMallocConf();
    const { createChdbConnection } = await import('chdb/connection');
    // The chdb package types the connection against @clickhouse/client-common while
    // @clickhouse/client bundles its own copy of the same interface: identical at run time.
    const chdb = createChdbConnection({ path: opts.chdbPath });
    rawInsert = (params) => chdb.chdb.rawInsert(params);
    const connection = chdb as unknown as ClickHouseClientConfigOptions['connection'];
    client = createClient({ connection });
    embedded = true;
  }
  const database = opts.database;
  const native = await nativeSessions(embedded ? opts.chdbPath : undefined);
  // A server takes bound parameters in the URL, and refuses a URL past 1 MiB (http_max_uri_size):
  // large ones (a request's 20,000 fingerprints) are written into the SQL, which goes in the body.
  const withParams = (sql: string, params: Record<string, unknown> | undefined): ServerCall =>
    opts.url !== undefined && params !== undefined && paramsSize(params) > URL_PARAMS_BYTES
      ? { query: inlineParams(sql, params), clickhouse_settings: { max_query_size: String(INLINED_MAX_QUERY_BYTES) } }
      : { query: sql, ...(params !== undefined ? { query_params: params } : {}) };
  const clustered = opts.cluster !== undefined;
  await client.command({
    query: clustered ? `CREATE DATABASE IF NOT EXISTS \`${database}\` ON CLUSTER '${opts.cluster}'` : `CREATE DATABASE IF NOT EXISTS \`${database}\``,
  });
  // Embedded: the pipeline's inserts yield to request reads (PRIORITY); a server schedules its own.
  const dedupSettings = (token: string) => (embedded ? { ...insertSettings(token, clustered), priority: PRIORITY.pipeline } : insertSettings(token, clustered));

  const store: OpenedStore = {
    client,
    database,
    embedded,
    ...(clustered ? { cluster: opts.cluster } : {}),
    table: (name) => `\`${database}\`.\`${name}\``,
    async query<T>(sql: string, params?: Record<string, unknown>) {
      if (native) return parseJsonEachRow<T>(await native.pointQuery(sql, params));
      const rs = await client.query({ ...withParams(sql, params), format: 'JSONEachRow' });
      return rs.json<T>();
    },
    async queryText(sql, params) {
      if (native) return native.pointQuery(sql, params);
      const rs = await client.query({ ...withParams(sql, params), format: 'JSONEachRow' });
      return rs.text();
    },
    async insertJsonBody(table, body, dedupToken) {
      if (body.length === 0) return;
      if (rawInsert) {
        await rawInsert({ table: `${database}.${table}`, values: body, format: 'JSONEachRow', settings: dedupSettings(dedupToken) });
        return;
      }
      await client.exec({
        query: `INSERT INTO ${store.table(table)} FORMAT JSONEachRow`,
        values: Readable.from([body]),
        clickhouse_settings: dedupSettings(dedupToken),
      });
    },
    async command(sql, params, settings) {
      const call = withParams(sql, params);
      await client.command({ ...call, clickhouse_settings: { ...settings, ...call.clickhouse_settings } });
    },
    async insert(table, rows, dedupToken) {
      if (rows.length === 0) return;
      if (rawInsert) {
        await store.insertJsonBody(table, rows.map((r) => JSON.stringify(r)).join('\n'), dedupToken);
        return;
      }
      await client.insert({
        table: store.table(table),
        values: rows,
        format: 'JSONEachRow',
        clickhouse_settings: dedupSettings(dedupToken),
      });
    },
    async insertTsv(table, columns, rows, dedupToken) {
      if (rows.length === 0) return;
      await store.insertTsvBody(table, columns.names, await encodeTsv(rows, columns.names, columns.plain), dedupToken);
    },
    async insertTsvBody(table, columnNames, body, dedupToken) {
      if (body.length === 0) return;
      if (rawInsert) {
        await rawInsert({ table: `${database}.${table}`, columns: columnNames, values: body, format: 'TabSeparated', settings: dedupSettings(dedupToken) });
        return;
      }
      await client.exec({
        query: `INSERT INTO ${store.table(table)} (${columnNames.map((c) => `\`${c}\``).join(', ')}) FORMAT TabSeparated`,
        values: Readable.from([typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength)]),
        clickhouse_settings: dedupSettings(dedupToken),
      });
    },
    async *stream(sql, params, signal) {
      if (native) {
        yield* native(sql, params, signal);
        return;
      }
      const call = withParams(sql, params);
      const rs = await client.exec({ ...call, query: `${call.query}\nFORMAT JSONEachRow`, abort_signal: signal });
      yield* rs.stream as AsyncIterable<Buffer>;
    },
    ...(native
      ? {
          readSession: (setup: readonly string[]) => native.readSession(setup),
          readQuery: async <T>(sql: string, params?: Record<string, unknown>) => parseJsonEachRow<T>(await native.readQuery(sql, params)),
        }
      : {}),
    async close() {
      native?.closeAll();
      await client.close();
    },
  };
  return store;
}

type RawInsert = (params: {
  table: string;
  values: string | Uint8Array;
  format: 'TabSeparated' | 'JSONEachRow';
  columns?: readonly string[];
  settings: Record<string, string | number>;
}) => Promise<unknown>;

/**
 * Every query's settings on a cluster (docs/clickhouse-cluster.md "Sharding key"). Every table is
 * sharded by the project (cityHash64(project_id), projects by its id: the same hash), so a project's rows of
 * every table sit on one shard: an IN/JOIN subquery over another Distributed table can read that
 * table's local replica on each shard (`local`; the default `deny` refuses it), and a query naming
 * one project reads one shard. `in_order` sends reads and writes to the first live replica of each
 * shard, so a process reads what it just wrote (the other replica may not have fetched it yet).
 */
export const CLUSTER_QUERY_SETTINGS = {
  distributed_product_mode: 'local',
  optimize_skip_unused_shards: 1,
  load_balancing: 'in_order',
} as const satisfies ClickHouseSettings;

/**
 * Every insert names its deduplication token (see `Store.insert`), also for the views it feeds. On a
 * cluster (docs/clickhouse-cluster.md) the insert goes through a Distributed table: in the foreground,
 * so it returns once every shard's replicated table has its block (the worker commits a lease only
 * then, and reads its own writes next), and with deduplication on explicitly, so a retried insert
 * with the same token is dropped by each shard's replicated table and by the views fed there.
 */
export function insertSettings(token: string, clustered: boolean): Record<string, string | number> {
  const settings: Record<string, string | number> = { insert_deduplication_token: token, deduplicate_blocks_in_dependent_materialized_views: 1 };
  if (clustered) Object.assign(settings, { insert_deduplicate: 1, distributed_foreground_insert: 1 });
  return settings;
}

/** Connections for request reads (Store.readQuery). */
const READ_CONNECTIONS = 2;

/**
 * The longest SQL a query may be once its parameters are written in (inline-params.ts: the request
 * reads on chDB, large parameters on a server). A bound query has no such limit, and the values
 * come from a request or from the store (an owner's test ids), so this is a ceiling on memory, not
 * a rule of the API: 256 MiB. The engine's default, 256 KiB, is what a written-in query met.
 */
const INLINED_MAX_QUERY_BYTES = 256 * 1024 * 1024;

/** Parameters (as JSON) above this go into the SQL on a server: their URL encoding stays far below 1 MiB. */
const URL_PARAMS_BYTES = 128 * 1024;

/** The parameters' size as JSON (a bigint as its digits: the client binds it so). */
function paramsSize(params: Record<string, unknown>): number {
  return JSON.stringify(params, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)).length;
}

/** A query as the client sends it: its parameters bound (in the URL), or written into its SQL. */
interface ServerCall {
  query: string;
  query_params?: Record<string, unknown>;
  clickhouse_settings?: ClickHouseSettings;
}

/**
 * ClickHouse query priorities (the `priority` setting: lower runs first; a query of a lower
 * priority pauses while one of a higher runs) on the embedded engine, where the pipeline's writes
 * and point queries share two cores with a request's read: the read goes first.
 */
const PRIORITY = { read: 1, pipeline: 2 } as const;

type NativeSessions = ((sql: string, params: Record<string, unknown> | undefined, signal: AbortSignal | undefined) => AsyncGenerator<Buffer>) & {
  readSession(setup: readonly string[]): Promise<ReadSession>;
  /** One query's whole JSONEachRow result as text. */
  pointQuery(sql: string, params: Record<string, unknown> | undefined): Promise<string>;
  /** As `pointQuery`, on a read connection, unbound (Store.readQuery). */
  readQuery(sql: string, params: Record<string, unknown> | undefined): Promise<string>;
  closeAll(): void;
};

/** JSONEachRow text as rows. A row is one line: JSON escapes the newlines inside strings. */
function parseJsonEachRow<T>(text: string): T[] {
  const body = text.trimEnd();
  return body === '' ? [] : (JSON.parse(`[${body.replaceAll('\n', ',')}]`) as T[]);
}

/**
 * chDB's native sessions: one for point queries, and one per stream, closed when the stream ends
 * or the store closes. Point queries skip the client's HTTP-shaped layer (a Readable per result,
 * parsed again by the client): 2.5 -> 1 ms of CPU for `SELECT 1`, and about 2 ms off every read.
 */
async function nativeSessions(chdbPath: string | undefined): Promise<NativeSessions | undefined> {
  if (chdbPath === undefined) return undefined;
  const { Session } = await import('chdb');
  const open = new Set<InstanceType<typeof Session>>();
  const points = new Session(chdbPath);
  // Chiefly the pipeline's reads (and requests' reads not yet on readQuery): after request reads.
  await points.queryAsync(`SET priority = ${PRIORITY.pipeline}`, { format: 'TSV' });
  // Request reads (Store.readQuery): connections opened when first needed (an idle daemon holds
  // none) and kept; two, so one slow read does not hold up the next request's.
  const idleReaders: InstanceType<typeof Session>[] = [];
  let readers = 0;
  const waitingForReader: ((s: InstanceType<typeof Session>) => void)[] = [];
  const takeReader = async (): Promise<InstanceType<typeof Session>> => {
    const idle = idleReaders.pop();
    if (idle) return idle;
    if (readers < READ_CONNECTIONS) {
      readers++;
      const session = new Session(chdbPath);
      open.add(session);
      try {
        await session.queryAsync(`SET priority = ${PRIORITY.read}`, { format: 'TSV' });
        // Parameters are written into the SQL here, and the engine parses at most max_query_size
        // (256 KiB by default) of it: a health page filtered to an owner of 7,000 tests was past that.
        await session.queryAsync(`SET max_query_size = ${INLINED_MAX_QUERY_BYTES}`, { format: 'TSV' });
      } catch (err) {
        readers--;
        open.delete(session);
        session.close();
        throw err;
      }
      return session;
    }
    return new Promise((resolve) => waitingForReader.push(resolve));
  };
  const giveBackReader = (session: InstanceType<typeof Session>) => {
    const next = waitingForReader.shift();
    if (next) next(session);
    else idleReaders.push(session);
  };
  const run = async function* (sql: string, params: Record<string, unknown> | undefined, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
    const session = new Session(chdbPath);
    open.add(session);
    try {
      for await (const chunk of session.queryStreamBind(sql, params ?? {}, { format: 'JSONEachRow', signal })) {
        const raw = chunk.raw();
        yield Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      }
    } finally {
      open.delete(session);
      session.close();
    }
  };
  const readSession = async (setup: readonly string[]): Promise<ReadSession> => {
    const session = new Session(chdbPath);
    open.add(session);
    const close = () => {
      open.delete(session);
      session.close();
    };
    try {
      for (const statement of setup) await session.queryAsync(statement, { format: 'TSV' });
    } catch (err) {
      close();
      throw err;
    }
    return {
      async text(sql, format, params) {
        return (await session.queryBindAsync(sql, params ?? {}, { format })).text();
      },
      async *stream(sql, format, params, signal) {
        for await (const chunk of session.queryStreamBind(sql, params ?? {}, { format, signal })) {
          const raw = chunk.raw();
          yield { bytes: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), rows: chunk.numRows };
        }
      },
      close,
    };
  };
  return Object.assign(run, {
    readSession,
    async pointQuery(sql: string, params: Record<string, unknown> | undefined) {
      return (await points.queryBindAsync(sql, params ?? {}, { format: 'JSONEachRow' })).text();
    },
    async readQuery(sql: string, params: Record<string, unknown> | undefined) {
      const text = inlineParams(sql, params);
      const session = await takeReader();
      try {
        return (await session.queryAsync(text, { format: 'JSONEachRow' })).text();
      } finally {
        giveBackReader(session);
      }
    },
    closeAll() {
      for (const s of open) s.close();
      open.clear();
      idleReaders.length = 0;
      points.close();
    },
  });
}

// toNumber lives in ./numbers.ts: repositories and row mappers convert without loading this module.
export { toNumber } from './numbers.js';

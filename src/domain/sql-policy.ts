// The SQL endpoint's rules (docs/sql.md), as pure functions over what the engine
// reports about a query: EXPLAIN AST (the parse) and EXPLAIN QUERY TREE (the resolved tables,
// table functions and functions). Rows are scoped by the engine itself (additional_table_filters,
// readonly = 1); what is decided here is which statements, tables and functions a query may name
// at all, which the engine's settings cannot express. Unknown shapes are refused, never passed.

/** What EXPLAIN AST shows of a statement. */
export interface AstSummary {
  /** The root node: `SelectWithUnionQuery` for every SELECT (UNION, EXCEPT, WITH included). */
  root: string;
  /** The FORMAT clause's format, if any. */
  format?: string;
  /** Other children of the root: `Literal` (INTO OUTFILE), `Set` (SETTINGS), …: never allowed. */
  extras: string[];
  /** Every function the statement calls, scalar or table, as written. */
  functions: string[];
  /** Functions in a FROM / JOIN position: table functions. */
  tableFunctions: string[];
  /** Tables as written (`db.table` or `table`; a CTE's name too). */
  tables: string[];
}

/** EXPLAIN AST output (one node a line, one space of indent a level). */
export function summarizeAst(text: string): AstSummary {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const nodes = lines.map((l) => {
    const depth = l.length - l.trimStart().length;
    const [kind = '', name = ''] = l.trim().split(/\s+/, 2);
    return { depth, kind, name };
  });
  const summary: AstSummary = { root: nodes[0]?.kind ?? '', extras: [], functions: [], tableFunctions: [], tables: [] };
  const parents: string[] = [];
  let firstChild = true;
  for (const n of nodes.slice(1)) {
    parents.length = n.depth;
    parents[n.depth] = n.kind;
    if (n.depth === 1) {
      if (firstChild && n.kind === 'ExpressionList') firstChild = false;
      else if (n.kind === 'Identifier' && summary.format === undefined) summary.format = n.name;
      else summary.extras.push(n.kind);
    }
    if (n.kind === 'TableIdentifier') summary.tables.push(n.name);
    if (n.kind === 'Function') {
      summary.functions.push(n.name);
      if (parents[n.depth - 1] === 'TableExpression') summary.tableFunctions.push(n.name);
    }
  }
  return summary;
}

/** What EXPLAIN QUERY TREE resolves: qualified table names, table functions, functions, and the columns read from each table. */
export interface QueryTreeRefs {
  tables: string[];
  tableFunctions: string[];
  functions: string[];
  /** Columns whose source is a table (`db.table`), as resolved: `SELECT *` is every column. */
  columns: { table: string; column: string }[];
  /** A PREWHERE clause anywhere in the query. */
  prewhere?: boolean;
}

export function queryTreeRefs(text: string): QueryTreeRefs {
  const refs: QueryTreeRefs = { tables: [], tableFunctions: [], functions: [], columns: [] };
  const tableOf = new Map<string, string>();
  const columns: { column: string; source: string }[] = [];
  for (const line of text.split('\n')) {
    const l = line.trimStart();
    const field = (name: string): string | undefined => new RegExp(`(?:^|, )${name}: (.+?)(?:, [a-z_]+: |$)`).exec(l)?.[1];
    const id = /^[A-Z_]+ id: (\d+)/.exec(l)?.[1];
    if (l.trimEnd() === 'PREWHERE') refs.prewhere = true;
    if (l.startsWith('TABLE id:')) {
      const table = field('table_name') ?? '?';
      refs.tables.push(table);
      if (id !== undefined) tableOf.set(id, table);
    } else if (l.startsWith('TABLE_FUNCTION id:')) refs.tableFunctions.push(field('table_function_name') ?? '?');
    else if (l.startsWith('FUNCTION id:')) refs.functions.push(field('function_name') ?? '?');
    else if (l.startsWith('COLUMN id:')) {
      const source = field('source_id');
      if (source !== undefined) columns.push({ column: field('column_name') ?? '?', source });
    }
  }
  // A node's id is unique in the whole dump, and a column may be printed before its table.
  for (const c of columns) {
    const table = tableOf.get(c.source);
    if (table !== undefined && !refs.columns.some((r) => r.table === table && r.column === c.column)) refs.columns.push({ table, column: c.column });
  }
  return refs;
}

/** Table functions a project token may use: generators that read no table, file or host. */
export const PROJECT_TABLE_FUNCTIONS: readonly string[] = ['numbers', 'numbers_mt', 'zeros', 'zeros_mt', 'generateSeries', 'generate_series', 'values'];
/** The admin token's: also merge() and view(), which stay inside the engine's tables. */
export const ADMIN_TABLE_FUNCTIONS: readonly string[] = [...PROJECT_TABLE_FUNCTIONS, 'merge', 'view'];

/**
 * Functions that reach past the row filters or out of the engine: files on the daemon's disk
 * (its own data files included), dictionaries and Join tables (read whole, unfiltered), models
 * loaded from paths. Refused for every token.
 */
export function isForbiddenFunction(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'file' || n.startsWith('dict') || n.startsWith('joinget') || n === 'hascolumnintable' || n === 'catboostevaluate' || n === 'naivebayesclassifier';
}

export interface SqlPrincipal {
  admin: boolean;
  /** Qualified `db.table` names the principal may read (admin: ignored, every table). */
  readable: ReadonlySet<string>;
  /** The engine's table functions that are not also ordinary functions, lower-cased (refused wherever named). */
  engineTableFunctions: ReadonlySet<string>;
}

/** A refusal reason for the parse, or null. */
export function refuseAst(ast: AstSummary, p: SqlPrincipal): string | null {
  if (ast.root !== 'SelectWithUnionQuery') return `only SELECT queries are served (the endpoint is read-only); got ${describeStatement(ast.root)}`;
  if (ast.extras.includes('Set')) return 'a SETTINGS clause cannot change settings here; pass allowed settings as URL parameters';
  if (ast.extras.length > 0) return 'INTO OUTFILE and other clauses after the query are not allowed';
  // Before the engine resolves anything: a system table chDB lacks would otherwise be "unknown".
  if (!p.admin) for (const t of ast.tables) if (isSystemTable(t) && !isSchemaTable(t)) return systemRefusal(t);
  const allowed = allowedTableFunctions(p);
  for (const f of ast.tableFunctions) if (!allowed.has(f.toLowerCase())) return tableFunctionRefusal(f, p);
  for (const f of ast.functions) {
    if (isForbiddenFunction(f)) return `the function ${f}() is not allowed: it reads outside the tables' row filters`;
    // A table function's name anywhere else (IN url(…), say) is refused too, unless it is allowed.
    if (p.engineTableFunctions.has(f.toLowerCase()) && !allowed.has(f.toLowerCase())) {
      return tableFunctionRefusal(f, p);
    }
  }
  return null;
}

/** A refusal reason for the resolved query, or null. */
export function refuseQueryTree(tree: QueryTreeRefs, p: SqlPrincipal): string | null {
  const allowed = allowedTableFunctions(p);
  for (const f of tree.tableFunctions) if (!allowed.has(f.toLowerCase())) return tableFunctionRefusal(f, p);
  for (const f of tree.functions) if (isForbiddenFunction(f)) return `the function ${f}() is not allowed: it reads outside the tables' row filters`;
  if (!p.admin) {
    // The engine evaluates PREWHERE on every project's rows before the row filter: an error it
    // raises (throwIf, a bad cast) would tell whether another project's rows match.
    if (tree.prewhere) return 'PREWHERE is not allowed with a project token (it runs before the project filter); write the condition in WHERE';
    for (const t of tree.tables) {
      // system.one is what a SELECT without FROM reads; system.tables and system.columns are
      // filtered by the engine to the readable tables (see schemaTableFilters).
      if (t === 'system.one' || p.readable.has(t) || isSchemaTable(t)) continue;
      if (isSystemTable(t)) return systemRefusal(t);
      return `the table ${t} is not readable with a project token`;
    }
    for (const { table, column } of tree.columns) {
      const open = SCHEMA_TABLE_COLUMNS[table];
      if (open && !open.includes(column)) {
        return `the column ${column} of ${table} is closed to project tokens (it describes every project's data or the server's disk); readable: ${open.join(', ')}`;
      }
    }
  }
  return null;
}

/**
 * The system tables a project token may read, and their columns it may name: the schema of the
 * tables it reads, nothing that counts or sizes them (their rows are every project's) or locates
 * them on disk. The engine filters their rows to those tables (schemaTableFilters).
 */
export const SCHEMA_TABLE_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  'system.databases': ['name', 'database', 'engine', 'comment'],
  'system.tables': [
    'database', 'name', 'table', 'engine', 'engine_full', 'is_temporary', 'create_table_query', 'as_select',
    'partition_key', 'sorting_key', 'primary_key', 'sampling_key', 'comment',
  ],
  'system.columns': [
    'database', 'table', 'name', 'column', 'type', 'position', 'default_kind', 'default_expression', 'comment',
    'is_in_partition_key', 'is_in_sorting_key', 'is_in_primary_key', 'is_in_sampling_key', 'compression_codec',
    'character_octet_length', 'numeric_precision', 'numeric_precision_radix', 'numeric_scale', 'datetime_precision',
  ],
};

function isSchemaTable(name: string): boolean {
  return Object.hasOwn(SCHEMA_TABLE_COLUMNS, name);
}

/**
 * The `additional_table_filters` entries of system.databases, system.tables and system.columns for
 * a project token: `database` and its readable tables only (never another database's, nor a closed
 * table's).
 */
export function schemaTableFilters(database: string, tables: readonly string[]): Map<string, string> {
  const list = tables.length === 0 ? "''" : tables.map(sqlString).join(', ');
  return new Map([
    ['system.databases', `name = ${sqlString(database)}`],
    ['system.tables', `database = ${sqlString(database)} AND name IN (${list})`],
    ['system.columns', `database = ${sqlString(database)} AND table IN (${list})`],
  ]);
}

function isSystemTable(name: string): boolean {
  const n = name.toLowerCase();
  return n.startsWith('system.') || n.startsWith('information_schema.');
}

function systemRefusal(table: string): string {
  return `the system database is closed to project tokens (${table}), but for system.tables, system.columns and system.databases`;
}

/** What a schema statement becomes: a SELECT to run in its place, or a refusal. */
export type SchemaRewrite = { ok: true; sql: string } | { ok: false; reason: string };

export interface SchemaContext {
  admin: boolean;
  /** The query's current database (the `database` parameter). */
  database: string;
  /** The store's database: the only one a project token reads. */
  storeDatabase: string;
  /** Qualified `db.table` names the principal may read (admin: ignored). */
  readable: ReadonlySet<string>;
}

const IDENT = '(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`\\\\]|\\\\.)*`)';
const FORMAT_TAIL = '(?: FORMAT ([A-Za-z][A-Za-z0-9_]*))?';
const SHOW_TABLES = new RegExp(`^SHOW TABLES(?: FROM (${IDENT}))?(?: (NOT )?(I?LIKE) ('(?:[^'\\\\]|\\\\.)*'))?(?: LIMIT (\\d{1,18}))?${FORMAT_TAIL}$`, 'i');
const DESCRIBE = new RegExp(`^DESCRIBE TABLE (?:(${IDENT})\\.)?(${IDENT})${FORMAT_TAIL}$`, 'i');
const SHOW_DATABASES = new RegExp(`^SHOW DATABASES${FORMAT_TAIL}$`, 'i');

/** The schema statements served, for refusals. */
export const SCHEMA_STATEMENTS = "SHOW TABLES [FROM db] [[NOT] [I]LIKE 'pattern'] [LIMIT n], DESCRIBE [TABLE] table, SHOW DATABASES, and SELECTs over system.tables, system.columns and system.databases";

/**
 * SHOW TABLES, DESCRIBE TABLE and SHOW DATABASES, as the engine normalizes them
 * (formatQuerySingleLine), rewritten into SELECTs over system.tables and system.columns, which then
 * go through the same checks and engine filters as any query; null for any other statement. Other
 * SHOW and DESCRIBE shapes are refused: only those read here are known to stay in the filters.
 */
export function rewriteSchemaStatement(normalized: string, ctx: SchemaContext): SchemaRewrite | null {
  const text = normalized.trim();
  const tail = (format: string | undefined) => (format ? ` FORMAT ${format}` : '');
  let m = SHOW_TABLES.exec(text);
  if (m) {
    const [, db, not, op, pattern, limit, format] = m;
    const database = db !== undefined ? unquoteIdentifier(db) : ctx.database;
    if (!ctx.admin && database !== ctx.storeDatabase) return { ok: false, reason: `a project token reads only the database ${ctx.storeDatabase} (SHOW TABLES FROM ${database})` };
    const like = pattern !== undefined ? ` AND name ${not ? 'NOT ' : ''}${op!.toUpperCase()} ${pattern}` : '';
    return { ok: true, sql: `SELECT name FROM system.tables WHERE database = ${sqlString(database)}${like} ORDER BY name${limit !== undefined ? ` LIMIT ${limit}` : ''}${tail(format)}` };
  }
  m = DESCRIBE.exec(text);
  if (m) {
    const [, db, t, format] = m;
    const database = db !== undefined ? unquoteIdentifier(db) : ctx.database;
    const table = unquoteIdentifier(t!);
    const qualified = `${database}.${table}`;
    if (!ctx.admin && !ctx.readable.has(qualified)) {
      if (isSystemTable(qualified)) return { ok: false, reason: `DESCRIBE reads the tables a project token may query; the system database is closed to it (${qualified})` };
      return { ok: false, reason: `the table ${qualified} is not readable with a project token` };
    }
    return {
      ok: true,
      sql:
        "SELECT name, type, default_kind AS default_type, default_expression, comment, compression_codec AS codec_expression, '' AS ttl_expression " +
        `FROM system.columns WHERE database = ${sqlString(database)} AND table = ${sqlString(table)} ORDER BY position${tail(format)}`,
    };
  }
  m = SHOW_DATABASES.exec(text);
  if (m) {
    const format = m[1];
    // A project token's system.databases is filtered to the store's database.
    return { ok: true, sql: `SELECT name FROM system.databases ORDER BY name${tail(format)}` };
  }
  if (/^(SHOW|DESCRIBE|DESC)\b/i.test(text)) return { ok: false, reason: `of SHOW and DESCRIBE statements only ${SCHEMA_STATEMENTS} are served; got ${text.split(' ').slice(0, 3).join(' ')}` };
  return null;
}

/** An identifier as written by the engine: bare, or in backquotes with backslash escapes. */
function unquoteIdentifier(id: string): string {
  if (!id.startsWith('`')) return id;
  return id.slice(1, -1).replace(/\\(.)/g, '$1');
}

function allowedTableFunctions(p: SqlPrincipal): Set<string> {
  return new Set((p.admin ? ADMIN_TABLE_FUNCTIONS : PROJECT_TABLE_FUNCTIONS).map((f) => f.toLowerCase()));
}

function tableFunctionRefusal(name: string, p: SqlPrincipal): string {
  return `the table function ${name}() is not allowed (allowed: ${(p.admin ? ADMIN_TABLE_FUNCTIONS : PROJECT_TABLE_FUNCTIONS).join(', ')})`;
}

function describeStatement(root: string): string {
  return root.replace(/Query$/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase() || 'an empty statement';
}

/** ClickHouse's `Code: N. DB::Exception: … (NAME)` text: its code and name, when it has them. */
export function clickhouseErrorOf(message: string): { code: number; name: string; text: string } | null {
  const m = /Code: (\d+)\.[\s\S]*\(([A-Z][A-Z0-9_]+)\)[^()]*$/.exec(message);
  if (!m) return null;
  const start = message.indexOf('Code: ');
  return { code: Number(m[1]), name: m[2]!, text: message.slice(start).trim() };
}

/** A ClickHouse string literal. */
export function sqlString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * The `additional_table_filters` value: each table of the project's to its row filter; every other
 * table of the database to `0` (no rows), so a table nobody classified reads as empty.
 */
export function tableFiltersSetting(filters: ReadonlyMap<string, string>): string {
  return `{${[...filters].map(([table, filter]) => `${sqlString(table)}: ${sqlString(filter)}`).join(', ')}}`;
}

/** The settings an analyst may pass as URL parameters (each a ClickHouse setting). */
export const URL_SETTINGS: readonly string[] = [
  'max_execution_time',
  'max_result_rows',
  'max_memory_usage',
  'max_threads',
  'max_block_size',
  'extremes',
  'join_use_nulls',
  'date_time_output_format',
  'output_format_json_quote_64bit_integers',
  'output_format_json_quote_64bit_floats',
  'output_format_json_quote_denormals',
  'output_format_json_named_tuples_as_objects',
  'output_format_json_escape_forward_slashes',
  'output_format_json_validate_utf8',
  'output_format_decimal_trailing_zeros',
  'output_format_csv_crlf_end_of_line',
  'output_format_tsv_crlf_end_of_line',
  'format_csv_delimiter',
  'output_format_pretty_max_rows',
  'output_format_pretty_color',
  'output_format_write_statistics',
  'session_timezone',
  'enable_analyzer',
];

/** URL parameters of the ClickHouse HTTP interface handled by the endpoint itself. */
export const URL_PARAMS: readonly string[] = [
  'query',
  'database',
  'default_format',
  'query_id',
  'user',
  'password',
  'enable_http_compression',
  'http_zlib_compression_level',
  // Accepted and without effect here: results always stream, without progress headers.
  'wait_end_of_query',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'http_wait_end_of_query',
  'cancel_http_readonly_queries_on_client_close',
  'readonly',
];

/** Rows per result block unless the query asks otherwise: ~1 MB of JSON for an execution row. */
export const DEFAULT_BLOCK_ROWS = 1024;

/** The limits no URL parameter may raise. */
export interface SqlLimits {
  maxExecutionTimeSec: number;
  maxResultRows: number;
  maxMemoryBytes: number;
  maxThreads: number;
}

export type SqlSettingsResult = { ok: true; statements: string[] } | { ok: false; path: string; message: string };

const CAPPED: Record<string, keyof SqlLimits> = {
  max_execution_time: 'maxExecutionTimeSec',
  max_result_rows: 'maxResultRows',
  max_memory_usage: 'maxMemoryBytes',
  max_threads: 'maxThreads',
};

/**
 * The SET statements for one query from its URL parameters: allowed settings as given (limits no
 * higher than the server's), the server's limits otherwise, results that overflow a limit fail.
 */
export function settingsStatements(params: Readonly<Record<string, string>>, limits: SqlLimits): SqlSettingsResult {
  const values = new Map<string, string>();
  for (const [name, value] of Object.entries(params)) {
    if (URL_PARAMS.includes(name) || name.startsWith('param_')) continue;
    if (!URL_SETTINGS.includes(name)) {
      return { ok: false, path: name, message: `the setting ${name} cannot be set here (allowed: ${URL_SETTINGS.join(', ')})` };
    }
    const cap = CAPPED[name];
    if (cap) {
      const n = Number(value);
      if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(n)) return { ok: false, path: name, message: `${name} must be a non-negative number` };
      // 0 means "no limit" to ClickHouse: here it means the server's limit.
      values.set(name, String(n === 0 ? limits[cap] : Math.min(n, limits[cap])));
      continue;
    }
    values.set(name, /^-?\d+(\.\d+)?$/.test(value) ? value : sqlString(value));
  }
  for (const [name, cap] of Object.entries(CAPPED)) if (!values.has(name)) values.set(name, String(limits[cap]));
  if (params.readonly !== undefined && !['1', '2'].includes(params.readonly)) {
    return { ok: false, path: 'readonly', message: 'the endpoint is read-only: readonly must be 1 (or 2)' };
  }
  // Small blocks: each is one streamed chunk, and the engine's memory grows with the chunk (the
  // export measured +200 MB resident with 7 MB chunks, +88 MB with 1 MB ones).
  if (!values.has('max_block_size')) values.set('max_block_size', String(DEFAULT_BLOCK_ROWS));
  // The new analyzer reads whole 8,192-row granules under a filter (and every project query has
  // one) whatever max_block_size says: streaming 1M executions grew chDB by 223 MB with it, 61 MB
  // without. A query that needs it can ask for enable_analyzer=1.
  if (!values.has('enable_analyzer')) values.set('enable_analyzer', '0');
  // A ClickHouse server's default (chDB's is 0): JSON clients expect 64-bit integers as strings.
  if (!values.has('output_format_json_quote_64bit_integers')) values.set('output_format_json_quote_64bit_integers', '1');
  // The query's threads at the lowest CPU priority: ingest, on the same cores, goes first.
  values.set('os_thread_priority', '19');
  values.set('result_overflow_mode', "'throw'");
  values.set('timeout_overflow_mode', "'throw'");
  return { ok: true, statements: [...values].map(([n, v]) => `SET ${n} = ${v}`) };
}

/** The Content-Type ClickHouse sends for a format. */
export function formatContentType(format: string): string {
  const f = format.toLowerCase();
  if (f === 'json' || f === 'jsoncompact' || f === 'jsonstrings' || f === 'jsoncompactstrings' || f === 'jsoncolumns') return 'application/json; charset=UTF-8';
  if (f.startsWith('json')) return 'application/x-ndjson; charset=UTF-8';
  if (f.startsWith('csv')) return 'text/csv; charset=UTF-8; header=absent';
  if (f.startsWith('tsv') || f.startsWith('tabseparated')) return 'text/tab-separated-values; charset=UTF-8';
  if (['native', 'rowbinary', 'rowbinarywithnames', 'rowbinarywithnamesandtypes', 'parquet', 'arrow', 'arrowstream', 'orc', 'avro', 'msgpack'].includes(f)) {
    return 'application/octet-stream';
  }
  return 'text/plain; charset=UTF-8';
}

/**
 * Credentials as ClickHouse clients send them: basic auth, X-ClickHouse-User/Key, a bearer token.
 * Not a `password` URL parameter, which ClickHouse takes: proxies and shell histories keep URLs whole
 * (our own log redacts it, but a secret in a URL leaks elsewhere).
 */
export function sqlCredentials(headers: Readonly<Record<string, string | string[] | undefined>>): { user?: string; password: string } | null {
  const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);
  const key = one(headers['x-clickhouse-key']);
  if (key !== undefined) return { user: one(headers['x-clickhouse-user']), password: key };
  const authorization = one(headers.authorization);
  if (authorization) {
    const basic = /^Basic\s+(\S+)\s*$/i.exec(authorization);
    if (basic) {
      const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) return null;
      return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
    }
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return bearer ? { password: bearer[1]! } : null;
  }
  return null;
}

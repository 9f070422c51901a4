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

/** What EXPLAIN QUERY TREE resolves: qualified table names, table functions, functions. */
export interface QueryTreeRefs {
  tables: string[];
  tableFunctions: string[];
  functions: string[];
}

export function queryTreeRefs(text: string): QueryTreeRefs {
  const refs: QueryTreeRefs = { tables: [], tableFunctions: [], functions: [] };
  for (const line of text.split('\n')) {
    const l = line.trimStart();
    const field = (name: string): string | undefined => new RegExp(`(?:^|, )${name}: (.+?)(?:, [a-z_]+: |$)`).exec(l)?.[1];
    if (l.startsWith('TABLE id:')) refs.tables.push(field('table_name') ?? '?');
    else if (l.startsWith('TABLE_FUNCTION id:')) refs.tableFunctions.push(field('table_function_name') ?? '?');
    else if (l.startsWith('FUNCTION id:')) refs.functions.push(field('function_name') ?? '?');
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
  if (!p.admin) for (const t of ast.tables) if (isSystemTable(t)) return systemRefusal(t);
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
    for (const t of tree.tables) {
      // system.one is what a SELECT without FROM reads.
      if (t === 'system.one' || p.readable.has(t)) continue;
      if (isSystemTable(t)) return systemRefusal(t);
      return `the table ${t} is not readable with a project token`;
    }
  }
  return null;
}

function isSystemTable(name: string): boolean {
  const n = name.toLowerCase();
  return n.startsWith('system.') || n.startsWith('information_schema.');
}

function systemRefusal(table: string): string {
  return `the system database is closed to project tokens (${table})`;
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

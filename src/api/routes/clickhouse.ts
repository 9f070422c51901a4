// The ClickHouse HTTP interface, read-only, over the embedded store (docs/sql.md):
// /clickhouse on the main port (and / on SERVICE_SQL_PORT). ClickHouse clients connect with user =
// the project's slug (or `admin`) and password = the token.
//
// Who sees what is the engine's job: every query runs on a chDB session of its own where
// additional_table_filters pins each project-scoped table to the token's project, and readonly = 1
// is set last, so neither the query nor its SETTINGS can write or change a setting. Before it runs,
// the engine normalizes the text to one statement (formatQuerySingleLine: a second statement is a
// syntax error) and explains it twice, and src/domain/sql-policy.ts refuses what the settings cannot:
// statements other than SELECT, INTO OUTFILE, table functions outside an allow-list, functions
// that read files or dictionaries, and (for project tokens) the system database and tables that
// are not the project's. What runs is that checked, normalized text. Schema discovery: SHOW TABLES,
// DESCRIBE and SHOW DATABASES are rewritten into SELECTs over system.tables / columns / databases, which
// a project token reads filtered (additional_table_filters) to its readable tables, naming only
// the columns that describe them (not those that count every project's rows).
import { randomUUID } from 'node:crypto';
import { Readable, pipeline } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import {
  clickhouseErrorOf,
  formatContentType,
  queryTreeRefs,
  refuseAst,
  refuseQueryTree,
  rewriteSchemaStatement,
  schemaTableFilters,
  settingsStatements,
  sqlCredentials,
  sqlString,
  summarizeAst,
  tableFiltersSetting,
  type SqlLimits,
  type SqlPrincipal,
} from '../../domain/sql-policy.js';
import type { ReadSession, Store } from '../../store/client.js';
import type { ProjectRepo, TokenPrincipal } from '../../store/projects.js';
import type { Authenticator } from '../auth.js';
import { ApiError, errors } from '../../errors/catalogue.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export interface SqlEndpointOptions {
  store: Store;
  projects: ProjectRepo;
  auth: Authenticator;
  limits: SqlLimits;
  maxConcurrent: number;
  logger: Logger;
}

/** Tables a project token never reads, though they hold its rows: they keep secrets (token hashes, webhook signing secrets). */
const CLOSED_TABLES: ReadonlySet<string> = new Set(['tokens', 'notification_channels']);

interface Schema {
  /** table → the column that holds its project's id; tables not here are closed to project tokens. */
  projectColumn: Map<string, string>;
  /** Every table and view of the database. */
  all: string[];
  engineTableFunctions: Set<string>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const QUERY_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

interface Caller {
  principal: TokenPrincipal;
  admin: boolean;
}

export class SqlEndpoint {
  private schema?: Promise<Schema>;
  private running = 0;
  /** Principals of the admin token (the route table knows only token principals). */
  private readonly admins = new WeakSet<TokenPrincipal>();
  private readonly slugs = new Map<string, string>();
  /** Connections that carried an answer, until they close: cut at shutdown. */
  private readonly answers = new Set<{ destroy(): unknown }>();

  constructor(private readonly opts: SqlEndpointOptions) {}

  /** Routes under `prefix` ('/clickhouse' on the main port, '' on SERVICE_SQL_PORT). */
  routes(prefix: string): AnyRouteDef[] {
    const base = prefix || '/';
    const query = (method: 'GET' | 'POST') =>
      defineRoute({
        method,
        url: base,
        summary:
          method === 'GET'
            ? 'Run a read-only SQL query (ClickHouse HTTP interface; query in the `query` parameter)'
            : 'Run a read-only SQL query (ClickHouse HTTP interface; query in the body or the `query` parameter)',
        tags: ['sql'],
        auth: { kind: 'token', anyOf: ['sql'] },
        produces: ['text/tab-separated-values', 'application/json', 'text/csv', 'application/octet-stream'],
        ...(method === 'POST' ? { consumes: ['text/plain'] } : {}),
        authenticate: (request) => this.authenticate(request),
        handler: ({ request, reply, principal }) => this.handle(request, reply, { principal: principal!, admin: this.admins.has(principal!) }),
      });
    return [
      query('GET'),
      query('POST'),
      defineRoute({
        method: 'GET',
        url: `${prefix}/ping`,
        summary: 'ClickHouse health check: answers "Ok."',
        tags: ['sql'],
        auth: { kind: 'none' },
        produces: ['text/plain'],
        async handler({ reply }) {
          return reply.header('content-type', 'text/plain; charset=UTF-8').send('Ok.\n');
        },
      }),
    ];
  }

  /**
   * ClickHouse clients send the query as a body of any (or no) content type: the endpoint's POSTs
   * are read as text whatever they declare, before fastify picks a parser.
   */
  acceptAnyBody(fastify: FastifyInstance, prefix: string): void {
    const url = prefix || '/';
    fastify.addHook('onRequest', async (request) => {
      if (request.method === 'POST' && request.routeOptions.url === url) request.headers['content-type'] = 'text/plain; charset=utf-8';
    });
  }

  /**
   * Cuts answers in progress short (shutdown): a client that stops reading would otherwise hold
   * the server open, even after the query itself ended.
   */
  abortAll(): void {
    for (const a of this.answers) a.destroy();
  }

  private async authenticate(request: FastifyRequest): Promise<TokenPrincipal> {
    if ((request.query as Record<string, unknown> | undefined)?.password !== undefined) {
      // Our log redacts it, but proxies, shell history and access logs elsewhere keep URLs whole.
      throw errors.invalidQuery([{ path: 'password', message: 'send the token as basic auth, X-ClickHouse-Key or Authorization: Bearer, never in the URL (URLs are kept in logs and histories)' }]);
    }
    const creds = sqlCredentials(request.headers);
    if (!creds) throw errors.unauthorized('ClickHouse credentials are required: user = the project slug (or admin), password = the token');
    // `Authorization: Bearer` (and a key without a user) names no user: the admin token is the admin's.
    const unnamed = creds.user === undefined || creds.user === '';
    if (creds.user === 'admin' || (unnamed && this.opts.auth.isAdminToken(creds.password))) {
      this.opts.auth.authenticateAdmin(`Bearer ${creds.password}`);
      const principal: TokenPrincipal = { tokenId: 'admin', projectId: 'admin', scopes: ['sql'] };
      this.admins.add(principal);
      return principal;
    }
    const principal = await this.opts.auth.authenticate(`Bearer ${creds.password}`);
    // A user name that is not the token's project is a misconfigured client: say so rather than guess.
    if (!unnamed && creds.user !== (await this.slugOf(principal.projectId))) {
      throw errors.unauthorized(`the user must be the slug of the token's project (or admin with the admin token), not "${creds.user}"`);
    }
    return principal;
  }

  private async slugOf(projectId: string): Promise<string | undefined> {
    const known = this.slugs.get(projectId);
    if (known) return known;
    const project = await this.opts.projects.byId(projectId);
    if (project) this.slugs.set(projectId, project.slug);
    return project?.slug;
  }

  private async handle(request: FastifyRequest, reply: FastifyReply, caller: Caller): Promise<unknown> {
    const store = this.opts.store;
    if (!store.readSession) throw errors.sqlUnavailable();
    const params = urlParams(request.query);
    const text = [params.query, typeof request.body === 'string' ? request.body : undefined].filter((s) => s !== undefined && s.trim() !== '').join('\n');
    if (text === '') return reply.header('content-type', 'text/plain; charset=UTF-8').send('Ok.\n');
    const queryId = params.query_id ?? randomUUID();
    if (!QUERY_ID.test(queryId)) throw errors.invalidQuery([{ path: 'query_id', message: 'letters, digits and _ . : - only, at most 128' }]);
    if (params.session_id !== undefined) throw errors.invalidQuery([{ path: 'session_id', message: 'sessions are not supported: each query stands alone' }]);
    const database = params.database && params.database !== 'default' ? params.database : store.database;
    if (!IDENTIFIER.test(database)) throw errors.invalidQuery([{ path: 'database', message: 'not a database name' }]);
    if (!caller.admin && database !== store.database) throw errors.sqlRefused(`a project token reads only the database ${store.database}`);
    const settings = settingsStatements(
      Object.fromEntries(Object.entries(params).filter(([k]) => !k.startsWith('param_'))),
      this.opts.limits,
    );
    if (!settings.ok) throw errors.invalidQuery([{ path: settings.path, message: settings.message }]);
    const bind = Object.fromEntries(Object.entries(params).filter(([k]) => k.startsWith('param_')).map(([k, v]) => [k.slice('param_'.length), v]));

    if (this.running >= this.opts.maxConcurrent) throw errors.sqlBusy(this.opts.maxConcurrent);
    this.running++;
    let released = false;
    const release = () => {
      if (!released) this.running--;
      released = true;
    };
    const sessions: ReadSession[] = [];
    const closeSessions = () => {
      for (const s of sessions.splice(0)) s.close();
    };
    try {
      const schema = await this.loadSchema();
      const scope = [
        ...(caller.admin
          ? []
          : [
              `SET additional_table_filters = ${tableFiltersSetting(this.filters(schema, caller.principal.projectId))}`,
              // A condition moved to PREWHERE runs on every project's rows before the filter above:
              // its errors (throwIf, a failed cast) would answer questions about other projects' rows.
              'SET optimize_move_to_prewhere = 0',
              'SET optimize_move_to_prewhere_if_final = 0',
            ]),
        `USE \`${database}\``,
        `SET max_execution_time = ${this.opts.limits.maxExecutionTimeSec}`,
        `SET max_memory_usage = ${this.opts.limits.maxMemoryBytes}`,
        `SET max_threads = ${this.opts.limits.maxThreads}`,
      ];
      const policy: SqlPrincipal = {
        admin: caller.admin,
        readable: new Set([...schema.projectColumn.keys()].map((t) => `${store.database}.${t}`)),
        engineTableFunctions: schema.engineTableFunctions,
      };
      const inspect = await engine(() => store.readSession!([...scope, 'SET readonly = 1']));
      sessions.push(inspect);
      // One statement, as the engine writes it; everything below looks at, and runs, this text.
      const normalize = async (q: string) => (JSON.parse(await engine(() => inspect.text('SELECT formatQuerySingleLine({q:String}) AS q', 'JSONEachRow', { q }))) as { q: string }).q;
      let normalized = await normalize(text);
      // SHOW TABLES, DESCRIBE, SHOW DATABASES: rewritten into SELECTs over system.tables/columns,
      // checked and filtered below like any other query.
      const schemaRewrite = rewriteSchemaStatement(normalized, {
        admin: caller.admin,
        database,
        storeDatabase: store.database,
        readable: policy.readable,
      });
      if (schemaRewrite && !schemaRewrite.ok) throw errors.sqlRefused(schemaRewrite.reason);
      if (schemaRewrite) normalized = await normalize(schemaRewrite.sql);
      const ast = summarizeAst(await engine(() => inspect.text(`EXPLAIN AST ${normalized}`, 'TSV', bind)));
      const astRefusal = refuseAst(ast, policy);
      if (astRefusal) throw errors.sqlRefused(astRefusal);
      let sql = normalized;
      if (ast.format !== undefined) {
        const clause = ` FORMAT ${ast.format}`;
        if (!normalized.endsWith(clause)) throw errors.sqlRefused('the FORMAT clause could not be read; pass the format as default_format');
        sql = normalized.slice(0, -clause.length);
      }
      const treeRefusal = refuseQueryTree(queryTreeRefs(await engine(() => inspect.text(`EXPLAIN QUERY TREE ${sql}`, 'TSV', bind))), policy);
      if (treeRefusal) throw errors.sqlRefused(treeRefusal);
      inspect.close();
      sessions.length = 0;

      const format = ast.format ?? params.default_format ?? 'TabSeparated';
      if (!IDENTIFIER.test(format)) throw errors.invalidQuery([{ path: 'default_format', message: 'not a format name' }]);
      const run = await engine(() => store.readSession!([...scope, ...settings.statements, 'SET readonly = 1']));
      sessions.push(run);
      const started = process.hrtime.bigint();
      const abort = new AbortController();
      const chunks = run.stream(sql, format, bind, abort.signal);
      // The first block is awaited before answering: most failures (a limit, a bad cast) come with it
      // and get a proper status; later ones can only end the body with ClickHouse's error text.
      const first = await engine(() => chunks.next());
      const firstRows = first.done ? 0 : first.value.rows;
      const firstBytes = first.done ? 0 : first.value.bytes.length;
      this.opts.logger.info({ queryId, project: caller.admin ? 'admin' : caller.principal.projectId, database }, 'sql query');
      const body = Readable.from(
        (async function* () {
          if (!first.done) yield first.value.bytes;
          try {
            for (let c = await chunks.next(); !c.done; c = await chunks.next()) yield c.value.bytes;
          } catch (err) {
            if (abort.signal.aborted) return;
            const ch = clickhouseErrorOf(err instanceof Error ? err.message : String(err));
            yield Buffer.from(`\n${ch ? ch.text : 'Code: 1001. DB::Exception: the query failed while streaming. (STD_EXCEPTION)'}\n`);
          }
        })(),
        { objectMode: false, highWaterMark: 64 * 1024 },
      );
      const gzip = params.enable_http_compression === '1' && /\bgzip\b/i.test(String(request.headers['accept-encoding'] ?? ''));
      const level = Math.min(9, Math.max(1, Number(params.http_zlib_compression_level ?? 3) || 3));
      const done = () => {
        abort.abort();
        void chunks.return(undefined).finally(closeSessions);
        release();
      };
      const out = gzip ? pipeline(body, createGzip({ level }), done) : body;
      if (!gzip) body.once('close', done);
      // The socket, not the response: an answer the client stopped reading can be over on our side
      // and still sit in the socket's buffer, which keeps the server from closing.
      const socket = request.raw.socket;
      if (!this.answers.has(socket)) {
        this.answers.add(socket);
        socket.once('close', () => this.answers.delete(socket));
      }
      reply
        .header('content-type', formatContentType(format))
        .header('x-clickhouse-query-id', queryId)
        .header('x-clickhouse-format', format)
        .header('x-clickhouse-timezone', 'UTC')
        .header(
          'x-clickhouse-summary',
          JSON.stringify({
            read_rows: '0',
            read_bytes: '0',
            written_rows: '0',
            written_bytes: '0',
            total_rows_to_read: '0',
            result_rows: String(firstRows),
            result_bytes: String(firstBytes),
            elapsed_ns: String(process.hrtime.bigint() - started),
          }),
        );
      if (gzip) reply.header('content-encoding', 'gzip').header('vary', 'Accept-Encoding');
      return reply.send(out);
    } catch (err) {
      closeSessions();
      release();
      throw err;
    }
  }

  /**
   * Each table of the project to its row filter; every other table to none of its rows;
   * system.databases, system.tables and system.columns to the store database and its readable tables.
   */
  private filters(schema: Schema, projectId: string): Map<string, string> {
    if (!UUID.test(projectId)) throw new Error('a project id is a UUID');
    const db = this.opts.store.database;
    const filters = new Map<string, string>();
    for (const t of schema.all) {
      const column = schema.projectColumn.get(t);
      filters.set(`${db}.${t}`, column ? `\`${column}\` = ${sqlString(projectId)}` : '0');
    }
    for (const [table, filter] of schemaTableFilters(db, [...schema.projectColumn.keys()])) filters.set(table, filter);
    return filters;
  }

  /** The database's tables, classified once (migrations ran before the first query). */
  private loadSchema(): Promise<Schema> {
    this.schema ??= (async () => {
      const store = this.opts.store;
      const tables = await store.query<{ name: string; engine: string; columns: string[] }>(
        `SELECT t.name AS name, t.engine AS engine, groupArray(c.name) AS columns
         FROM system.tables AS t LEFT JOIN system.columns AS c ON c.database = t.database AND c.table = t.name
         WHERE t.database = {db:String} GROUP BY t.name, t.engine`,
        { db: store.database },
      );
      const projectColumn = new Map<string, string>();
      for (const t of tables) {
        // Views read other tables under their own name, where the filters of those do not apply.
        if (/View/.test(t.engine) || CLOSED_TABLES.has(t.name)) continue;
        if (t.columns.includes('project_id')) projectColumn.set(t.name, 'project_id');
        else if (t.name === 'projects' && t.columns.includes('id')) projectColumn.set(t.name, 'id');
      }
      const functions = await store.query<{ name: string }>(
        'SELECT name FROM system.table_functions WHERE name NOT IN (SELECT name FROM system.functions)',
      );
      return { projectColumn, all: tables.map((t) => t.name), engineTableFunctions: new Set(functions.map((f) => f.name.toLowerCase())) };
    })();
    this.schema.catch(() => {
      this.schema = undefined;
    });
    return this.schema;
  }
}

/** URL parameters as single strings (the last of repeated ones). */
function urlParams(query: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    const value: unknown = Array.isArray(v) ? (v as unknown[])[v.length - 1] : v;
    if (typeof value === 'string') out[k] = value;
  }
  return out;
}

/** Runs an engine call; ClickHouse's refusals become 400/403 with its code and text. */
async function engine<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    const ch = clickhouseErrorOf(err instanceof Error ? err.message : String(err));
    if (!ch) throw err;
    if (ch.name === 'READONLY' || ch.name === 'ACCESS_DENIED') throw errors.sqlRefused(ch.text.replace(/^Code: \d+\. DB::Exception: /, '').replace(/\. \([A-Z0-9_]+\)$/, ''));
    throw errors.sqlError(ch.code, ch.name, ch.text);
  }
}

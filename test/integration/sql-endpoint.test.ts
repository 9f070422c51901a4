// The read-only ClickHouse SQL endpoint (docs/sql.md), driven as analysts drive it:
// the official @clickhouse/client configured as for a ClickHouse server, and raw HTTP as curl
// sends it. Two projects hold data; every probe of the security table must be refused or see only
// the caller's rows; the documented queries (docs/sql.md) run unchanged against the ingested data.
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlCommand } from '../../client/src/cli/sql.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createProject } from '../helpers/route-examples.js';

const B_MARKER = 'b-secret-marker';
const DAY = 86_400_000;

function at(daysAgo: number, ms = 0): string {
  return new Date(Date.now() - daysAgo * DAY + ms).toISOString();
}

/** A's runs: a cart test that passes, then needs a retry on two later commits; a payment test that always fails. */
function aBatches(): Record<string, unknown>[] {
  const resource = (commitSha: string) => ({ ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push' });
  const cart = { filePath: 'src/checkout/cart.test.ts', suite: 'cart', title: 'adds an item' };
  const login = { filePath: 'src/auth/login.test.ts', suite: 'auth', title: 'logs in' };
  const pay = { filePath: 'src/checkout/pay.test.ts', suite: 'payment', title: 'pays' };
  const fail = (message: string) => ({ status: 'fail', error: { type: 'AssertionError', message } });
  return [4, 3, 2, 1].map((daysAgo, i) => ({
    contractVersion: '0.1.0',
    idempotencyKey: `sql-endpoint-a-${i}`,
    resource: resource(`c0ffee${i}0${i}`),
    run: { status: 'failed', startedAt: at(daysAgo) },
    executions: [
      ...(i < 2
        ? [{ ...cart, status: 'pass', startedAt: at(daysAgo, 10), durationMs: 120 }]
        : [
            { ...cart, ...fail('socket hang up'), startedAt: at(daysAgo, 10), durationMs: 300 },
            { ...cart, status: 'pass', attempt: 2, retryOfIndex: 0, startedAt: at(daysAgo, 400), durationMs: 150 },
          ]),
      { ...login, status: 'pass', startedAt: at(daysAgo, 20), durationMs: 40 },
      { ...pay, ...fail('Timeout waiting for payment gateway'), startedAt: at(daysAgo, 30), durationMs: 5000 },
    ],
  }));
}

function bBatch(): Record<string, unknown> {
  return {
    contractVersion: '0.1.0',
    idempotencyKey: 'sql-endpoint-b-0',
    resource: { ciProvider: 'github_actions', commitSha: 'bbbbbbb1', branch: 'main', trigger: 'push' },
    run: { status: 'failed', startedAt: at(1) },
    executions: [
      { filePath: `src/checkout/${B_MARKER}.test.ts`, suite: B_MARKER, title: `${B_MARKER} title`, status: 'fail', startedAt: at(1, 5), durationMs: 9, error: { message: `${B_MARKER} error` } },
      { filePath: `src/checkout/${B_MARKER}.test.ts`, suite: B_MARKER, title: `${B_MARKER} title`, status: 'pass', attempt: 2, retryOfIndex: 0, startedAt: at(1, 50), durationMs: 9 },
    ],
  };
}

/** The ```sql blocks of docs/sql.md (moved there from the README's "Querying with SQL"). */
function readmeQueries(): string[] {
  const doc = readFileSync(path.resolve(import.meta.dirname, '../../docs/sql.md'), 'utf8');
  return [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
}

describe('the ClickHouse SQL endpoint', () => {
  let td: TestDaemon;
  let aSql: string;
  let aRead: string;
  let bSql: string;
  let aClient: ClickHouseClient;
  let bClient: ClickHouseClient;
  let adminClient: ClickHouseClient;
  let aExecutions: number;

  const client = (username: string, password: string, extra: Record<string, unknown> = {}) =>
    createClient({ url: td.url, pathname: '/clickhouse', username, password, database: td.database, log: { level: ClickHouseLogLevel.OFF }, ...extra });

  async function rows<T = Record<string, unknown>>(c: ClickHouseClient, query: string, query_params?: Record<string, unknown>): Promise<T[]> {
    return (await c.query({ query, format: 'JSONEachRow', ...(query_params ? { query_params } : {}) })).json<T>();
  }

  /** Raw HTTP as curl sends it: basic auth, the query in the body or the URL. */
  async function http(query: string, opts: { user?: string; token?: string; params?: Record<string, string>; headers?: Record<string, string>; method?: 'GET' | 'POST' } = {}) {
    const method = opts.method ?? 'POST';
    const params = new URLSearchParams({ database: td.database, ...(method === 'GET' ? { query } : {}), ...opts.params });
    const headers: Record<string, string> = {
      authorization: `Basic ${Buffer.from(`${opts.user ?? 'default'}:${opts.token ?? aSql}`).toString('base64')}`,
      ...opts.headers,
    };
    if (method === 'POST') headers['content-type'] ??= 'application/x-www-form-urlencoded'; // what curl -d sends
    const res = await fetch(`${td.url}/clickhouse?${params.toString()}`, { method, headers, body: method === 'POST' ? query : undefined });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes, text: bytes.toString('utf8') };
  }

  beforeAll(async () => {
    td = await startTestDaemon();
    const mk = async (slug: string, scopes: string[]) =>
      (await td.request('POST', `/v1/admin/projects/${slug}/tokens`, { token: td.adminToken, body: { scopes } })).json.token as string;
    aSql = await mk('default', ['sql']);
    aRead = await mk('default', ['read']);
    const b = await createProject(td, 'sql-b', [['ingest'], ['sql']]);
    bSql = b.tokens[1]!;
    await td.ingest(...aBatches());
    const put = await td.request('PUT', '/v1/codeowners', { body: { content: '/src/checkout/ @shop\n/src/auth/ @identity\n' } });
    expect(put.status).toBe(200);
    const res = await td.request('POST', '/v1/ingest', { token: b.tokens[0]!, body: bBatch() });
    expect(res.status).toBe(202);
    aClient = client('default', aSql);
    bClient = client('sql-b', bSql);
    adminClient = client('admin', td.adminToken);
    await td.waitFor(async () => Number((await rows<{ n: string }>(bClient, 'SELECT count() AS n FROM executions'))[0]!.n) === 2, 20_000);
    aExecutions = Number((await rows<{ n: string }>(aClient, 'SELECT count() AS n FROM executions'))[0]!.n);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([aClient?.close(), bClient?.close(), adminClient?.close()]);
    await td?.close();
  });

  describe('with @clickhouse/client, configured as for a ClickHouse server', () => {
    it('pings, and each project token sees only its own project', async () => {
      expect((await aClient.ping()).success).toBe(true);
      expect(aExecutions).toBe(14);
      const a = await rows<{ title: string }>(aClient, 'SELECT DISTINCT title FROM executions ORDER BY title');
      expect(a.map((r) => r.title)).toEqual(['adds an item', 'logs in', 'pays']);
      const b = await rows<{ title: string }>(bClient, 'SELECT DISTINCT title FROM executions');
      expect(b.map((r) => r.title)).toEqual([`${B_MARKER} title`]);
      const projects = await rows<{ slug: string }>(aClient, 'SELECT slug FROM projects FINAL');
      expect(projects.map((p) => p.slug)).toEqual(['default']);
    });

    it('lets the admin user read every project', async () => {
      const r = await rows<{ projects: string; n: string }>(adminClient, 'SELECT uniqExact(project_id) AS projects, count() AS n FROM executions');
      expect(Number(r[0]!.projects)).toBe(2);
      expect(Number(r[0]!.n)).toBe(aExecutions + 2);
    });

    it('lets the admin user read the system database; a project token only system.tables and system.columns, filtered (sql-schema.test.ts)', async () => {
      const r = await rows<{ n: string }>(adminClient, 'SELECT count() AS n FROM system.tables WHERE database = currentDatabase()');
      expect(Number(r[0]!.n)).toBeGreaterThan(10);
      const own = await rows<{ n: string }>(aClient, 'SELECT count() AS n FROM system.tables');
      expect(Number(own[0]!.n)).toBeLessThan(Number(r[0]!.n));
      await expect(rows(aClient, 'SELECT count() AS n FROM system.settings')).rejects.toMatchObject({ type: 'ACCESS_DENIED' });
    });

    it('binds query parameters and passes a query id', async () => {
      const rs = await aClient.query({ query: 'SELECT count() AS n FROM executions WHERE suite = {suite:String}', format: 'JSONEachRow', query_params: { suite: 'payment' }, query_id: 'analyst-q-1' });
      expect(rs.query_id).toBe('analyst-q-1');
      expect(await rs.json()).toEqual([{ n: '4' }]);
    });

    it('decompresses a gzipped answer when the client asks for one', async () => {
      const gz = client('default', aSql, { compression: { response: true } });
      try {
        expect(await rows(gz, "SELECT count() AS n FROM executions WHERE status = 'fail'")).toEqual([{ n: '6' }]);
      } finally {
        await gz.close();
      }
    });

    it("surfaces the engine's error as a ClickHouseError with its code", async () => {
      await expect(aClient.query({ query: 'SELECT nope FROM executions', format: 'JSONEachRow' })).rejects.toMatchObject({ code: '47', type: 'UNKNOWN_IDENTIFIER' });
      await expect(aClient.query({ query: 'SELECT * FROM system.processes', format: 'JSONEachRow' })).rejects.toMatchObject({ code: '497', type: 'ACCESS_DENIED' });
    });

    it('refuses a wrong password, a user that is not the token’s project, and a token without the sql scope', async () => {
      for (const [user, token, status] of [
        ['default', 'fh_' + '0'.repeat(48), 401],
        ['sql-b', aSql, 401],
        ['admin', aSql, 401],
        ['default', aRead, 403],
      ] as const) {
        const c = client(user, token);
        try {
          await expect(rows(c, 'SELECT 1')).rejects.toThrow();
        } finally {
          await c.close();
        }
        expect((await http('SELECT 1', { user, token })).status).toBe(status);
      }
      // ClickHouse takes a password URL parameter; here it is refused: URLs are kept (proxies, histories).
      const inUrl = await fetch(`${td.url}/clickhouse?${new URLSearchParams({ query: 'SELECT 1', user: 'default', password: aSql }).toString()}`);
      expect([inUrl.status, ((await inUrl.json()) as { issues: { path: string }[] }).issues[0]!.path]).toEqual([400, 'password']);
    });
  });

  describe('over raw HTTP', () => {
    it('answers with the ClickHouse headers, TabSeparated by default', async () => {
      const res = await http('SELECT suite, count() AS n FROM executions GROUP BY suite ORDER BY suite', { params: { query_id: 'curl-1' } });
      expect(res.status).toBe(200);
      expect(res.text).toBe('auth\t4\ncart\t6\npayment\t4\n');
      expect(res.headers.get('x-clickhouse-format')).toBe('TabSeparated');
      expect(res.headers.get('x-clickhouse-query-id')).toBe('curl-1');
      expect(res.headers.get('content-type')).toContain('text/tab-separated-values');
      expect(JSON.parse(res.headers.get('x-clickhouse-summary')!)).toMatchObject({ result_rows: '3' });
    });

    it('takes the format from default_format or a FORMAT clause, the query from the URL, and X-ClickHouse-User/Key', async () => {
      const csv = await http("SELECT 'a' AS x, 1 AS y", { params: { default_format: 'CSVWithNames' } });
      expect([csv.text, csv.headers.get('x-clickhouse-format')]).toEqual(['"x","y"\n"a",1\n', 'CSVWithNames']);
      const json = await http('SELECT count() AS n FROM executions FORMAT JSONEachRow', { method: 'GET', params: { default_format: 'CSV' } });
      expect([json.text, json.headers.get('x-clickhouse-format')]).toEqual([`{"n":"${aExecutions}"}\n`, 'JSONEachRow']);
      const headerAuth = await fetch(`${td.url}/clickhouse?query=${encodeURIComponent('SELECT 42')}`, { headers: { 'x-clickhouse-user': 'sql-b', 'x-clickhouse-key': bSql } });
      expect([headerAuth.status, await headerAuth.text()]).toEqual([200, '42\n']);
    });

    it('takes Authorization: Bearer with a project token (its project) or the admin token (every project), as docs/sql.md lists', async () => {
      const query = encodeURIComponent('SELECT uniqExact(project_id) AS projects, count() AS n FROM executions FORMAT JSONEachRow');
      const asBearer = async (token: string) => {
        const res = await fetch(`${td.url}/clickhouse?query=${query}&database=${td.database}`, { headers: { authorization: `Bearer ${token}` } });
        return { status: res.status, text: await res.text() };
      };
      expect(await asBearer(td.adminToken)).toEqual({ status: 200, text: `{"projects":"2","n":"${aExecutions + 2}"}\n` });
      expect(await asBearer(aSql)).toEqual({ status: 200, text: `{"projects":"1","n":"${aExecutions}"}\n` });
      expect((await asBearer(`${td.adminToken}x`)).status).toBe(401);
      expect((await asBearer(aRead)).status).toBe(403);
      // The admin token under a project's user name is no project's token.
      expect((await http('SELECT 1', { user: 'default', token: td.adminToken })).status).toBe(401);
      // X-ClickHouse-Key without a user reads as Bearer does.
      const keyOnly = await fetch(`${td.url}/clickhouse?query=${query}&database=${td.database}`, { headers: { 'x-clickhouse-key': td.adminToken } });
      expect([keyOnly.status, await keyOnly.text()]).toEqual([200, `{"projects":"2","n":"${aExecutions + 2}"}\n`]);
    });

    it('gzips the answer with enable_http_compression=1', async () => {
      const res = await http('SELECT number FROM numbers(1000)', { params: { enable_http_compression: '1' }, headers: { 'accept-encoding': 'gzip' } });
      expect(res.headers.get('content-encoding')).toBe('gzip');
      // fetch inflates a gzip answer itself; the body is the plain result.
      expect(res.text.split('\n').length).toBe(1001);
    });

    it('streams a large result in blocks, in order', async () => {
      const res = await http('SELECT number FROM numbers(300000)', { params: { default_format: 'RowBinary' } });
      expect(res.status).toBe(200);
      expect(res.bytes.length).toBe(300_000 * 8);
      expect(res.bytes.readBigUInt64LE(299_999 * 8)).toBe(299_999n);
    });

    it('applies the limits and refuses settings outside the allow-list, naming the parameter', async () => {
      const capped = await http('SELECT number FROM numbers(100)', { params: { max_result_rows: '10' } });
      expect(capped.status).toBe(400);
      expect(capped.text).toContain('TOO_MANY_ROWS_OR_BYTES');
      expect(capped.headers.get('x-clickhouse-exception-code')).toBe('396');
      for (const name of ['additional_table_filters', 'allow_ddl', 'max_rows_to_read_leaf']) {
        const res = await http('SELECT 1', { params: { [name]: '1' } });
        expect([res.status, JSON.parse(res.text).issues[0].path], name).toEqual([400, name]);
      }
      const ro = await http('SELECT 1', { params: { readonly: '0' } });
      expect(ro.status).toBe(400);
    });

    it("ends the body with ClickHouse's error text when the query fails after the first block", async () => {
      const res = await http("SELECT throwIf(number = 100000, 'boom after the first block') AS x FROM numbers(200000)");
      expect(res.status).toBe(200);
      expect(res.text.startsWith('0\n0\n')).toBe(true);
      expect(res.text.trimEnd()).toMatch(/Code: 395\. DB::Exception: .*boom after the first block.*\(FUNCTION_THROW_IF_VALUE_IS_NON_ZERO\)$/s);
    });

    it('answers the ping', async () => {
      const res = await fetch(`${td.url}/clickhouse/ping`);
      expect([res.status, await res.text()]).toEqual([200, 'Ok.\n']);
    });
  });

  // Each probe as project B's analyst would try it against project A (and the daemon): refused,
  // or answered with B's rows only.
  describe('security table', () => {
    const outfile = path.join(tmpdir(), `fh-sql-outfile-${process.pid}.txt`);
    const refused: [string, string][] = [
      ['file() table function', "SELECT * FROM file('/etc/passwd', 'LineAsString')"],
      ['file() function', "SELECT file('/etc/passwd')"],
      ['url()', "SELECT * FROM url('http://127.0.0.1:9/x.csv', CSV, 'a String')"],
      ['s3()', "SELECT * FROM s3('http://127.0.0.1:9/bucket/x.csv', 'CSV', 'a String')"],
      ['remote()', "SELECT * FROM remote('127.0.0.1:9000', system.one)"],
      ['merge() over executions', "SELECT title FROM merge(currentDatabase(), '^executions$')"],
      ['view()', 'SELECT * FROM view(SELECT title FROM executions)'],
      ['system.query_log', 'SELECT query FROM system.query_log'],
      ['system.processes', 'SELECT query FROM system.processes'],
      ['system.tables sizes', 'SELECT name, total_rows FROM system.tables'],
      ['system.parts', 'SELECT table, rows FROM system.parts'],
      ['IN system table', 'SELECT count() FROM executions WHERE title IN (SELECT query FROM system.processes)'],
      ['dictionary', "SELECT dictGet('flakehouse_dict', 'title', toUInt64(1))"],
      ['INSERT', "INSERT INTO executions (title) VALUES ('x')"],
      ['CREATE', 'CREATE TABLE stolen (a UInt8) ENGINE = Memory'],
      ['SET', 'SET additional_table_filters = {}'],
      ['SETTINGS readonly = 0', 'SELECT 1 SETTINGS readonly = 0'],
      ['SETTINGS filters off', 'SELECT title FROM executions SETTINGS additional_table_filters = {}'],
      ['tokens table', 'SELECT token_hash FROM tokens'],
      ['notification_channels table', 'SELECT signing_secret FROM notification_channels'],
      ['materialized view', 'SELECT * FROM test_recent_mv'],
      ['INTO OUTFILE', `SELECT title FROM executions INTO OUTFILE '${outfile}'`],
      ['PREWHERE (runs before the project filter)', "SELECT count() FROM executions PREWHERE throwIf(title = 'adds an item')"],
    ];
    it.each(refused)('refuses %s', async (_name, sql) => {
      const res = await http(sql, { user: 'sql-b', token: bSql });
      expect(res.status, res.text).toBe(403);
      expect(JSON.parse(res.text).error).toBe('sql_refused');
      expect(res.text).toContain('ACCESS_DENIED');
      expect(res.text).not.toContain('adds an item');
      expect(res.text).not.toContain('root:');
    });

    it("answers no question about another project's rows through an error raised before the filter", async () => {
      // With the condition moved to PREWHERE, throwIf() would see A's rows and fail B's query. Merged
      // into one part, both projects' rows share a granule: the primary key cannot skip A's.
      await td.daemon.store.client.command({ query: `OPTIMIZE TABLE \`${td.database}\`.executions FINAL` });
      for (const sql of ["SELECT count() FROM executions WHERE throwIf(title = 'adds an item')", "SELECT title FROM executions WHERE throwIf(suite = 'payment') LIMIT 1"]) {
        for (const enable_analyzer of ['0', '1']) {
          const res = await http(sql, { user: 'sql-b', token: bSql, params: { enable_analyzer } });
          expect([res.status, res.text], sql).toEqual([200, sql.startsWith('SELECT count()') ? '0\n' : '']);
        }
      }
      // A's own rows do raise it: the probe is real.
      expect((await http("SELECT count() FROM executions WHERE throwIf(title = 'adds an item')")).status).toBe(400);
    });

    it('writes no file for a second statement smuggled behind a first', async () => {
      const res = await http(`SELECT 1; SELECT 1 INTO OUTFILE '${outfile}'`, { user: 'sql-b', token: bSql });
      expect(res.status).toBe(400);
      expect(res.text).toContain('Multi-statements are not allowed');
      expect(existsSync(outfile)).toBe(false);
    });

    it('refuses a database other than the store’s for a project token', async () => {
      for (const database of ['system', 'information_schema', 'default_other']) {
        const res = await http('SELECT 1', { user: 'sql-b', token: bSql, params: { database } });
        expect(res.status, database).toBe(403);
      }
    });

    const filtered: [string, string][] = [
      ['a plain read', 'SELECT title FROM executions'],
      ['a join', 'SELECT e.title FROM executions AS e JOIN runs AS r FINAL ON e.run_id = r.id'],
      ['a subquery', 'SELECT title FROM (SELECT * FROM executions) WHERE 1'],
      ['IN a subquery', 'SELECT title FROM test_identities FINAL WHERE id IN (SELECT test_id FROM executions)'],
      ['a CTE and UNION', 'WITH t AS (SELECT title FROM executions) SELECT title FROM t UNION ALL SELECT title FROM test_state FINAL'],
      ['a scalar subquery', 'SELECT (SELECT groupArray(title) FROM executions) AS titles'],
      ['the rollups', 'SELECT toString(groupArray(test_id)) AS title FROM daily_test_stats'],
      ['projects', 'SELECT slug AS title FROM projects FINAL'],
      ['test_recent', 'SELECT error_message AS title FROM test_recent'],
    ];
    it.each(filtered)("filters %s to the caller's project", async (_name, sql) => {
      const b = await http(`${sql} FORMAT JSONEachRow`, { user: 'sql-b', token: bSql });
      expect(b.status, b.text).toBe(200);
      expect(b.text).not.toMatch(/adds an item|logs in|pays|payment gateway|"default"/);
      const a = await http(`${sql} FORMAT JSONEachRow`);
      expect(a.status, a.text).toBe(200);
      expect(a.text).not.toContain(B_MARKER);
    });
  });

  describe("the README's queries", () => {
    const queries = readmeQueries();
    it('are eleven', () => {
      expect(queries.length).toBe(11);
    });
    it.each(queries.map((q, i) => [i + 1, q] as const))('query %i runs for a project token and sees only its project', async (_n, query) => {
      const a = await rows(aClient, query);
      expect(JSON.stringify(a)).not.toContain(B_MARKER);
      expect(a.length).toBeGreaterThan(0);
      const b = await rows(bClient, query);
      expect(JSON.stringify(b)).not.toMatch(/adds an item|logs in|pays/);
    });
  });

  describe('flakehouse sql', () => {
    async function cli(args: string[], stdin = ''): Promise<{ code: number; out: string }> {
      let out = '';
      const stdout = new Writable({
        write(chunk: Buffer, _enc, cb) {
          out += chunk.toString('utf8');
          cb();
        },
      });
      const env = { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: aSql, SERVICE_CLICKHOUSE_DATABASE: td.database, SERVICE_DATA_DIR: td.dataDir };
      const code = await sqlCommand(args, env, td.dataDir, { stdin: Readable.from([stdin]), stdout });
      return { code, out };
    }

    it('prints an aligned table by default', async () => {
      const r = await cli(["SELECT suite, count() AS executions FROM executions WHERE suite != 'payment' GROUP BY suite ORDER BY suite"]);
      expect(r).toEqual({ code: 0, out: 'suite  executions\n-----  ----------\nauth   4\ncart   6\n(2 rows)\n' });
    });

    it('prints csv or json, reads the query from stdin, and fails with the reason', async () => {
      expect((await cli(['--format', 'csv'], "SELECT 'a' AS x, 1 AS y")).out).toBe('"x","y"\n"a",1\n');
      expect(JSON.parse((await cli(['SELECT count() AS n FROM executions', '--format', 'json'])).out).data).toEqual([{ n: String(aExecutions) }]);
      expect((await cli(['--format', 'jsonl', 'SELECT uniqExact(project_id) AS p FROM executions'])).out).toBe('{"p":"1"}\n');
      await expect(cli(['SELECT * FROM system.processes'])).rejects.toThrow(/403 sql_refused: .*system database/);
    });
  });
});

describe('the SQL endpoint on its own port, with a concurrency cap of one', () => {
  let td: TestDaemon;
  const auth = () => ({ authorization: `Basic ${Buffer.from(`default:${td.token}`).toString('base64')}` });

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_SQL_PORT: '0', SERVICE_SQL_MAX_CONCURRENT: '1' } });
  }, 60_000);
  afterAll(async () => td?.close());

  it('serves / and /ping for clients that want a ClickHouse root URL', async () => {
    const base = td.daemon.sqlUrl!;
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ping = await fetch(`${base}/ping`);
    expect([ping.status, await ping.text()]).toEqual([200, 'Ok.\n']);
    const c = createClient({ url: base, username: 'default', password: td.token, database: td.database, log: { level: ClickHouseLogLevel.OFF } });
    try {
      expect(await (await c.query({ query: 'SELECT 1 + 1 AS two', format: 'JSONEachRow' })).json()).toEqual([{ two: 2 }]);
    } finally {
      await c.close();
    }
  });

  it('answers 429 while a query runs, and serves again once it ends', async () => {
    // A client that reads the headers and then nothing: the query stays running, holding the slot.
    const { get } = await import('node:http');
    const url = `${td.url}/clickhouse?${new URLSearchParams({ query: 'SELECT number FROM numbers(50000000)', default_format: 'RowBinary' }).toString()}`;
    const big = get(url, { headers: auth(), agent: false });
    const status = await new Promise<number>((resolve, reject) => {
      big.once('response', (res) => resolve(res.statusCode!)).once('error', reject);
    });
    expect(status).toBe(200);
    const busy = await fetch(`${td.url}/clickhouse?query=SELECT+1`, { headers: auth() });
    expect([busy.status, busy.headers.get('retry-after'), busy.headers.get('x-clickhouse-exception-code')]).toEqual([429, '1', '202']);
    // Hanging up cancels the query and frees its slot.
    big.destroy();
    const again = await td.waitFor(async () => {
      const r = await fetch(`${td.url}/clickhouse?query=SELECT+1`, { headers: auth() });
      return r.status === 200 ? r.text() : undefined;
    });
    expect(again).toBe('1\n');
  });
});

describe('the SQL endpoint switched off', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_SQL_ENABLED: 'false' } });
  }, 60_000);
  afterAll(async () => td?.close());

  it('is not served', async () => {
    const res = await fetch(`${td.url}/clickhouse?query=SELECT+1`, { headers: { authorization: `Bearer ${td.token}` } });
    expect(res.status).toBe(404);
    expect(td.daemon.app.routes.routes.some((r) => r.url.startsWith('/clickhouse'))).toBe(false);
  });
});

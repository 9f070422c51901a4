// Schema discovery through the SQL endpoint (docs/sql.md, "Discovering the schema"): SHOW TABLES,
// DESCRIBE, system.tables and system.columns, for a project token filtered to the tables it may
// read, on a real daemon; and `flakehouse sql --schema`.
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlCommand } from '../../client/src/cli/sql.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createProject } from '../helpers/route-examples.js';

/** Tables a project token reads: those with a project column (and projects), not views or secrets. */
const CLOSED = ['tokens', 'notification_channels', 'test_recent_mv'];

describe('schema discovery over the SQL endpoint', () => {
  let td: TestDaemon;
  let aSql: string;
  let bSql: string;
  let aClient: ClickHouseClient;
  let adminClient: ClickHouseClient;
  let otherDb: string;
  /** Every table and view of the store's database, as the engine lists them. */
  let allTables: string[];

  const client = (username: string, password: string) =>
    createClient({ url: td.url, pathname: '/clickhouse', username, password, database: td.database, log: { level: ClickHouseLogLevel.OFF } });

  async function rows<T = Record<string, unknown>>(c: ClickHouseClient, query: string): Promise<T[]> {
    return (await c.query({ query, format: 'JSONEachRow' })).json<T>();
  }

  /** Raw HTTP as curl sends it. */
  async function http(query: string, opts: { user?: string; token?: string; params?: Record<string, string> } = {}) {
    const params = new URLSearchParams({ database: td.database, ...opts.params });
    const res = await fetch(`${td.url}/clickhouse?${params.toString()}`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${opts.user ?? 'default'}:${opts.token ?? aSql}`).toString('base64')}` },
      body: query,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text };
  }

  beforeAll(async () => {
    td = await startTestDaemon();
    aSql = (await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['sql'] } })).json.token as string;
    bSql = (await createProject(td, 'schema-b', [['sql']])).tokens[0]!;
    // Another database on the same engine, with a table no token of this store should ever see listed.
    otherDb = `${td.database}_other`;
    await td.daemon.store.client.command({ query: `CREATE DATABASE IF NOT EXISTS ${otherDb}` });
    await td.daemon.store.client.command({ query: `CREATE TABLE IF NOT EXISTS ${otherDb}.other_secret_table (project_id String, secret_col String) ENGINE = MergeTree ORDER BY project_id` });
    aClient = client('default', aSql);
    adminClient = client('admin', td.adminToken);
    allTables = (await td.daemon.store.query<{ name: string }>('SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name', { db: td.database })).map((r) => r.name);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([aClient?.close(), adminClient?.close()]);
    await td?.daemon.store.client.command({ query: `DROP DATABASE IF EXISTS ${otherDb}` }).catch(() => undefined);
    await td?.close();
  });

  describe('SHOW TABLES', () => {
    it('lists, for a project token, the tables it may read and nothing else', async () => {
      const names = (await rows<{ name: string }>(aClient, 'SHOW TABLES')).map((r) => r.name);
      expect(names).toEqual(expect.arrayContaining(['executions', 'runs', 'projects', 'test_state']));
      for (const closed of CLOSED) {
        expect(allTables, closed).toContain(closed);
        expect(names, closed).not.toContain(closed);
      }
      expect(names).not.toContain('other_secret_table');
      expect(names.length).toBeLessThan(allTables.length);
      // Each listed table is one the token may actually query.
      for (const t of names) expect((await http(`SELECT count() FROM ${t}`)).status, t).toBe(200);
      // The same list for every project token: the schema is not per project.
      const b = await http('SHOW TABLES', { user: 'schema-b', token: bSql });
      expect(b.text.trim().split('\n')).toEqual(names);
    });

    it('takes LIKE, LIMIT and a FORMAT clause, in any case', async () => {
      const res = await http("show tables like 'exec%' limit 5 format JSONEachRow");
      expect([res.status, res.headers.get('x-clickhouse-format')]).toEqual([200, 'JSONEachRow']);
      expect(res.text).toBe('{"name":"executions"}\n');
      expect((await http(`SHOW TABLES FROM ${td.database} NOT LIKE '%' `)).text).toBe('');
    });

    it('refuses another database to a project token with sql_refused, and lists it for the admin', async () => {
      for (const db of [otherDb, 'system', 'information_schema']) {
        const res = await http(`SHOW TABLES FROM ${db}`);
        expect(res.status, db).toBe(403);
        const body = JSON.parse(res.text) as { error: string; message: string };
        expect(body.error).toBe('sql_refused');
        expect(body.message).toContain(`a project token reads only the database ${td.database}`);
        expect(res.headers.get('x-clickhouse-exception-code')).toBe('497');
      }
      const admin = await rows<{ name: string }>(adminClient, `SHOW TABLES FROM ${otherDb}`);
      expect(admin).toEqual([{ name: 'other_secret_table' }]);
      const own = (await rows<{ name: string }>(adminClient, 'SHOW TABLES')).map((r) => r.name);
      expect(own).toEqual(allTables);
    });
  });

  describe('DESCRIBE', () => {
    it('describes a readable table: its columns and types, in order', async () => {
      const cols = await rows<{ name: string; type: string; default_type: string }>(aClient, 'DESCRIBE TABLE executions');
      const expected = await td.daemon.store.query<{ name: string; type: string }>(
        'SELECT name, type FROM system.columns WHERE database = {db:String} AND table = {t:String} ORDER BY position',
        { db: td.database, t: 'executions' },
      );
      expect(cols.map((c) => [c.name, c.type])).toEqual(expected.map((c) => [c.name, c.type]));
      expect(cols.find((c) => c.name === 'project_id')).toMatchObject({ type: expect.any(String) });
      expect(Object.keys(cols[0]!)).toEqual(['name', 'type', 'default_type', 'default_expression', 'comment', 'codec_expression', 'ttl_expression']);
      const desc = await http(`desc ${td.database}.runs FORMAT TSV`);
      expect(desc.status).toBe(200);
      expect(desc.text.split('\n')[0]!.split('\t')[0]).toBe('project_id');
    });

    it('refuses a closed table, another database, a system table, a table function', async () => {
      for (const [q, reason] of [
        ['DESCRIBE TABLE tokens', 'is not readable with a project token'],
        ['DESC notification_channels', 'is not readable with a project token'],
        [`DESCRIBE ${otherDb}.other_secret_table`, 'is not readable with a project token'],
        ['DESCRIBE TABLE system.processes', 'system database is closed'],
        ['DESCRIBE numbers(3)', 'are served; got'],
        ['SHOW CREATE TABLE executions', 'are served; got'],
        ['SHOW PROCESSLIST', 'are served; got'],
      ] as const) {
        const res = await http(q);
        expect([res.status, JSON.parse(res.text).error], q).toEqual([403, 'sql_refused']);
        expect(res.text, q).toContain(reason);
        expect(res.text, q).not.toContain('token_hash');
      }
      // The admin may describe any table.
      expect((await rows<{ name: string }>(adminClient, 'DESCRIBE TABLE tokens')).map((c) => c.name)).toContain('token_hash');
    });
  });

  describe('system.tables and system.columns', () => {
    it('are filtered to the readable tables of the store database', async () => {
      const tables = await rows<{ database: string; name: string }>(aClient, 'SELECT database, name FROM system.tables ORDER BY name');
      expect(new Set(tables.map((t) => t.database))).toEqual(new Set([td.database]));
      const shown = (await rows<{ name: string }>(aClient, 'SHOW TABLES')).map((r) => r.name);
      expect(tables.map((t) => t.name)).toEqual(shown);

      const columns = await rows<{ database: string; table: string; name: string; type: string }>(aClient, 'SELECT database, table, name, type FROM system.columns');
      expect(new Set(columns.map((c) => c.database))).toEqual(new Set([td.database]));
      expect(new Set(columns.map((c) => c.table))).toEqual(new Set(shown));
      const names = columns.map((c) => c.name);
      expect(names).not.toContain('token_hash');
      expect(names).not.toContain('signing_secret');
      expect(names).not.toContain('secret_col');
      expect(columns.some((c) => c.table === 'executions' && c.name === 'title')).toBe(true);
    });

    it('stay filtered through joins, subqueries and the current query analyzer', async () => {
      const join = await http(
        "SELECT t.name, count() AS n FROM system.tables AS t JOIN system.columns AS c ON c.table = t.name WHERE c.database = currentDatabase() OR 1 GROUP BY t.name FORMAT JSONEachRow",
        { params: { enable_analyzer: '1' } },
      );
      expect(join.status, join.text).toBe(200);
      expect(join.text).not.toMatch(/tokens|notification_channels|other_secret_table/);
      const probe = await http("SELECT count() FROM system.columns WHERE table IN ('tokens', 'other_secret_table') OR name IN ('token_hash', 'secret_col')");
      expect([probe.status, probe.text]).toEqual([200, '0\n']);
      const sub = await http("SELECT count() FROM (SELECT database FROM system.tables) WHERE database != currentDatabase()");
      expect(sub.text).toBe('0\n');
    });

    it('refuse the columns that size every project’s data or locate it on disk, naming what may be read', async () => {
      for (const q of ['SELECT name, total_rows FROM system.tables', 'SELECT * FROM system.tables', 'SELECT sum(data_compressed_bytes) FROM system.columns', "SELECT name FROM system.tables WHERE total_bytes > 0"]) {
        const res = await http(q);
        expect([res.status, JSON.parse(res.text).error], q).toEqual([403, 'sql_refused']);
        expect(res.text, q).toMatch(/closed to project tokens.*readable: database, /);
      }
      // The admin reads them whole.
      const r = await rows<{ n: string }>(adminClient, `SELECT count() AS n FROM system.tables WHERE database = '${otherDb}' AND total_rows IS NOT NULL`);
      expect(r).toEqual([{ n: '1' }]);
    });

    it('keeps every other system table and information_schema closed', async () => {
      for (const q of ['SELECT data_path FROM system.databases', 'SELECT name FROM system.parts', 'SELECT name, value FROM system.settings', 'SELECT * FROM information_schema.tables', 'SELECT * FROM INFORMATION_SCHEMA.COLUMNS']) {
        const res = await http(q);
        expect([res.status, JSON.parse(res.text).error], q).toEqual([403, 'sql_refused']);
      }
    });

    it('answers SHOW DATABASES and system.databases with the store database only', async () => {
      expect((await http('SHOW DATABASES')).text).toBe(`${td.database}\n`);
      expect((await http('SELECT name, engine FROM system.databases WHERE 1 FORMAT JSONEachRow')).text).toBe(`{"name":"${td.database}","engine":"Atomic"}\n`);
      const admin = (await rows<{ name: string }>(adminClient, 'SHOW DATABASES')).map((r) => r.name);
      expect(admin).toEqual(expect.arrayContaining([td.database, otherDb, 'system']));
    });
  });

  describe('flakehouse sql --schema', () => {
    async function cli(args: string[], token = aSql): Promise<{ code: number; out: string }> {
      let out = '';
      const stdout = new Writable({
        write(chunk: Buffer, _enc, cb) {
          out += chunk.toString('utf8');
          cb();
        },
      });
      const env = { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: token, SERVICE_CLICKHOUSE_DATABASE: td.database, SERVICE_DATA_DIR: td.dataDir, SERVICE_ADMIN_TOKEN: td.adminToken };
      const code = await sqlCommand(args, env, td.dataDir, { stdin: Readable.from(['']), stdout });
      return { code, out };
    }

    it('prints the readable tables with their columns and types as a table', async () => {
      const r = await cli(['--schema']);
      expect(r.code).toBe(0);
      const lines = r.out.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^table\s+column\s+type$/);
      expect(lines[1]).toMatch(/^-+ +-+ +-+$/);
      expect(lines.at(-1)).toMatch(/^\(\d+ rows\)$/);
      const body = lines.slice(2, -1).map((l) => l.split(/\s{2,}/));
      const tables = new Set(body.map((c) => c[0]));
      const shown = (await rows<{ name: string }>(aClient, 'SHOW TABLES')).map((x) => x.name);
      expect([...tables].sort()).toEqual([...shown].sort());
      expect(body).toContainEqual(['executions', 'title', expect.stringMatching(/String/)]);
      expect(r.out).not.toMatch(/token_hash|signing_secret|secret_col|\btokens\b/);
    });

    it('takes --format, refuses a query beside it, and with --admin lists every table', async () => {
      const jsonl = await cli(['--schema', '--format', 'jsonl']);
      expect(jsonl.out.split('\n')[0]).toMatch(/^\{"table":"[a-z_]+","column":"[a-z_]+","type":".+"\}$/);
      await expect(cli(['--schema', 'SELECT 1'])).rejects.toThrow(/--schema takes no query/);
      const admin = await cli(['--schema', '--admin']);
      expect(admin.out).toMatch(/^tokens +token_hash +String$/m);
    });
  });
});

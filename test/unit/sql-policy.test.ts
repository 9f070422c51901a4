// The SQL endpoint's rules over the engine's EXPLAIN output (texts as chDB 26.7 prints them).
import { describe, expect, it } from 'vitest';
import {
  clickhouseErrorOf,
  formatContentType,
  queryTreeRefs,
  refuseAst,
  refuseQueryTree,
  rewriteSchemaStatement,
  SCHEMA_TABLE_COLUMNS,
  schemaTableFilters,
  settingsStatements,
  sqlCredentials,
  summarizeAst,
  tableFiltersSetting,
  type SqlPrincipal,
} from '../../src/domain/sql-policy.js';

const project: SqlPrincipal = { admin: false, readable: new Set(['fh.executions', 'fh.runs']), engineTableFunctions: new Set(['url', 's3', 'remote', 'merge', 'numbers']) };
const admin: SqlPrincipal = { ...project, admin: true };
const limits = { maxExecutionTimeSec: 60, maxResultRows: 1000, maxMemoryBytes: 1e9, maxThreads: 1 };

const AST_MERGE_JOIN = `SelectWithUnionQuery (children 2)
 ExpressionList (children 1)
  SelectQuery (children 3)
   ExpressionList (children 1)
    Asterisk
   TablesInSelectQuery (children 2)
    TablesInSelectQueryElement (children 1)
     TableExpression (children 1)
      Function merge (alias m) (children 1)
       ExpressionList (children 2)
        Literal \\'fh\\'
        Literal \\'^e\\'
    TablesInSelectQueryElement (children 2)
     TableExpression (children 1)
      TableIdentifier fh.other
     TableJoin (children 1)
      ExpressionList (children 1)
       Identifier id
   Function in (children 1)
    ExpressionList (children 2)
     Identifier x
     Subquery (children 1)
      SelectWithUnionQuery (children 1)
       ExpressionList (children 1)
        SelectQuery (children 2)
         ExpressionList (children 1)
          Literal UInt64_1
         TablesInSelectQuery (children 1)
          TablesInSelectQueryElement (children 1)
           TableExpression (children 1)
            Function numbers (children 1)
             ExpressionList (children 1)
              Literal UInt64_3
 Identifier CSV`;

describe('summarizeAst', () => {
  it('finds the format, the table functions, the functions and the tables', () => {
    const ast = summarizeAst(AST_MERGE_JOIN);
    expect(ast).toEqual({ root: 'SelectWithUnionQuery', format: 'CSV', extras: [], functions: ['merge', 'in', 'numbers'], tableFunctions: ['merge', 'numbers'], tables: ['fh.other'] });
  });

  it('sees INTO OUTFILE and SETTINGS as extra children of the root', () => {
    const outfile = summarizeAst("SelectWithUnionQuery (children 2)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ExpressionList (children 1)\n    Literal UInt64_1\n Literal \\'/tmp/x\\'");
    expect(outfile.extras).toEqual(['Literal']);
    expect(refuseAst(outfile, project)).toMatch(/INTO OUTFILE/);
  });
});

describe('refuseAst', () => {
  it('refuses statements other than SELECT', () => {
    expect(refuseAst(summarizeAst('InsertQuery   (children 1)\n Identifier t'), project)).toMatch(/only SELECT.*INSERT/);
    expect(refuseAst(summarizeAst('ShowTables'), admin)).toMatch(/only SELECT/);
  });

  it('allows generators, refuses merge() to a project token and allows it to the admin', () => {
    expect(refuseAst(summarizeAst(AST_MERGE_JOIN), project)).toMatch(/table function merge\(\) is not allowed/);
    expect(refuseAst(summarizeAst(AST_MERGE_JOIN), admin)).toBeNull();
  });

  it('refuses a table function named outside FROM, file() and dictionaries for everyone, system tables for projects', () => {
    const inUrl = { root: 'SelectWithUnionQuery', extras: [], functions: ['in', 'url'], tableFunctions: [], tables: [] };
    expect(refuseAst(inUrl, admin)).toMatch(/url\(\)/);
    for (const f of ['file', 'dictGet', 'dictGetOrDefault', 'joinGet', 'hasColumnInTable']) {
      expect(refuseAst({ ...inUrl, functions: [f] }, admin), f).toMatch(/not allowed/);
    }
    const system = { ...inUrl, functions: [], tables: ['system.query_log'] };
    expect(refuseAst(system, project)).toMatch(/system database/);
    expect(refuseAst({ ...system, tables: ['INFORMATION_SCHEMA.TABLES'] }, project)).toMatch(/system database/);
    expect(refuseAst(system, admin)).toBeNull();
  });
});

describe('refuseQueryTree', () => {
  const tree = queryTreeRefs(`QUERY id: 0
  JOIN TREE
    TABLE id: 3, alias: __table1, table_name: fh.executions
  WHERE
    FUNCTION id: 4, function_name: in, function_type: ordinary, result_type: UInt8
      ARGUMENTS
        LIST id: 5, nodes: 2
          TABLE id: 7, alias: __table2, table_name: system.processes
    TABLE_FUNCTION id: 11, alias: __table1, table_function_name: numbers`);

  it('reads the resolved tables, table functions and functions', () => {
    expect(tree).toEqual({ tables: ['fh.executions', 'system.processes'], tableFunctions: ['numbers'], functions: ['in'], columns: [] });
  });

  it("lets a project read only its tables (and system.one), the admin every table", () => {
    expect(refuseQueryTree(tree, project)).toMatch(/system database.*system\.processes/);
    expect(refuseQueryTree(tree, admin)).toBeNull();
    expect(refuseQueryTree({ tables: ['fh.executions', 'system.one'], tableFunctions: [], functions: [], columns: [] }, project)).toBeNull();
    expect(refuseQueryTree({ tables: ['fh.tokens'], tableFunctions: [], functions: [], columns: [] }, project)).toMatch(/fh\.tokens is not readable/);
    expect(refuseQueryTree({ tables: [], tableFunctions: ['merge'], functions: [], columns: [] }, project)).toMatch(/merge/);
    const prewhere = queryTreeRefs('QUERY id: 0\n  JOIN TREE\n    TABLE id: 3, alias: __table1, table_name: fh.executions\n  PREWHERE\n    FUNCTION id: 4, function_name: throwIf, function_type: ordinary, result_type: UInt8\n  WHERE');
    expect(prewhere.prewhere).toBe(true);
    expect(refuseQueryTree(prewhere, project)).toMatch(/PREWHERE is not allowed with a project token/);
    expect(refuseQueryTree(prewhere, admin)).toBeNull();
  });
});

describe('settingsStatements', () => {
  it('applies the server limits, lowers them on request, never raises them', () => {
    const r = settingsStatements({ max_result_rows: '10', max_threads: '8', date_time_output_format: 'iso', query: 'SELECT 1' }, limits);
    expect(r).toEqual({
      ok: true,
      statements: [
        'SET max_result_rows = 10',
        'SET max_threads = 1',
        "SET date_time_output_format = 'iso'",
        'SET max_execution_time = 60',
        'SET max_memory_usage = 1000000000',
        'SET max_block_size = 1024',
        'SET enable_analyzer = 0',
        'SET output_format_json_quote_64bit_integers = 1',
        'SET os_thread_priority = 19',
        "SET result_overflow_mode = 'throw'",
        "SET timeout_overflow_mode = 'throw'",
      ],
    });
    expect(settingsStatements({ max_result_rows: '0' }, limits)).toMatchObject({ statements: expect.arrayContaining(['SET max_result_rows = 1000']) });
  });

  it('refuses a setting outside the allow-list or a non-number limit, naming it, and quotes string values', () => {
    expect(settingsStatements({ additional_table_filters: '{}' }, limits)).toMatchObject({ ok: false, path: 'additional_table_filters' });
    expect(settingsStatements({ max_threads: '1; DROP' }, limits)).toMatchObject({ ok: false, path: 'max_threads' });
    expect(settingsStatements({ readonly: '0' }, limits)).toMatchObject({ ok: false, path: 'readonly' });
    const r = settingsStatements({ session_timezone: "x' , readonly = '0" }, limits);
    expect(r.ok && r.statements[0]).toBe("SET session_timezone = 'x\\' , readonly = \\'0'");
  });
});

describe('helpers', () => {
  it('reads credentials the ways ClickHouse clients send them', () => {
    expect(sqlCredentials({ authorization: `Basic ${Buffer.from('web:fh_x:y').toString('base64')}` })).toEqual({ user: 'web', password: 'fh_x:y' });
    expect(sqlCredentials({ 'x-clickhouse-user': 'web', 'x-clickhouse-key': 'k' })).toEqual({ user: 'web', password: 'k' });
    expect(sqlCredentials({ authorization: 'Bearer tok' })).toEqual({ password: 'tok' });
    expect(sqlCredentials({})).toBeNull();
  });

  it('parses ClickHouse errors, builds the filter map, maps formats to content types', () => {
    expect(clickhouseErrorOf('Query failed: Code: 60. DB::Exception: Unknown table x. (UNKNOWN_TABLE)')).toEqual({ code: 60, name: 'UNKNOWN_TABLE', text: 'Code: 60. DB::Exception: Unknown table x. (UNKNOWN_TABLE)' });
    expect(clickhouseErrorOf('not a clickhouse error')).toBeNull();
    expect(tableFiltersSetting(new Map([['fh.runs', "project_id = 'a'"], ['fh.tokens', '0']]))).toBe("{'fh.runs': 'project_id = \\'a\\'', 'fh.tokens': '0'}");
    expect(formatContentType('JSONEachRow')).toMatch(/ndjson/);
    expect(formatContentType('JSON')).toMatch(/application\/json/);
    expect(formatContentType('CSVWithNames')).toMatch(/text\/csv/);
    expect(formatContentType('RowBinary')).toBe('application/octet-stream');
  });
});

// EXPLAIN QUERY TREE of `SELECT c.name, t.total_rows FROM system.columns AS c JOIN system.tables AS t ON t.name = c.table`.
const TREE_SYSTEM = `QUERY id: 0
  PROJECTION COLUMNS
    name String
    total_rows Nullable(UInt64)
  PROJECTION
    LIST id: 1, nodes: 2
      COLUMN id: 2, column_name: name, result_type: String, source_id: 3
      COLUMN id: 4, column_name: total_rows, result_type: Nullable(UInt64), source_id: 5
  JOIN TREE
    JOIN id: 6, strictness: ALL, kind: INNER
      LEFT TABLE EXPRESSION
        TABLE id: 3, alias: __table1, table_name: system.columns
      RIGHT TABLE EXPRESSION
        TABLE id: 5, alias: __table2, table_name: system.tables
      JOIN EXPRESSION
        FUNCTION id: 7, function_name: equals, function_type: ordinary, result_type: UInt8
          ARGUMENTS
            LIST id: 8, nodes: 2
              COLUMN id: 9, column_name: name, result_type: String, source_id: 5
              COLUMN id: 10, column_name: table, result_type: String, source_id: 3`;

describe('schema discovery: system.tables and system.columns', () => {
  it('reads the columns each table is asked for, whatever the order of the dump', () => {
    expect(queryTreeRefs(TREE_SYSTEM).columns).toEqual([
      { table: 'system.columns', column: 'name' },
      { table: 'system.tables', column: 'total_rows' },
      { table: 'system.tables', column: 'name' },
      { table: 'system.columns', column: 'table' },
    ]);
  });

  it('lets a project token read the schema columns, never the sizes (every project’s rows), the admin all', () => {
    const tree = queryTreeRefs(TREE_SYSTEM);
    expect(refuseQueryTree(tree, project)).toMatch(/the column total_rows of system\.tables is closed to project tokens/);
    expect(refuseQueryTree(tree, admin)).toBeNull();
    const safe = { ...tree, columns: tree.columns.filter((c) => c.column !== 'total_rows') };
    expect(refuseQueryTree(safe, project)).toBeNull();
    for (const closed of ['data_compressed_bytes', 'data_uncompressed_bytes', 'marks_bytes']) {
      expect(refuseQueryTree({ ...safe, columns: [{ table: 'system.columns', column: closed }] }, project), closed).toMatch(/closed to project tokens/);
    }
    for (const closed of ['total_bytes', 'data_paths', 'metadata_path', 'parts', 'lifetime_rows']) {
      expect(SCHEMA_TABLE_COLUMNS['system.tables'], closed).not.toContain(closed);
    }
  });

  it('opens system.tables, system.columns and system.databases to project tokens, no other system table', () => {
    const ast = (tables: string[]) => ({ root: 'SelectWithUnionQuery', extras: [], functions: [], tableFunctions: [], tables });
    expect(refuseAst(ast(['system.tables', 'system.columns']), project)).toBeNull();
    expect(refuseAst(ast(['system.databases']), project)).toBeNull();
    expect(refuseQueryTree({ tables: ['system.databases'], tableFunctions: [], functions: [], columns: [{ table: 'system.databases', column: 'data_path' }] }, project)).toMatch(/data_path of system\.databases is closed/);
    for (const t of ['system.parts', 'system.settings', 'information_schema.tables', 'INFORMATION_SCHEMA.COLUMNS', 'system.Tables']) {
      expect(refuseAst(ast([t]), project), t).toMatch(/system database is closed/);
    }
    expect(refuseQueryTree({ tables: ['system.parts'], tableFunctions: [], functions: [], columns: [] }, project)).toMatch(/system database/);
    expect(refuseQueryTree({ tables: ['system.tables', 'system.columns'], tableFunctions: [], functions: [], columns: [] }, project)).toBeNull();
  });

  it('filters the schema tables to the database and its readable tables, quoted', () => {
    expect(Object.fromEntries(schemaTableFilters('fh', ['executions', "o'dd"]))).toEqual({
      'system.databases': "name = 'fh'",
      'system.tables': "database = 'fh' AND name IN ('executions', 'o\\'dd')",
      'system.columns': "database = 'fh' AND table IN ('executions', 'o\\'dd')",
    });
    expect(schemaTableFilters('fh', []).get('system.tables')).toBe("database = 'fh' AND name IN ('')");
    // As an additional_table_filters value: quoted once more.
    expect(tableFiltersSetting(schemaTableFilters('fh', ['runs']))).toBe("{'system.databases': 'name = \\'fh\\'', 'system.tables': 'database = \\'fh\\' AND name IN (\\'runs\\')', 'system.columns': 'database = \\'fh\\' AND table IN (\\'runs\\')'}");
  });
});

describe('rewriteSchemaStatement', () => {
  const ctx = { admin: false, database: 'fh', storeDatabase: 'fh', readable: new Set(['fh.executions', 'fh.runs']) };
  const adminCtx = { ...ctx, admin: true };
  const sql = (text: string, c = ctx) => {
    const r = rewriteSchemaStatement(text, c);
    if (!r?.ok) throw new Error(`not rewritten: ${JSON.stringify(r)}`);
    return r.sql;
  };
  const refusal = (text: string, c = ctx) => {
    const r = rewriteSchemaStatement(text, c);
    if (!r || r.ok) throw new Error(`not refused: ${JSON.stringify(r)}`);
    return r.reason;
  };

  it('leaves other statements to the other checks', () => {
    expect(rewriteSchemaStatement('SELECT name FROM system.tables', ctx)).toBeNull();
    expect(rewriteSchemaStatement("INSERT INTO executions (title) VALUES ('x')", ctx)).toBeNull();
    expect(rewriteSchemaStatement('SHOWTABLES', ctx)).toBeNull();
  });

  it('rewrites SHOW TABLES (FROM, [NOT] [I]LIKE, LIMIT, FORMAT; any case) into a SELECT over system.tables', () => {
    expect(sql('SHOW TABLES')).toBe("SELECT name FROM system.tables WHERE database = 'fh' ORDER BY name");
    expect(sql('show tables')).toBe("SELECT name FROM system.tables WHERE database = 'fh' ORDER BY name");
    expect(sql('SHOW TABLES FROM fh')).toBe("SELECT name FROM system.tables WHERE database = 'fh' ORDER BY name");
    expect(sql('SHOW TABLES FROM `fh`')).toBe("SELECT name FROM system.tables WHERE database = 'fh' ORDER BY name");
    expect(sql("SHOW TABLES LIKE 'e%' LIMIT 3 FORMAT JSONEachRow")).toBe("SELECT name FROM system.tables WHERE database = 'fh' AND name LIKE 'e%' ORDER BY name LIMIT 3 FORMAT JSONEachRow");
    expect(sql("SHOW TABLES NOT ILIKE 'a\\'b%'")).toBe("SELECT name FROM system.tables WHERE database = 'fh' AND name NOT ILIKE 'a\\'b%' ORDER BY name");
    expect(sql('SHOW TABLES FORMAT PrettyCompact')).toBe("SELECT name FROM system.tables WHERE database = 'fh' ORDER BY name FORMAT PrettyCompact");
  });

  it('refuses SHOW TABLES FROM another database to a project token, not to the admin', () => {
    expect(refusal('SHOW TABLES FROM other_db')).toMatch(/reads only the database fh \(SHOW TABLES FROM other_db\)/);
    expect(refusal('SHOW TABLES FROM system')).toMatch(/reads only the database fh/);
    expect(refusal('SHOW TABLES FROM `fh2`')).toMatch(/fh2/);
    expect(sql('SHOW TABLES FROM system', adminCtx)).toBe("SELECT name FROM system.tables WHERE database = 'system' ORDER BY name");
  });

  it('refuses SHOW shapes it cannot keep inside the filters, naming those it serves', () => {
    for (const text of ['SHOW TABLES WHERE 1', 'SHOW CREATE TABLE executions', 'SHOW PROCESSLIST', 'SHOW GRANTS', 'SHOW COLUMNS FROM executions', "SHOW TABLES LIKE 'x' OR 1", 'SHOW TABLES LIMIT 1; DROP']) {
      expect(refusal(text), text).toMatch(/only SHOW TABLES .*DESCRIBE .* are served; got/);
      expect(refusal(text, adminCtx), text).toMatch(/are served/);
    }
  });

  it('rewrites DESCRIBE / DESC of a readable table into a SELECT over system.columns', () => {
    const columns = "SELECT name, type, default_kind AS default_type, default_expression, comment, compression_codec AS codec_expression, '' AS ttl_expression FROM system.columns";
    expect(sql('DESCRIBE TABLE executions')).toBe(`${columns} WHERE database = 'fh' AND table = 'executions' ORDER BY position`);
    expect(sql('describe table fh.`runs` FORMAT JSON')).toBe(`${columns} WHERE database = 'fh' AND table = 'runs' ORDER BY position FORMAT JSON`);
    expect(sql('DESCRIBE TABLE `fh`.`executions`')).toBe(`${columns} WHERE database = 'fh' AND table = 'executions' ORDER BY position`);
    expect(sql('DESCRIBE TABLE system.processes', adminCtx)).toBe(`${columns} WHERE database = 'system' AND table = 'processes' ORDER BY position`);
    expect(sql('DESCRIBE TABLE `we\\`ird`', adminCtx)).toContain("table = 'we`ird'");
  });

  it('refuses DESCRIBE of a table the project token may not read, a table function or a subquery', () => {
    expect(refusal('DESCRIBE TABLE tokens')).toMatch(/fh\.tokens is not readable with a project token/);
    expect(refusal('DESCRIBE TABLE other.executions')).toMatch(/other\.executions is not readable/);
    expect(refusal('DESCRIBE TABLE system.processes')).toMatch(/system database is closed/);
    expect(refusal('DESCRIBE TABLE numbers(3)')).toMatch(/are served; got DESCRIBE TABLE numbers\(3\)/);
    expect(refusal('DESCRIBE TABLE (SELECT 1)')).toMatch(/are served/);
    expect(refusal('DESCRIBE TABLE executions SETTINGS describe_include_subcolumns = 1')).toMatch(/are served/);
  });

  it('answers SHOW DATABASES from system.databases (filtered to the store database for a project)', () => {
    expect(sql('SHOW DATABASES')).toBe('SELECT name FROM system.databases ORDER BY name');
    expect(sql('SHOW DATABASES FORMAT JSONEachRow', adminCtx)).toBe('SELECT name FROM system.databases ORDER BY name FORMAT JSONEachRow');
  });
});

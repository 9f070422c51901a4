// The SQL endpoint's rules over the engine's EXPLAIN output (texts as chDB 26.7 prints them).
import { describe, expect, it } from 'vitest';
import {
  clickhouseErrorOf,
  formatContentType,
  queryTreeRefs,
  refuseAst,
  refuseQueryTree,
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
    expect(tree).toEqual({ tables: ['fh.executions', 'system.processes'], tableFunctions: ['numbers'], functions: ['in'] });
  });

  it("lets a project read only its tables (and system.one), the admin every table", () => {
    expect(refuseQueryTree(tree, project)).toMatch(/system database.*system\.processes/);
    expect(refuseQueryTree(tree, admin)).toBeNull();
    expect(refuseQueryTree({ tables: ['fh.executions', 'system.one'], tableFunctions: [], functions: [] }, project)).toBeNull();
    expect(refuseQueryTree({ tables: ['fh.tokens'], tableFunctions: [], functions: [] }, project)).toMatch(/fh\.tokens is not readable/);
    expect(refuseQueryTree({ tables: [], tableFunctions: ['merge'], functions: [] }, project)).toMatch(/merge/);
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

// Store.readQuery against the real engine: its parameters written into the SQL read back exactly as
// bound ones do (no value can end its literal), and it runs beside the bound queries of the process
// rather than behind them (chdb-node runs those one at a time).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/client.js';
import { inlineParams } from '../../src/store/inline-params.js';
import { openTestStore, dropTestStore } from '../helpers/daemon.js';

let store: Store;
beforeAll(async () => {
  store = await openTestStore({ migrated: false });
  await store.command(`CREATE TABLE ${store.table('kept')} (v String) ENGINE = MergeTree ORDER BY v`);
  await store.command(`INSERT INTO ${store.table('kept')} VALUES ('still here')`);
});
afterAll(() => dropTestStore(store));

const HOSTILE = [
  "it's",
  "'; DROP TABLE kept; --",
  'back\\slash',
  'trailing backslash\\',
  "\\'",
  'new\nline',
  'carriage\rreturn\ttab',
  'nul\0byte',
  '{v:String}',
  'ünïcödé ✓ 𝄞',
  '',
];

function readQuery<T>(sql: string, params: Record<string, unknown>): Promise<T[]> {
  if (!store.readQuery) throw new Error('the embedded store has readQuery');
  return store.readQuery<T>(sql, params);
}

describe('Store.readQuery', () => {
  it('reads back every string exactly as a bound parameter does, and none of them runs as SQL', async () => {
    for (const v of HOSTILE) {
      const sql = 'SELECT {v:String} AS v, length({v:String}) AS n';
      const inline = await readQuery<{ v: string; n: number }>(sql, { v });
      expect(inline).toEqual(await store.query(sql, { v }));
      expect(inline[0]?.v).toBe(v);
    }
    expect(await readQuery(`SELECT v FROM ${store.table('kept')}`, {})).toEqual([{ v: 'still here' }]);
  });

  it('reads back an array of every such string exactly as a bound array does', async () => {
    const sql = 'SELECT {list:Array(String)} AS list, length({list:Array(String)}) AS n';
    const rows = await readQuery<{ list: string[]; n: number | string }>(sql, { list: HOSTILE });
    expect(rows).toEqual(await store.query(sql, { list: HOSTILE }));
    expect(rows[0]?.list).toEqual(HOSTILE);
  });

  it('types each value as its placeholder says: UUIDs, numbers, nullable, arrays, LIMIT', async () => {
    const params = { id: '0190e7c6-1b7d-7d2e-9a55-0f0d1e2c3b4a', n: 3, big: -1_700_000_000_000, none: null, list: ["a'b", 'c\\d'] };
    const sql = `SELECT {id:UUID} AS id, toTypeName({id:UUID}) AS t, {big:Int64} AS big, {none:Nullable(UInt32)} AS none,
      {list:Array(String)} AS list, (SELECT count() FROM (SELECT number FROM numbers(10) LIMIT {n:UInt32})) AS limited`;
    const rows = await readQuery<Record<string, unknown>>(sql, params);
    expect(rows).toEqual(await store.query(sql, params));
    expect(rows[0]).toMatchObject({ id: params.id, t: 'UUID', none: null, list: params.list });
    expect(Number(rows[0]?.limited)).toBe(3);
  });

  it('takes parameters past the default query size of the engine (256 KiB), as a bound read does', async () => {
    // A team's owner filter on the health page is every test it owns: 10,000 ids are ~390 KB of SQL here.
    const ids = Array.from({ length: 10_000 }, (_, i) => `0190e7c6-1b7d-7d2e-9a55-${i.toString(16).padStart(12, '0')}`);
    const sql = 'SELECT length({ids:Array(UUID)}) AS n, toString({ids:Array(UUID)}[10000]) AS last';
    expect(inlineParams(sql, { ids }).length).toBeGreaterThan(256 * 1024);
    const rows = await readQuery<{ n: number | string; last: string }>(sql, { ids });
    expect(rows).toEqual(await store.query(sql, { ids }));
    expect(Number(rows[0]?.n)).toBe(10_000);
    expect(rows[0]?.last).toBe(ids[9_999]);
  });

  it('refuses a value its type cannot parse and a placeholder without a value', async () => {
    await expect(readQuery('SELECT {n:UInt32} AS n', { n: -1 })).rejects.toThrow(/UInt32/);
    await expect(readQuery("SELECT {id:UUID} AS id", { id: "x' OR 1=1 --" })).rejects.toThrow();
    expect(() => inlineParams('SELECT {missing:String}', {})).toThrow(/missing/);
  });

  it('runs before the pipeline: a read at a higher priority than the point queries', async () => {
    const sql = "SELECT toUInt8(getSetting('priority')) AS p";
    expect(await readQuery(sql, {})).toEqual([{ p: 1 }]);
    expect(await store.query(sql)).toEqual([{ p: 2 }]);
  });

  it('is not queued behind the bound queries already waiting for the engine', async () => {
    await readQuery('SELECT 1 AS one', {}); // its connection opened before the race
    const order: string[] = [];
    // Bound queries run one at a time in this process: the last of these starts only after the others.
    const bound = Array.from({ length: 30 }, (_, i) =>
      store.query('SELECT count() AS c FROM numbers_mt({n:UInt64}) WHERE cityHash64(number) % 7 = 1', { n: 5_000_000 }).then(() => order.push(`bound ${i}`)),
    );
    await readQuery('SELECT 1 AS one', {}).then(() => order.push('read'));
    await Promise.all(bound);
    expect(order.indexOf('read')).toBeLessThan(order.indexOf('bound 29'));
  });
});

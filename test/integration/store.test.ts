// The store against the real engine: TabSeparated round trips and migrations.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrate.js';
import { CHDB_PATH, openTestStore, dropTestStore } from '../helpers/daemon.js';

let store: Store;
beforeAll(async () => {
  store = await openTestStore({ migrated: false });
});
afterAll(() => dropTestStore(store));

describe('store', () => {
  it('applies migrations once and records them', async () => {
    const first = await migrate(store);
    expect(first.length).toBeGreaterThan(0);
    expect(await migrate(store)).toEqual([]);
    const tables = await store.query<{ name: string }>(`SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name`, { db: store.database });
    expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['executions', 'projects', 'receipts', 'runs', 'test_identities', 'tokens']));
  });

  it('records the migrations applied before one that fails, and resumes after them', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-migrations-'));
    const own = await openStore({ chdbPath: CHDB_PATH, database: `t_${randomBytes(6).toString('hex')}` });
    try {
      writeFileSync(path.join(dir, '001_first.sql'), 'CREATE TABLE IF NOT EXISTS {db}.first (id UInt32) ENGINE = MergeTree ORDER BY id;\n');
      writeFileSync(path.join(dir, '002_second.sql'), 'CREATE TABLE IF NOT EXISTS {db}.second (id UInt32) ENGINE = MergeTree ORDER BY id;\n');
      writeFileSync(path.join(dir, '003_broken.sql'), 'CREATE TABLE {db}.broken (id NoSuchType) ENGINE = MergeTree ORDER BY id;\n');
      await expect(migrate(own, dir)).rejects.toThrow(/NoSuchType/);
      const recorded = async (): Promise<number[]> =>
        (await own.query<{ version: number }>(`SELECT version FROM ${own.table('schema_migrations')} FINAL ORDER BY version`)).map((r) => Number(r.version));
      expect(await recorded()).toEqual([1, 2]);
      writeFileSync(path.join(dir, '003_broken.sql'), 'CREATE TABLE IF NOT EXISTS {db}.broken (id UInt32) ENGINE = MergeTree ORDER BY id;\n');
      expect(await migrate(own, dir)).toEqual([3]);
      expect(await recorded()).toEqual([1, 2, 3]);
    } finally {
      await own.command(`DROP DATABASE IF EXISTS \`${own.database}\``);
      await own.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('round-trips awkward strings, nulls and times through TabSeparated inserts', async () => {
    await store.command(
      `CREATE TABLE ${store.table('tsv_probe')} (id UInt32, s String, n Nullable(UInt32), t DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY id`,
    );
    const nasty = ['tab\there', 'new\nline', 'back\\slash', 'cr\rlf', 'nul\0byte', 'ünïcödé 🚀', "quote ' and \" both", '\\N', ''];
    const rows = nasty.map((s, i) => ({ id: i, s, n: i % 2 === 0 ? null : i, t: '2026-11-21 10:00:00.123' }));
    await store.insertTsv('tsv_probe', { names: ['id', 's', 'n', 't'], plain: new Set(['id', 'n', 't']) }, rows, 'probe:tsv');
    const back = await store.query<{ id: number; s: string; n: number | null; t: number }>(
      `SELECT id, s, n, toUnixTimestamp64Milli(t) AS t FROM ${store.table('tsv_probe')} ORDER BY id`,
    );
    expect(back.map((r) => r.s)).toEqual(nasty);
    expect(back.map((r) => r.n)).toEqual(nasty.map((_, i) => (i % 2 === 0 ? null : i)));
    expect(Number(back[0]!.t)).toBe(Date.parse('2026-11-21T10:00:00.123Z'));
  });
});

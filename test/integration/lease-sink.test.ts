// The lease's sink against the real store: its tokens are the ones stored data deduplicates on
// (`lease:<lease>:<part>`, unchanged across upgrades), a write through it is recorded, and a failed
// insert is not (the runtime then may unfreeze and split the lease).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaseSink, leaseToken, type LeaseWrites } from '../../src/pipeline/lease-sink.js';
import type { TsvColumns } from '../../src/store/tsv.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

describe('lease sink', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ work: false });
    const store = td.daemon.store;
    for (const t of ['sink_json', 'sink_tsv']) {
      await store.command(`CREATE TABLE ${store.table(t)} (id String, n UInt32) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100`);
    }
  });
  afterAll(async () => td?.close());

  const rows = async (table: string): Promise<{ id: string; n: number }[]> =>
    (await td.daemon.store.query<{ id: string; n: number }>(`SELECT id, n FROM ${td.daemon.store.table(table)} ORDER BY id, n`)).map((r) => ({ id: r.id, n: Number(r.n) }));

  it('derives the tokens the clickhouse exporter has always used', () => {
    const sink = leaseSink(td.daemon.store, '0193a1b2-0000-7000-8000-000000000001');
    expect(sink.token('executions')).toBe('lease:0193a1b2-0000-7000-8000-000000000001:executions');
    expect(sink.token('test_state')).toBe(leaseToken('0193a1b2-0000-7000-8000-000000000001', 'test_state'));
    expect(leaseToken('L/executions/nightly', 'runs')).toBe('lease:L/executions/nightly:runs');
  });

  it('a redelivery of the lease writes nothing twice; another lease writes its own rows; each write is recorded', async () => {
    const first: LeaseWrites = { wrote: false };
    const sink = leaseSink(td.daemon.store, 'lease-a', first);
    await sink.insert('sink_json', [{ id: 'a', n: 1 }], 'rows');
    expect(first.wrote).toBe(true);
    // The same lease delivered again (a crash after the write): the same token, deduplicated.
    const again: LeaseWrites = { wrote: false };
    await leaseSink(td.daemon.store, 'lease-a', again).insert('sink_json', [{ id: 'a', n: 1 }], 'rows');
    expect(again.wrote).toBe(true);
    // Another lease (or the halves of a split one) writes under its own token.
    await leaseSink(td.daemon.store, 'lease-b').insert('sink_json', [{ id: 'a', n: 1 }], 'rows');
    expect(await rows('sink_json')).toEqual([
      { id: 'a', n: 1 },
      { id: 'a', n: 1 },
    ]);

    const columns: TsvColumns = { names: ['id', 'n'] };
    const tsv: LeaseWrites = { wrote: false };
    for (let i = 0; i < 2; i++) await leaseSink(td.daemon.store, 'lease-a', tsv).insertTsv('sink_tsv', columns, [{ id: 'x', n: 7 }, { id: 'y', n: 8 }], 'rows');
    expect(tsv.wrote).toBe(true);
    expect(await rows('sink_tsv')).toEqual([
      { id: 'x', n: 7 },
      { id: 'y', n: 8 },
    ]);
  });

  it('a failed insert is not recorded as written; wrote() records an effect outside the store', async () => {
    const writes: LeaseWrites = { wrote: false };
    const sink = leaseSink(td.daemon.store, 'lease-c', writes);
    await expect(sink.insert('sink_missing', [{ id: 'a', n: 1 }], 'rows')).rejects.toThrow();
    await expect(sink.insertTsv('sink_tsv', { names: ['id', 'n'] }, [{ id: 'z', n: -1 }], 'rows')).rejects.toThrow();
    expect(writes.wrote).toBe(false);
    expect((await rows('sink_tsv')).map((r) => r.id)).not.toContain('z');
    sink.wrote();
    expect(writes.wrote).toBe(true);
  });
});

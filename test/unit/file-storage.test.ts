// The file_storage extension (src/extensions/): one LMDB environment, a namespace per component,
// durable across close/reopen; the pipeline file's `extensions` section; and the one-time move of
// the notifier's and the tracker's own LMDB environments (before the extension) into it.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { builtinRegistry } from '../../src/builtin/components.js';
import type { ChannelSpec, Notification } from '../../src/domain/notifications.js';
import type { TrackedTest } from '../../src/domain/tracker.js';
import { NotifyStore, type Delivery } from '../../src/exporters/notify/store.js';
import { openTrackerState } from '../../src/exporters/tracker/index.js';
import { FileStorage, fileStorageFactory } from '../../src/extensions/file-storage.js';
import { defaultStorageSpec, ServiceExtensions } from '../../src/pipeline/extensions.js';
import type { ExtensionSpec } from '../../src/pipeline/extension.js';
import { createLogger } from '../../src/telemetry/logger.js';

/** The default `file_storage` of the built-in registry (what a file that names no extension gets). */
function storageSpec(): ExtensionSpec {
  const spec = defaultStorageSpec(builtinRegistry());
  if (!spec) throw new Error('the built-in registry has no file_storage');
  return spec;
}
import { PipelineConfigError, validatePipelineDoc } from '../../src/pipeline/graph.js';

const logger = createLogger('silent');
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'fh-file-storage-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function started(directory = path.join(dir, 'state')): Promise<FileStorage> {
  const fs = new FileStorage(directory);
  await fs.start();
  return fs;
}

describe('file_storage', () => {
  it('keeps each component (kind, id, name) in its own namespace', async () => {
    const fs = await started();
    const notify = fs.client<string>({ kind: 'exporter', id: 'notify' });
    const team = fs.client<string>({ kind: 'exporter', id: 'notify/team' });
    const processor = fs.client<string>({ kind: 'processor', id: 'notify' });
    const named = fs.client<string>({ kind: 'exporter', id: 'notify', name: 'dedupe' });
    await notify.set('k', 'exporter notify');
    await team.set('k', 'exporter notify/team');
    await processor.set('k', 'processor notify');
    expect(notify.get('k')).toBe('exporter notify');
    expect(team.get('k')).toBe('exporter notify/team');
    expect(processor.get('k')).toBe('processor notify');
    expect(named.get('k')).toBeUndefined();
    await team.delete('k');
    expect(team.get('k')).toBeUndefined();
    expect(notify.get('k')).toBe('exporter notify');
    expect([notify.count(), team.count(), processor.count(), named.count()]).toEqual([1, 0, 1, 0]);
    // The same namespace asked for twice is the same data.
    expect(fs.client<string>({ kind: 'exporter', id: 'notify' }).get('k')).toBe('exporter notify');
    await fs.shutdown();
  });

  it('values survive close and reopen of the environment', async () => {
    const first = await started();
    const c = first.client<{ n: number; tags: string[] }>({ kind: 'exporter', id: 'tracker' });
    await c.set('a', { n: 1, tags: ['x'] });
    await c.batch([
      { op: 'set', key: 'b', value: { n: 2, tags: [] } },
      { op: 'set', key: 'c', value: { n: 3, tags: [] } },
      { op: 'delete', key: 'a' },
    ]);
    await first.shutdown();
    expect(() => c.get('b')).toThrow(/not running/);

    const second = await started();
    const again = second.client<{ n: number; tags: string[] }>({ kind: 'exporter', id: 'tracker' });
    expect(again.get('a')).toBeUndefined();
    expect([...again.range()]).toEqual([
      { key: 'b', value: { n: 2, tags: [] } },
      { key: 'c', value: { n: 3, tags: [] } },
    ]);
    await second.shutdown();
  });

  it('orders numeric keys numerically and ranges by start/end', async () => {
    const fs = await started();
    const c = fs.client<string, number>({ kind: 'exporter', id: 'notify', name: 'deliveries' });
    for (const n of [10, 2, 300, 1]) await c.set(n, `d${n}`);
    expect([...c.range()].map((e) => e.key)).toEqual([1, 2, 10, 300]);
    expect([...c.range({ start: 2, end: 300 })].map((e) => e.value)).toEqual(['d2', 'd10']);
    await fs.shutdown();
  });

  it('a transaction spans a component\'s clients: all of it or nothing', async () => {
    const fs = await started();
    const a = fs.client<number>({ kind: 'exporter', id: 'notify', name: 'dedupe' });
    const b = fs.client<number>({ kind: 'exporter', id: 'notify', name: 'meta' });
    const result = await a.transaction(() => {
      void a.set('x', 1);
      void b.set('seq', (b.get('seq') ?? 0) + 1);
      // Reads inside see the transaction's writes.
      return a.get('x');
    });
    expect(result).toBe(1);
    expect(b.get('seq')).toBe(1);
    await expect(
      a.transaction(() => {
        void a.set('y', 2);
        void b.set('seq', 99);
        throw new Error('abandoned');
      }),
    ).rejects.toThrow('abandoned');
    expect(a.get('y')).toBeUndefined();
    expect(b.get('seq')).toBe(1);
    await fs.shutdown();
  });

  it('defaults to <data dir>/component-state; a relative directory is under the data dir', async () => {
    const def = fileStorageFactory.create(fileStorageFactory.configSchema.parse({}), { id: 'file_storage', logger, dataDir: dir }) as FileStorage;
    expect(def.directory).toBe(path.join(dir, 'component-state'));
    const rel = fileStorageFactory.create(fileStorageFactory.configSchema.parse({ directory: 'elsewhere' }), { id: 'file_storage', logger, dataDir: dir }) as FileStorage;
    expect(rel.directory).toBe(path.join(dir, 'elsewhere'));
    expect(fileStorageFactory.configSchema.safeParse({ dir: '/x' }).success).toBe(false);
  });
});

describe('ServiceExtensions (Host.extensions)', () => {
  it('hands out storage clients once started, from the first storage extension', async () => {
    const ext = new ServiceExtensions([storageSpec()], { dataDir: dir, logger });
    expect(ext.ids).toEqual(['file_storage']);
    expect(() => ext.storage('exporter', 'notify')).toThrow(/not started/);
    await ext.start();
    await ext.storage<number>('exporter', 'notify').set('k', 1);
    expect(existsSync(path.join(dir, 'component-state', 'data.mdb'))).toBe(true);
    await ext.shutdown();
    expect(() => ext.storage('exporter', 'notify')).toThrow(/no storage extension is running/);
  });

  it('refuses, on reload, a graph whose extensions differ', () => {
    const ext = new ServiceExtensions([storageSpec()], { dataDir: dir, logger });
    expect(ext.refusal({ extensions: [storageSpec()] })).toBeNull();
    const moved = { ...storageSpec(), config: { directory: '/elsewhere' } };
    expect(ext.refusal({ extensions: [moved] })).toMatch(/extensions cannot change on reload/);
    expect(() => ext.guard(() => 'built')({ extensions: [moved] })).toThrow(/restart/);
  });
});

describe('pipeline file: extensions', () => {
  const registry = builtinRegistry();
  const doc = (over: Record<string, unknown> = {}, serviceExtensions?: unknown): Record<string, unknown> => ({
    receivers: { native: {} },
    exporters: { debug: {} },
    ...over,
    service: {
      ...(serviceExtensions !== undefined ? { extensions: serviceExtensions } : {}),
      pipelines: { executions: { receivers: ['native'], exporters: ['debug'] } },
    },
  });
  const problems = (d: Record<string, unknown>): string[] => {
    try {
      validatePipelineDoc(d, registry, 'p.yaml');
    } catch (err) {
      if (err instanceof PipelineConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
      throw err;
    }
    return [];
  };

  it('adds a default file_storage when the file enables no storage extension', () => {
    const g = validatePipelineDoc(doc(), registry, 'p.yaml');
    // …and the default repositories extension (clickhouse_storage, test/unit/host.test.ts) after it.
    expect(g.extensions.map((e) => [e.id, e.implicit])).toEqual([
      ['file_storage', true],
      ['clickhouse_storage', true],
    ]);
  });

  it('uses the file\'s own file_storage, with its config', () => {
    const g = validatePipelineDoc(doc({ extensions: { 'file_storage/state': { directory: '/var/lib/fh-state' } } }, ['file_storage/state']), registry, 'p.yaml');
    expect(g.extensions.map((e) => [e.id, e.config])).toEqual([
      ['file_storage/state', { directory: '/var/lib/fh-state' }],
      ['clickhouse_storage', {}],
    ]);
  });

  it('refuses, with paths: an unknown type, a bad config, an undefined or unlisted extension', () => {
    expect(problems(doc({ extensions: { bogus: {} } }, ['bogus']))).toEqual(['extensions.bogus: unknown extension type "bogus" (known: clickhouse_storage, file_storage)']);
    expect(problems(doc({ extensions: { file_storage: { directroy: 'x' } } }, ['file_storage']))).toEqual(['extensions.file_storage.directroy: unknown key']);
    expect(problems(doc({}, ['file_storage']))).toEqual(['service.extensions.0: "file_storage" is not defined under extensions']);
    expect(problems(doc({ extensions: { file_storage: {} } }))).toEqual(['extensions.file_storage: defined but not listed under service.extensions']);
    expect(problems(doc({ extensions: { file_storage: {} } }, ['file_storage', 'file_storage']))).toEqual(['service.extensions.1: "file_storage" is listed twice']);
  });
});

// ------------------------------------------------------------------------------------------------
// The move from the components' own LMDB environments (their layout before the storage extension).

const channel: ChannelSpec = { id: 'slack:0123456789abcdef', kind: 'slack', target: 'https://hooks.slack.com/services/T/B/X', events: null, source: 'env' };
function notification(dedupeKey: string): Notification {
  return { type: 'flaky_detected', projectId: 'p1', eventId: `e-${dedupeKey}`, occurredAt: 1, dedupeKey, data: { type: 'flaky_detected' } as unknown as Notification['data'] };
}

/** <data dir>/notify as the notifier wrote it: dedupe (json), deliveries (uint32 keys), meta. */
async function writeLegacyNotify(dataDir: string, sentAt: number, queued: Delivery): Promise<void> {
  const root = open({ path: path.join(dataDir, 'notify'), maxDbs: 4, mapSize: 64 * 1024 * 1024 });
  const dedupe = root.openDB<number, string>({ name: 'dedupe', encoding: 'json' });
  const deliveries = root.openDB<Delivery, number>({ name: 'deliveries', keyEncoding: 'uint32', encoding: 'json' });
  const meta = root.openDB<number, string>({ name: 'meta', encoding: 'json' });
  await root.transaction(() => {
    void dedupe.put(`${channel.id}\u0000p1\u0000sent-key`, sentAt);
    void dedupe.put(`${channel.id}\u0000p1\u0000queued-key`, sentAt);
    void deliveries.put(queued.seq, queued);
    void meta.put('seq', 7);
  });
  await root.close();
}

describe('moving the old component LMDB environments into file_storage', () => {
  it('notify: a restarted daemon re-sends nothing it had queued, keeps what was still to send, once', async () => {
    const now = Date.now();
    const queued: Delivery = { seq: 7, channel, notification: notification('queued-key'), attempts: 2, nextAt: now, queuedAt: now - 1000, lastError: 'HTTP 503' };
    await writeLegacyNotify(dir, now - 60_000, queued);

    const ext = new ServiceExtensions([storageSpec()], { dataDir: dir, logger });
    await ext.start();
    const store = await NotifyStore.open(ext, 'notify', dir, logger);
    expect(existsSync(path.join(dir, 'notify'))).toBe(false);
    expect(existsSync(path.join(dir, 'notify.migrated', 'data.mdb'))).toBe(true);
    // The delivery still to send is there, with its attempts.
    expect(store.pending()).toEqual([queued]);
    // Already sent (within the window): not queued again.
    expect(await store.enqueue(notification('sent-key'), [channel], now, 3_600_000)).toEqual([]);
    // A new one continues the old numbering.
    const fresh = await store.enqueue(notification('new-key'), [channel], now, 3_600_000);
    expect(fresh.map((d) => d.seq)).toEqual([8]);
    await store.done(7);
    await ext.shutdown();

    // Restarted, with the old directory back (a crash before the rename): copied once, so the
    // delivery sent meanwhile does not come back.
    await ext.start();
    const again = await NotifyStore.open(ext, 'notify', dir, logger);
    expect(again.pending().map((d) => d.seq)).toEqual([8]);
    await writeLegacyNotify(dir, now - 60_000, queued);
    const third = await NotifyStore.open(ext, 'notify', dir, logger);
    expect(third.pending().map((d) => d.seq)).toEqual([8]);
    expect(existsSync(path.join(dir, 'notify.migrated-2'))).toBe(true);
    // Another notify exporter's namespace is its own.
    const other = await NotifyStore.open(ext, 'notify/team', dir, logger);
    expect(other.pending()).toEqual([]);
    await ext.shutdown();
  });

  it('tracker: the issues it opened are known after the move (no second issue)', async () => {
    const tracked: TrackedTest = {
      projectId: 'p1', testId: 't1', filePath: 'src/a.test.ts', suite: 's', title: 'a', candidate: true, score: 0.4, reasons: [],
      flakySince: 1, stableSince: null, lastEventAt: 2, receivedAt: 3, issue: { repository: 'acme/shop', number: 12, url: null, open: true, score: 0.4 }, opening: null,
    };
    const root = open({ path: path.join(dir, 'tracker'), maxDbs: 2, mapSize: 64 * 1024 * 1024 });
    await root.openDB<TrackedTest, string>({ name: 'tests', encoding: 'json' }).put('p1:t1', tracked);
    await root.close();

    const ext = new ServiceExtensions([storageSpec()], { dataDir: dir, logger });
    await ext.start();
    const state = await openTrackerState(ext, 'tracker', dir, logger);
    expect(state.tests.get('p1:t1')).toEqual(tracked);
    expect([...state.tests.range()].map((e) => e.key)).toEqual(['p1:t1']);
    expect(existsSync(path.join(dir, 'tracker'))).toBe(false);
    await ext.shutdown();
    // Reopened: still there, from the extension's own files.
    await ext.start();
    expect((await openTrackerState(ext, 'tracker', dir, logger)).tests.get('p1:t1')?.issue?.number).toBe(12);
    await ext.shutdown();
  });
});

// Identity stitching, ignore globs and error clustering through the real daemon: native batches in
// over HTTP, the worker's identity / normalize / clustering processors, results read back through
// GET /v1/runs/:id, GET /v1/tests/:id, the domain events and SQL on the tables.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServiceConfig } from '../../src/config/service-yml.js';
import { ProjectConfigs } from '../../src/config/resolved-project-config.js';
import type { DomainEvent } from '../../src/domain/events.js';
import { fingerprint } from '../../client/src/contract/identity.js';
import { buildRun } from '../../src/domain/records.js';
import { titleTokens, tokenJaccard } from '../../src/domain/stitch.js';
import { clickhouseExporterFactory, processorRows } from '../../src/exporters/clickhouse.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { WorkBatch } from '../../src/pipeline/work-batch.js';
import { leaseSink } from '../../src/pipeline/lease-sink.js';
import { buildHost, pipelineSettings } from '../../src/pipeline/host.js';
import { defaultRepositoriesSpec, ServiceExtensions } from '../../src/pipeline/extensions.js';
import { processingRegistry } from '../../src/builtin/processing.js';
import { loadServerSettings } from '../../src/config/daemon-env.js';
import { clusteringProcessorFactory } from '../../src/processors/clustering.js';
import { identityProcessorFactory } from '../../src/processors/identity.js';
import { normalizeProcessorFactory } from '../../src/processors/normalize.js';
import type { Lease } from '../../src/queue/types.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

interface Exec {
  filePath: string;
  suite: string;
  title: string;
  status?: 'pass' | 'fail' | 'skip' | 'flaky';
  params?: Record<string, unknown>;
  attempt?: number;
  retryOfIndex?: number;
  error?: { type?: string; message: string; stack?: string };
}

interface RunExecution {
  id: string;
  testIdentityId: string;
  filePath: string;
  suite: string;
  title: string;
  status: string;
  attempt: number;
}

interface Stitch {
  level: string;
  fromFilePath: string;
  fromTitle: string;
  toFilePath: string;
  toTitle: string;
  confidence: number;
}

const T0 = Date.parse('2026-11-10T08:00:00Z');
let runSeq = 0;

/**
 * Posts one native batch, waits until the worker has committed it and the run is listed; returns the run id.
 * Each run is its own commit unless `commitSha` says otherwise (tests seen on one commit are never stitched).
 */
async function ingest(td: TestDaemon, events: DomainEvent[], executions: Exec[], commitSha?: string): Promise<string> {
  const at = T0 + runSeq * 3_600_000;
  const sha = commitSha ?? (0xc000000 + runSeq).toString(16);
  runSeq++;
  const body = nativeBatch({
    resource: { commitSha: sha },
    run: { status: executions.some((e) => e.status === 'fail') ? 'failed' : 'passed', startedAt: at },
    executions: executions.map((e, i) => ({ status: 'pass', ...e, startedAt: at + 1 + i, durationMs: 5 })),
  });
  const res = await td.request('POST', '/v1/ingest', { body });
  expect(res.status).toBe(202);
  const receiptId = res.json.receiptId as string;
  const processed = await td.waitFor(async () => events.find((e) => e.type === 'run.processed' && e.data.receiptId === receiptId), 30_000);
  const runId = processed.data.runId as string;
  await td.settled(30_000);
  await td.waitFor(async () => {
    const list = await td.request('GET', '/v1/runs?limit=100');
    return list.status === 200 && (list.json.items as { id: string }[]).some((r) => r.id === runId);
  }, 30_000);
  return runId;
}

async function runExecutions(td: TestDaemon, runId: string): Promise<RunExecution[]> {
  const res = await td.request('GET', `/v1/runs/${runId}`);
  expect(res.status).toBe(200);
  return res.json.executions as RunExecution[];
}

async function idOf(td: TestDaemon, runId: string, match: Partial<Pick<RunExecution, 'filePath' | 'title'>>): Promise<string> {
  const execs = (await runExecutions(td, runId)).filter(
    (e) => (match.filePath === undefined || e.filePath === match.filePath) && (match.title === undefined || e.title === match.title),
  );
  expect(execs.length).toBeGreaterThan(0);
  return execs[0]!.testIdentityId;
}

async function testDetail(td: TestDaemon, testId: string): Promise<any> {
  const res = await td.request('GET', `/v1/tests/${testId}`);
  expect(res.status).toBe(200);
  return res.json;
}

function ofType(events: DomainEvent[], type: string, testId?: string): DomainEvent[] {
  return events.filter((e) => e.type === type && (testId === undefined || e.data.testIdentityId === testId));
}

describe('identity stitching and error clustering through the daemon', () => {
  let td: TestDaemon;
  const events: DomainEvent[] = [];

  beforeAll(async () => {
    td = await startTestDaemon();
    td.daemon.runtime.onEvent((e) => events.push(e));
  });

  afterAll(async () => td?.close());

  describe('moved files (L2)', () => {
    const OLD = 'src/cart.test.ts';
    const NEW = 'src/shop/cart.test.ts';
    const test = (filePath: string): Exec => ({ filePath, suite: 'Cart', title: 'adds an item' });
    const runs: string[] = [];

    it('keeps the identity of a test whose file moved, with an L2 stitch, an alias and one identity.moved', async () => {
      runs.push(await ingest(td, events, [test(OLD)]));
      const id = await idOf(td, runs[0]!, { filePath: OLD });
      expect(ofType(events, 'identity.created', id)).toHaveLength(1);

      runs.push(await ingest(td, events, [test(NEW)]));
      const after = await runExecutions(td, runs[1]!);
      expect(after).toHaveLength(1);
      expect(after[0]).toMatchObject({ filePath: NEW, suite: 'Cart', title: 'adds an item', testIdentityId: id });

      const newFp = fingerprint({ filePath: NEW, suite: 'Cart', title: 'adds an item' });
      const detail = await testDetail(td, id);
      expect(detail.filePath).toBe(NEW);
      expect(detail.title).toBe('adds an item');
      expect(detail.aliases).toContain(newFp);
      expect(detail.stitches).toHaveLength(1);
      expect(detail.stitches[0]).toMatchObject({
        level: 'L2',
        fromFilePath: OLD,
        fromTitle: 'adds an item',
        toFilePath: NEW,
        toTitle: 'adds an item',
        confidence: 1,
      });

      const moved = ofType(events, 'identity.moved', id);
      expect(moved).toHaveLength(1);
      expect(moved[0]!.data).toMatchObject({ level: 'L2', confidence: 1, fromFilePath: OLD, toFilePath: NEW });
      // The moved test is not a new test.
      expect(events.filter((e) => e.type === 'identity.created' && e.data.filePath === NEW)).toHaveLength(0);

      // SQL: the execution carries the new fingerprint and the old identity; the alias points there.
      const rows = await td.daemon.store.query<{ test_id: string; fingerprint: string }>(
        `SELECT toString(test_id) AS test_id, fingerprint FROM ${td.daemon.store.table('executions')} WHERE run_id = {runId:UUID}`,
        { runId: runs[1] },
      );
      expect(rows).toEqual([{ test_id: id, fingerprint: newFp }]);
      const aliases = await td.daemon.store.query<{ test_id: string }>(
        `SELECT toString(test_id) AS test_id FROM ${td.daemon.store.table('identity_aliases')} FINAL WHERE fingerprint = {fp:String}`,
        { fp: newFp },
      );
      expect(aliases).toEqual([{ test_id: id }]);
    });

    it('resolves the new path exactly afterwards: no new stitch, the history shows all three executions', async () => {
      runs.push(await ingest(td, events, [test(NEW)]));
      const id = await idOf(td, runs[0]!, { filePath: OLD });
      expect(await idOf(td, runs[2]!, { filePath: NEW })).toBe(id);

      const detail = await testDetail(td, id);
      expect(detail.stitches).toHaveLength(1);
      expect(ofType(events, 'identity.moved', id)).toHaveLength(1);
      expect(detail.history.map((h: { runId: string }) => h.runId)).toEqual(runs);
      expect(detail.history.map((h: { status: string }) => h.status)).toEqual(['pass', 'pass', 'pass']);
      const identities = await td.daemon.store.query<{ n: number | string }>(
        `SELECT count() AS n FROM ${td.daemon.store.table('test_identities')} FINAL WHERE id = {id:UUID}`,
        { id },
      );
      expect(Number(identities[0]!.n)).toBe(1);
    });

    it('follows a moved test through a later rename in its new file (L2 then L3)', async () => {
      const r1 = await ingest(td, events, [{ filePath: 'src/wishlist.test.ts', suite: 'Wishlist', title: 'saves an item' }]);
      const id = await idOf(td, r1, {});
      const r2 = await ingest(td, events, [{ filePath: 'src/account/wishlist.test.ts', suite: 'Wishlist', title: 'saves an item' }]);
      expect(await idOf(td, r2, {})).toBe(id);
      const r3 = await ingest(td, events, [{ filePath: 'src/account/wishlist.test.ts', suite: 'Wishlist', title: 'saves an item for later' }]);
      expect(await idOf(td, r3, {})).toBe(id);

      const detail = await testDetail(td, id);
      expect(detail).toMatchObject({ filePath: 'src/account/wishlist.test.ts', title: 'saves an item for later' });
      expect(detail.stitches.map((s: Stitch) => [s.level, s.fromFilePath, s.fromTitle, s.toFilePath, s.toTitle])).toEqual([
        ['L2', 'src/wishlist.test.ts', 'saves an item', 'src/account/wishlist.test.ts', 'saves an item'],
        ['L3', 'src/account/wishlist.test.ts', 'saves an item', 'src/account/wishlist.test.ts', 'saves an item for later'],
      ]);
      expect(detail.history).toHaveLength(3);
    });
  });

  describe('renamed tests (L3)', () => {
    it('stitches a rename with a clear margin, with the title-token Jaccard as confidence', async () => {
      const FILE = 'src/basket.test.ts';
      const r1 = await ingest(td, events, [
        { filePath: FILE, suite: 'Basket', title: 'adds an item' },
        { filePath: FILE, suite: 'Basket', title: 'removes an item' },
      ]);
      const addId = await idOf(td, r1, { title: 'adds an item' });
      const removeId = await idOf(td, r1, { title: 'removes an item' });
      expect(addId).not.toBe(removeId);

      const r2 = await ingest(td, events, [
        { filePath: FILE, suite: 'Basket', title: 'adds an item to the basket' },
        { filePath: FILE, suite: 'Basket', title: 'removes an item' },
      ]);
      expect(await idOf(td, r2, { title: 'adds an item to the basket' })).toBe(addId);
      expect(await idOf(td, r2, { title: 'removes an item' })).toBe(removeId);

      const jaccard = tokenJaccard(titleTokens('adds an item to the basket'), titleTokens('adds an item'));
      expect(jaccard).toBe(0.5);
      const detail = await testDetail(td, addId);
      expect(detail).toMatchObject({ filePath: FILE, suite: 'Basket', title: 'adds an item to the basket' });
      expect(detail.aliases).toContain(fingerprint({ filePath: FILE, suite: 'Basket', title: 'adds an item to the basket' }));
      expect(detail.stitches).toHaveLength(1);
      expect(detail.stitches[0]).toMatchObject({ level: 'L3', fromFilePath: FILE, fromTitle: 'adds an item', toFilePath: FILE, toTitle: 'adds an item to the basket' });
      expect(detail.stitches[0].confidence).toBeCloseTo(jaccard, 3);
      const moved = ofType(events, 'identity.moved', addId);
      expect(moved).toHaveLength(1);
      expect(moved[0]!.data).toMatchObject({ level: 'L3', fromTitle: 'adds an item', toTitle: 'adds an item to the basket' });
      expect(moved[0]!.data.confidence).toBeCloseTo(jaccard, 6);
      // The test that kept its name is untouched.
      expect((await testDetail(td, removeId)).stitches).toEqual([]);
      expect(ofType(events, 'identity.moved', removeId)).toHaveLength(0);
    });

    it('makes an ambiguous rename (two old titles equally close) a new identity', async () => {
      const FILE = 'src/search.test.ts';
      const r1 = await ingest(td, events, [
        { filePath: FILE, suite: 'Search', title: 'finds by name' },
        { filePath: FILE, suite: 'Search', title: 'finds by tag' },
      ]);
      const byName = await idOf(td, r1, { title: 'finds by name' });
      const byTag = await idOf(td, r1, { title: 'finds by tag' });
      const incoming = titleTokens('finds by name or tag');
      expect(tokenJaccard(incoming, titleTokens('finds by name'))).toBe(tokenJaccard(incoming, titleTokens('finds by tag')));

      const r2 = await ingest(td, events, [{ filePath: FILE, suite: 'Search', title: 'finds by name or tag' }]);
      const id = await idOf(td, r2, {});
      expect([byName, byTag]).not.toContain(id);
      expect(ofType(events, 'identity.created', id)).toHaveLength(1);
      expect(ofType(events, 'identity.moved', id)).toHaveLength(0);
      expect((await testDetail(td, id)).stitches).toEqual([]);
      expect((await testDetail(td, byName)).stitches).toEqual([]);
      expect((await testDetail(td, byTag)).stitches).toEqual([]);
    });
  });

  describe('tests seen together on one commit (shards)', () => {
    const FILE = 'src/shards/cart.test.ts';
    const COPY = 'src/shards/copy/cart.test.ts';
    const item = (title: string, filePath = FILE): Exec => ({ filePath, suite: 'cart', title });

    it('never stitches a test to one that ran in another shard of the same commit', async () => {
      const r0 = await ingest(td, events, [item('adds an item')], 'c0ffee0001');
      const oldId = await idOf(td, r0, {});
      // Shard 1 of the next commit runs the old test; shard 2 a similar title and a copy in another file.
      await ingest(td, events, [item('adds an item')], 'c0ffee0002');
      const shard2 = await ingest(td, events, [item('adds an items'), item('adds an item', COPY)], 'c0ffee0002');
      expect(tokenJaccard(titleTokens('adds an items'), titleTokens('adds an item'))).toBe(0.5); // would qualify as a rename
      const similar = await idOf(td, shard2, { title: 'adds an items' });
      const copy = await idOf(td, shard2, { filePath: COPY });
      expect(new Set([oldId, similar, copy]).size).toBe(3);
      expect(ofType(events, 'identity.created', similar)).toHaveLength(1);
      expect(ofType(events, 'identity.created', copy)).toHaveLength(1);
      expect(ofType(events, 'identity.moved', oldId)).toHaveLength(0);
      const old = await testDetail(td, oldId);
      expect(old).toMatchObject({ filePath: FILE, title: 'adds an item', stitches: [], aliases: [] });
      const stitches = await td.daemon.store.query<{ n: number | string }>(
        `SELECT count() AS n FROM ${td.daemon.store.table('identity_stitches')} FINAL WHERE test_id IN {ids:Array(UUID)}`,
        { ids: [oldId, similar, copy] },
      );
      expect(Number(stitches[0]!.n)).toBe(0);
    });

    it('still stitches a rename across commits, also between runs without a commit (placeholder sha)', async () => {
      const file = 'src/shards/wishlist.test.ts';
      const r1 = await ingest(td, events, [{ filePath: file, suite: 'wishlist', title: 'saves an item' }], 'c0ffee0003');
      const id = await idOf(td, r1, {});
      const r2 = await ingest(td, events, [{ filePath: file, suite: 'wishlist', title: 'saves an items' }], 'c0ffee0004');
      expect(await idOf(td, r2, {})).toBe(id);
      expect(ofType(events, 'identity.moved', id)).toHaveLength(1);
      // Two runs reported without a commit share the placeholder sha, which says nothing.
      const other = 'src/shards/orders.test.ts';
      const p1 = await ingest(td, events, [{ filePath: other, suite: 'orders', title: 'drops an item' }], '0000000');
      const dropId = await idOf(td, p1, {});
      const p2 = await ingest(td, events, [{ filePath: other, suite: 'orders', title: 'drops an items' }], '0000000');
      expect(await idOf(td, p2, {})).toBe(dropId);
      expect(ofType(events, 'identity.moved', dropId)).toHaveLength(1);
    });

    it('revokes a stitch made from the new test\'s shard once the old test runs in a later shard of the same commit', async () => {
      const file = 'src/shards/basket.test.ts';
      const old = (title: string): Exec => ({ filePath: file, suite: 'basket', title });
      const r0 = await ingest(td, events, [old('adds a product')], 'c0ffee0005');
      const oldId = await idOf(td, r0, {});
      // Shard 1 of the next commit holds only the new test: it looks like a rename and is stitched.
      const shard1 = await ingest(td, events, [old('adds a products')], 'c0ffee0006');
      expect(await idOf(td, shard1, {})).toBe(oldId);
      expect(ofType(events, 'identity.moved', oldId)).toHaveLength(1);
      // Shard 2 of the same commit runs the old test itself: the two are two tests.
      const shard2 = await ingest(td, events, [old('adds a product')], 'c0ffee0006');
      expect(await idOf(td, shard2, {})).toBe(oldId);
      const newFp = fingerprint({ filePath: file, suite: 'basket', title: 'adds a products' });
      const created = events.filter((e) => e.type === 'identity.created' && e.data.fingerprint === newFp);
      expect(created).toHaveLength(1);
      const newId = created[0]!.data.testIdentityId as string;
      expect(newId).not.toBe(oldId);
      // The alias now points at the new test's own identity; the old one has its name back.
      const aliases = await td.daemon.store.query<{ test_id: string }>(
        `SELECT toString(test_id) AS test_id FROM ${td.daemon.store.table('identity_aliases')} FINAL WHERE fingerprint = {fp:String}`,
        { fp: newFp },
      );
      expect(aliases).toEqual([{ test_id: newId }]);
      const detail = await testDetail(td, oldId);
      expect(detail).toMatchObject({ filePath: file, title: 'adds a product' });
      expect(detail.aliases).toEqual([]);
      expect(await testDetail(td, newId)).toMatchObject({ filePath: file, suite: 'basket', title: 'adds a products' });

      // From then on each runs as itself, together or alone, with no new stitch.
      const both = await ingest(td, events, [old('adds a product'), old('adds a products')], 'c0ffee0007');
      expect(await idOf(td, both, { title: 'adds a product' })).toBe(oldId);
      expect(await idOf(td, both, { title: 'adds a products' })).toBe(newId);
      const alone = await ingest(td, events, [old('adds a products')], 'c0ffee0008');
      expect(await idOf(td, alone, {})).toBe(newId);
      expect(ofType(events, 'identity.moved', oldId)).toHaveLength(1);
      expect(ofType(events, 'identity.moved', newId)).toHaveLength(0);
      expect(ofType(events, 'identity.created', newId)).toHaveLength(1);
    });
  });

  it('treats a test whose old file still runs in the same batch as a copy: two identities, no stitch', async () => {
    const OLD = 'src/coupon.test.ts';
    const COPY = 'src/promo/coupon.test.ts';
    const r1 = await ingest(td, events, [{ filePath: OLD, suite: 'Coupon', title: 'applies a coupon' }]);
    const oldId = await idOf(td, r1, {});
    // The copy comes first in the batch: presence, not order, decides.
    const r2 = await ingest(td, events, [
      { filePath: COPY, suite: 'Coupon', title: 'applies a coupon' },
      { filePath: OLD, suite: 'Coupon', title: 'applies a coupon' },
    ]);
    expect(await idOf(td, r2, { filePath: OLD })).toBe(oldId);
    const copyId = await idOf(td, r2, { filePath: COPY });
    expect(copyId).not.toBe(oldId);
    expect(ofType(events, 'identity.created', copyId)).toHaveLength(1);
    expect(ofType(events, 'identity.moved', oldId)).toHaveLength(0);
    expect(ofType(events, 'identity.moved', copyId)).toHaveLength(0);
    const old = await testDetail(td, oldId);
    expect(old.filePath).toBe(OLD);
    expect(old.stitches).toEqual([]);
    expect(old.aliases).toEqual([]);
    expect((await testDetail(td, copyId)).filePath).toBe(COPY);
  });

  it('never stitches parameterised variants: chrome and firefox are two identities', async () => {
    const t = (browser: string): Exec => ({ filePath: 'src/render.test.ts', suite: 'Render', title: 'renders the page', params: { browser } });
    const r1 = await ingest(td, events, [t('chrome')]);
    const chrome = await idOf(td, r1, {});
    // Only firefox runs next: same file, suite and title, other params → a new test, not a rename or move.
    const r2 = await ingest(td, events, [t('firefox')]);
    const firefox = await idOf(td, r2, {});
    expect(firefox).not.toBe(chrome);
    expect(ofType(events, 'identity.created', firefox)).toHaveLength(1);
    // Both together: each keeps its own identity.
    const r3 = await ingest(td, events, [t('chrome'), t('firefox')]);
    const both = await td.daemon.store.query<{ params: string; test_id: string }>(
      `SELECT params, toString(test_id) AS test_id FROM ${td.daemon.store.table('executions')} WHERE run_id = {runId:UUID} ORDER BY params`,
      { runId: r3 },
    );
    expect(both.map((r) => [JSON.parse(r.params).browser, r.test_id])).toEqual([
      ['chrome', chrome],
      ['firefox', firefox],
    ]);
    for (const id of [chrome, firefox]) {
      expect((await testDetail(td, id)).stitches).toEqual([]);
      expect(ofType(events, 'identity.moved', id)).toHaveLength(0);
    }
  });

  describe('error signatures and clusters', () => {
    const FILE = 'src/checkout.test.ts';
    const assertion = (variable: string, a: number, b: number, at: string, request: string): string =>
      `AssertionError: expected ${a} to equal ${b} when checking ${variable}.total after adding the item to the basket at ${at} (request ${request})`;
    const GHP = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789AB';
    const FH = 'fh_0123456789abcdef0123456789abcdef0123456789abcdef';
    const fail = (title: string, message?: string): Exec => ({ filePath: FILE, suite: 'Checkout', title, status: 'fail', ...(message ? { error: { message } } : {}) });
    let rows: { run: number; title: string; status: string; signature_id: string; cluster_id: string }[] = [];
    let signatures: { signature_id: string; cluster_id: string; normalized_message: string; n: number }[] = [];

    beforeAll(async () => {
      const r1 = await ingest(td, events, [
        fail('cart total', assertion('cart', 3, 4, '2026-11-21T10:00:00Z', '9f1c2a7e-4b3d-4e5f-8a9b-0c1d2e3f4a5b')),
        fail('cart total again', assertion('cart', 17, 42, '2026-11-22T08:15:42.123Z', '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d')),
        fail('wishlist total', assertion('wishlist', 3, 4, '2026-11-21T10:00:00Z', '9f1c2a7e-4b3d-4e5f-8a9b-0c1d2e3f4a5b')),
        fail('login page', 'TimeoutError: page.goto: navigation to /login exceeded 30000ms waiting for the load event'),
        fail('api login', `POST /api/login failed with token=${GHP} and header Authorization: Bearer ${FH}`),
        fail('no error given'),
        { filePath: FILE, suite: 'Checkout', title: 'passes', status: 'pass' },
      ]);
      const r2 = await ingest(td, events, [
        fail('cart total', assertion('cart', 5, 6, '2026-11-23T23:59:59Z', 'deadbeef-0000-4000-8000-00000000abcd')),
        fail('basket total', assertion('basket', 3, 4, '2026-11-21T10:00:00Z', '9f1c2a7e-4b3d-4e5f-8a9b-0c1d2e3f4a5b')),
        fail('auth header', `Bearer ${FH} rejected`),
      ]);
      const runIndex = new Map([
        [r1, 1],
        [r2, 2],
      ]);
      const raw = await td.daemon.store.query<{ run: string; title: string; status: string; signature_id: string; cluster_id: string }>(
        `SELECT toString(run_id) AS run, title, status, signature_id, cluster_id FROM ${td.daemon.store.table('executions')}
         WHERE run_id IN {runs:Array(UUID)} ORDER BY started_at`,
        { runs: [r1, r2] },
      );
      rows = raw.map((r) => ({ run: runIndex.get(r.run)!, title: r.title, status: r.status, signature_id: r.signature_id, cluster_id: r.cluster_id }));
      signatures = (
        await td.daemon.store.query<{ signature_id: string; cluster_id: string; normalized_message: string; n: number | string }>(
          `SELECT signature_id, any(cluster_id) AS cluster_id, any(normalized_message) AS normalized_message, count() AS n
           FROM ${td.daemon.store.table('error_signatures')} FINAL GROUP BY signature_id`,
        )
      ).map((s) => ({ ...s, n: Number(s.n) }));
    });

    const row = (run: number, title: string) => {
      const r = rows.find((x) => x.run === run && x.title === title);
      expect(r, `${title} in run ${run}`).toBeDefined();
      return r!;
    };

    it('gives failures that differ only in numbers, ids and timestamps the same signature, also across runs', () => {
      const sig = row(1, 'cart total').signature_id;
      expect(sig).toMatch(/^[0-9a-f]{16}$/);
      expect(row(1, 'cart total again').signature_id).toBe(sig);
      expect(row(2, 'cart total').signature_id).toBe(sig);
      expect(row(2, 'cart total').cluster_id).toBe(row(1, 'cart total').cluster_id);
      const stored = signatures.find((s) => s.signature_id === sig);
      expect(stored?.normalized_message).toBe('expected <num> to equal <num> when checking cart.total after adding the item to the basket at <ts> (request <uuid>)');
    });

    it('puts a similar but not identical failure in another signature of the same cluster (same lease and later lease)', () => {
      const cart = row(1, 'cart total');
      expect(cart.cluster_id).not.toBe('');
      for (const [run, title] of [
        [1, 'wishlist total'],
        [2, 'basket total'],
      ] as const) {
        const r = row(run, title);
        expect(r.signature_id).not.toBe('');
        expect(r.signature_id).not.toBe(cart.signature_id);
        expect(r.cluster_id).toBe(cart.cluster_id);
      }
      expect(row(1, 'wishlist total').signature_id).not.toBe(row(2, 'basket total').signature_id);
    });

    it('puts an unrelated failure in another cluster', () => {
      const timeout = row(1, 'login page');
      expect(timeout.signature_id).not.toBe('');
      expect(timeout.cluster_id).not.toBe('');
      expect(timeout.cluster_id).not.toBe(row(1, 'cart total').cluster_id);
    });

    it('leaves signature_id and cluster_id empty on executions without an error', () => {
      for (const title of ['passes', 'no error given']) {
        expect(row(1, title)).toMatchObject({ signature_id: '', cluster_id: '' });
      }
    });

    it('stores one row per signature, with the same cluster as its executions, and never a secret', () => {
      const ids = new Set(rows.filter((r) => r.signature_id !== '').map((r) => r.signature_id));
      expect(ids.size).toBe(6);
      for (const id of ids) {
        const stored = signatures.filter((s) => s.signature_id === id);
        expect(stored).toHaveLength(1);
        expect(stored[0]!.n).toBe(1);
        expect(rows.filter((r) => r.signature_id === id).every((r) => r.cluster_id === stored[0]!.cluster_id)).toBe(true);
      }
      const secret = signatures.find((s) => s.signature_id === row(1, 'api login').signature_id)!;
      expect(secret.normalized_message).toContain('[REDACTED]');
      expect(signatures.find((s) => s.signature_id === row(2, 'auth header').signature_id)!.normalized_message).toContain('[REDACTED]');
      for (const s of signatures) {
        expect(s.normalized_message).not.toContain(GHP);
        expect(s.normalized_message).not.toContain(FH);
        expect(s.normalized_message).not.toMatch(/ghp_|fh_[0-9a-f]/);
      }
    });
  });
});

describe('service.yml ignore globs through the daemon', () => {
  let td: TestDaemon;
  let configDir: string;
  const events: DomainEvent[] = [];

  beforeAll(async () => {
    configDir = mkdtempSync(path.join(tmpdir(), 'fh-ignore-config-'));
    const configPath = path.join(configDir, 'service.yml');
    writeFileSync(configPath, 'ignore: ["legacy/**", "**/*.snap.test.ts"]\n');
    td = await startTestDaemon({ env: { SERVICE_CONFIG: configPath } });
    td.daemon.runtime.onEvent((e) => events.push(e));
  });

  afterAll(async () => {
    await td?.close();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it('stores only the executions of files not ignored, recounts the run and keeps the retry link', async () => {
    const runId = await ingest(td, events, [
      { filePath: 'legacy/old.test.ts', suite: 'Old', title: 'still here', status: 'fail', error: { message: 'legacy failure 1' } },
      { filePath: 'src/a.snap.test.ts', suite: 'Snap', title: 'matches', status: 'pass' },
      { filePath: 'src/ok.test.ts', suite: 'Ok', title: 'works', status: 'fail', error: { message: 'expected 1 to be 2' } },
      { filePath: 'legacy/old.test.ts', suite: 'Old', title: 'still here', status: 'pass', attempt: 2, retryOfIndex: 0 },
      { filePath: 'src/ok.test.ts', suite: 'Ok', title: 'works', status: 'pass', attempt: 2, retryOfIndex: 2 },
    ]);

    const run = await td.request('GET', `/v1/runs/${runId}`);
    expect(run.status).toBe(200);
    expect(run.json.counts).toEqual({ total: 1, passed: 0, failed: 0, skipped: 0, flaky: 1 });
    const execs = run.json.executions as RunExecution[];
    expect(execs.map((e) => [e.filePath, e.title, e.attempt, e.status])).toEqual([
      ['src/ok.test.ts', 'works', 1, 'fail'],
      ['src/ok.test.ts', 'works', 2, 'pass'],
    ]);
    expect(execs[0]!.testIdentityId).toBe(execs[1]!.testIdentityId);

    const rows = await td.daemon.store.query<{ id: string; file_path: string; attempt: number | string; retry_of: string | null }>(
      `SELECT toString(id) AS id, file_path, attempt, toString(retry_of) AS retry_of FROM ${td.daemon.store.table('executions')}
       WHERE run_id = {runId:UUID} ORDER BY attempt`,
      { runId },
    );
    expect(rows.map((r) => r.file_path)).toEqual(['src/ok.test.ts', 'src/ok.test.ts']);
    expect(rows[1]!.retry_of).toBe(rows[0]!.id);

    // Ignored files never become identities.
    const identities = await td.daemon.store.query<{ file_path: string }>(`SELECT file_path FROM ${td.daemon.store.table('test_identities')} FINAL`);
    expect(identities.map((i) => i.file_path)).toEqual(['src/ok.test.ts']);
    expect(events.filter((e) => e.type === 'identity.created').map((e) => e.data.filePath)).toEqual(['src/ok.test.ts']);
  });
});

describe('clustering when a lease fails after the clustering stage', () => {
  let td: TestDaemon | undefined;
  afterAll(async () => td?.close());

  it('writes the signatures of a retried lease (nothing uncommitted is cached)', async () => {
    td = await startTestDaemon({ work: false });
    const body = nativeBatch({
      executions: [
        { filePath: 'src/retry.test.ts', suite: 'Retry', title: 'a', status: 'fail', startedAt: T0, durationMs: 1, error: { message: 'expected 1 to equal 2 in the retried lease' } },
        { filePath: 'src/retry.test.ts', suite: 'Retry', title: 'b', status: 'fail', startedAt: T0 + 1, durationMs: 1, error: { message: 'ECONNREFUSED 127.0.0.1:5432 while connecting to the database' } },
        { filePath: 'src/retry.test.ts', suite: 'Retry', title: 'c', status: 'pass', startedAt: T0 + 2, durationMs: 1 },
      ],
    });
    expect((await td.request('POST', '/v1/ingest', { body })).status).toBe(202);
    const lease = (await td.daemon.queue.dequeue({ maxJobs: 10, maxExecutions: 10_000 })) as Lease;
    expect(lease.jobs).toHaveLength(1);

    // The worker's executions pipeline by hand, one set of instances kept across both attempts.
    const logger = createLogger('silent');
    const loaded = loadServiceConfig({ env: {}, cwd: td.dataDir });
    const configs = new ProjectConfigs(td.daemon.store, loaded);
    // SERVICE_CLUSTER_THRESHOLD at its default, 0.5.
    // Repositories through the default repositories extension (clickhouse_storage), over the daemon's store.
    const extensions = new ServiceExtensions([defaultRepositoriesSpec(processingRegistry())!], { dataDir: td.dataDir, logger, store: td.daemon.store });
    await extensions.start();
    const host = buildHost({ logger, projectConfigs: configs, settings: pipelineSettings(loadServerSettings(td.env, td.dataDir)), outbox: td.daemon.queue.outbox, extensions });
    const normalize = normalizeProcessorFactory.createExecutions!({}, { id: 'normalize', logger });
    const identity = identityProcessorFactory.createExecutions!({}, { id: 'identity', logger });
    const clustering = clusteringProcessorFactory.createExecutions!({}, { id: 'clustering', logger });
    const exporter = clickhouseExporterFactory.createExecutions!({}, { id: 'clickhouse', logger });
    for (const c of [normalize, identity, clustering, exporter]) await c.start(host);
    const attempt = async (): Promise<WorkBatch> => {
      const batch = new WorkBatch({
        leaseId: lease.id,
        now: T0,
        items: lease.jobs.map((job) => ({
          job,
          run: buildRun({ projectId: job.projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt }),
          executions: [],
        })),
      });
      for (const p of [normalize, identity, clustering]) await p.processBatch(batch);
      return batch;
    };

    // First attempt: clustered, then the lease fails before anything is written.
    const first = await attempt();
    // What the exporter would write for each attempt (the processors' outputs as table rows).
    const firstWrites = processorRows(first);
    expect(firstWrites.get('error_signatures')).toHaveLength(2);
    // The retry must produce the same signature rows again, and they must reach the table.
    const retry = await attempt();
    const retryWrites = processorRows(retry);
    expect(retryWrites.get('error_signatures')?.map((r) => r.signature_id)).toEqual(firstWrites.get('error_signatures')!.map((r) => r.signature_id));
    expect(retryWrites.get('signature_bands')?.length).toBe(firstWrites.get('signature_bands')!.length);
    await exporter.exportBatch(retry, leaseSink(td.daemon.store, retry.leaseId));

    const executions = await td.daemon.store.query<{ title: string; signature_id: string; cluster_id: string }>(
      `SELECT title, signature_id, cluster_id FROM ${td.daemon.store.table('executions')} WHERE run_id = {runId:UUID} ORDER BY title`,
      { runId: retry.items[0]!.run.id },
    );
    expect(executions.map((e) => e.title)).toEqual(['a', 'b', 'c']);
    const stored = await td.daemon.store.query<{ signature_id: string; cluster_id: string }>(
      `SELECT signature_id, cluster_id FROM ${td.daemon.store.table('error_signatures')} FINAL ORDER BY signature_id`,
    );
    const expected = executions
      .filter((e) => e.signature_id !== '')
      .map((e) => ({ signature_id: e.signature_id, cluster_id: e.cluster_id }))
      .sort((a, b) => a.signature_id.localeCompare(b.signature_id));
    expect(expected).toHaveLength(2);
    expect(stored).toEqual(expected);
    for (const c of [normalize, identity, clustering, exporter]) await c.shutdown();
  });
});

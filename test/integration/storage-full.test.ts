// Out of storage: a new batch is answered 507 insufficient_storage, the daemon keeps running, /health
// shows it, and ingest resumes by itself once space returns, with nothing accepted lost. A replay of
// an accepted batch is answered 202 deduplicated meanwhile: it stores nothing. (a) the queue's
// byte cap (SERVICE_QUEUE_MAX_BYTES) filled while the worker is held; (b) a real tmpfs filled up.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { holdWorker } from '../helpers/observe.js';

async function runsOn(td: TestDaemon, branch: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const res = await td.request('GET', `/v1/runs?branch=${branch}&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status, res.text).toBe(200);
    items.push(...res.json.items);
    cursor = res.json.nextCursor;
  } while (cursor);
  return items;
}

/** Posts batches one after another until the first non-202; returns the accepted ones (with their bodies) and that answer. */
async function fillUntilRefused(td: TestDaemon, branch: string, n: number, max: number) {
  const accepted: { receiptId: string; n: number; body?: Record<string, unknown> }[] = [];
  for (let i = 0; i < max; i++) {
    const body = nativeBatch({ n, resource: { branch } });
    const res = await td.request('POST', '/v1/ingest', { body });
    if (res.status !== 202) return { accepted, refused: res };
    accepted.push({ receiptId: res.json.receiptId, n: res.json.acceptedExecutions, body });
  }
  throw new Error(`still accepting after ${max} batches`);
}

/** Replays of accepted batches while storage is full: 202 with the first receipt, nothing stored. */
async function expectReplaysDeduplicated(td: TestDaemon, accepted: { receiptId: string; body?: Record<string, unknown> }[], times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    const first = accepted[i % accepted.length]!;
    const res = await td.request('POST', '/v1/ingest', { body: first.body });
    expect(res.status, res.text).toBe(202);
    expect(res.json).toMatchObject({ receiptId: first.receiptId, deduplicated: true });
  }
}

describe('queue byte cap filled (SERVICE_QUEUE_MAX_BYTES)', () => {
  let td: TestDaemon | undefined;
  let release: (() => Promise<void>) | undefined;
  afterAll(async () => {
    // A failed assertion leaves the worker held, which would hold close() too.
    await release?.();
    await td?.close();
  });

  it('507 insufficient_storage, no crash, /health says full; the worker drains and ingest is accepted again without a restart; nothing lost', async () => {
    td = await startTestDaemon({ env: { SERVICE_QUEUE_MAX_BYTES: String(400 * 1024), SERVICE_MIN_FREE_BYTES: '0', SERVICE_RATE_LIMIT_MAX: '100000' } });
    const healthy = await td.request('GET', '/health', { token: null });
    expect(healthy.status).toBe(200);
    expect(healthy.json).toMatchObject({ status: 'ok', service: 'api', storage: { state: 'ok' } });

    // The worker is held, so the queue only grows.
    release = await holdWorker(td);

    const branch = `full-${Date.now()}`;
    const { accepted, refused } = await fillUntilRefused(td, branch, 150, 200);
    expect(accepted.length).toBeGreaterThan(3);
    expect(refused.status, refused.text).toBe(507);
    expect(refused.json.error).toBe('insufficient_storage');
    expect(refused.json.message).toContain('SERVICE_QUEUE_MAX_BYTES');
    expect(refused.headers.get('retry-after')).toBeTruthy();
    // Every new batch is refused; a replay of an accepted one is answered as such (it stores nothing),
    // however often; a malformed body gets its 400 (it could not be stored either). Reads still work.
    expect((await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 1, resource: { branch } }) })).status).toBe(507);
    await expectReplaysDeduplicated(td, accepted, 5);
    expect((await td.request('POST', '/v1/ingest', { body: { nonsense: true } })).status).toBe(400);
    expect((await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 1, resource: { branch } }) })).status).toBe(507);
    expect((await td.request('GET', '/v1/runs')).status).toBe(200);
    const full = await td.request('GET', '/health', { token: null });
    expect(full.status).toBe(200);
    expect(full.json).toMatchObject({ status: 'ok', service: 'api', storage: { state: 'full' } });
    expect(full.json.storage.reason).toContain('SERVICE_QUEUE_MAX_BYTES');
    expect(td.daemon.queue.depth()).toBe(accepted.length);

    // The worker drains the queue; the door opens by itself.
    await release();
    release = undefined;
    await td.settled(30_000);
    await td.waitFor(async () => (await td!.request('GET', '/health', { token: null })).json.storage.state === 'ok', 30_000);
    const again = await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 150, resource: { branch } }) });
    expect(again.status, again.text).toBe(202);
    accepted.push({ receiptId: again.json.receiptId, n: again.json.acceptedExecutions });

    // Every accepted batch is stored, once.
    const runs = await td.waitFor(async () => {
      const r = await runsOn(td!, branch);
      return r.length >= accepted.length ? r : undefined;
    }, 30_000);
    expect(runs).toHaveLength(accepted.length);
    expect(runs.reduce((s, r) => s + r.counts.total, 0)).toBe(accepted.reduce((s, a) => s + a.n, 0));
  }, 90_000);
});

function tryMountTmpfs(dir: string, size: string): string | null {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'not root (mount needs it)';
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
    return null;
  } catch (err) {
    return `mount failed: ${(err as Error).message.split('\n')[0]}`;
  }
}

const mountPoint = mkdtempSync(path.join(tmpdir(), 'fh-tmpfs-'));
// 3 MiB of it ballast: the queue fills the rest with some 50 batches of 400 executions.
const cannotMount = tryMountTmpfs(mountPoint, '6m');

describe.skipIf(cannotMount !== null)(`a real disk filled up (tmpfs of 6 MiB)${cannotMount ? `: skipped, ${cannotMount}` : ''}`, () => {
  let td: TestDaemon | undefined;
  const ballast = path.join(mountPoint, 'ballast');
  afterAll(async () => {
    // Space for close() to flush, should the test have failed with the disk still full.
    rmSync(ballast, { force: true });
    await td?.close();
    try {
      execFileSync('umount', [mountPoint], { stdio: 'pipe' });
    } catch {
      // Left mounted when busy; it is a tmpfs under the temp dir.
    }
    rmSync(mountPoint, { recursive: true, force: true });
  });

  it('the disk fills: 507 (no crash), /health says full; space freed → accepted again; every accepted batch is stored', async () => {
    const dataDir = path.join(mountPoint, 'data');
    mkdirSync(dataDir);
    // Ballast to free later: the "space comes back" of this test.
    writeFileSync(ballast, Buffer.alloc(3 * 1024 * 1024, 1));
    // No reserve, so the write itself meets the full disk (the lmdb failure path, not the statfs check).
    td = await startTestDaemon({ dataDir, work: false, env: { SERVICE_MIN_FREE_BYTES: '0', SERVICE_MAX_QUEUE_DEPTH: '0', SERVICE_RATE_LIMIT_MAX: '1000000' } });
    const branch = `disk-${Date.now()}`;
    const { accepted, refused } = await fillUntilRefused(td, branch, 400, 5000);
    expect(accepted.length).toBeGreaterThan(3);
    expect(refused.status, refused.text).toBe(507);
    expect(refused.json.error).toBe('insufficient_storage');
    expect(refused.json.message).toMatch(/No space left on device|disk is full/);
    // Still alive and answering; /health reads the disk (no reserve set) while the write's verdict stands.
    const health = await td.request('GET', '/health', { token: null });
    expect(health.json).toMatchObject({ status: 'ok', storage: { state: 'full' } });
    expect(health.json.storage.freeBytes).toBeTypeOf('number');
    expect((await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 5, resource: { branch } }) })).status).toBe(507);
    // Replays are answered 202 deduplicated, over more than a probe interval: they write nothing.
    const replaysUntil = Date.now() + 1500;
    while (Date.now() < replaysUntil) await expectReplaysDeduplicated(td, accepted, 3);
    expect(td.daemon.queue.depth()).toBe(accepted.length);

    // Space returns: /health sees it by itself, with no write (replays meanwhile), and the next new batch is stored.
    rmSync(ballast);
    await td.waitFor(async () => {
      await expectReplaysDeduplicated(td!, accepted, 1);
      const h = await td!.request('GET', '/health', { token: null });
      return h.json.storage.state === 'ok';
    }, 10_000);
    const again = await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 5, resource: { branch } }) });
    expect(again.status, again.text).toBe(202);
    accepted.push({ receiptId: again.json.receiptId, n: again.json.acceptedExecutions });
    expect((await td.request('GET', '/health', { token: null })).json.storage.state).toBe('ok');

    // Nothing accepted was lost: a worker stores every batch.
    td = await td.restart({ work: true });
    const runs = await td.waitFor(async () => {
      const r = await runsOn(td!, branch);
      return r.length >= accepted.length ? r : undefined;
    }, 60_000);
    expect(runs).toHaveLength(accepted.length);
    expect(runs.reduce((s, r) => s + r.counts.total, 0)).toBe(accepted.reduce((s, a) => s + a.n, 0));
  }, 120_000);
});

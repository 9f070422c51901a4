// kill -9 right after a burst of 202s, restart, and every accepted execution is stored exactly once.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeBatch } from '../helpers/daemon.js';
import { bootstrapToken, startServerProcess, type ServerProcess } from '../helpers/process.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-e2e-crash-'));
let server: ServerProcess | undefined;

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.kill9();
  rmSync(dataDir, { recursive: true, force: true });
});

async function post(url: string, token: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}/v1/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

async function listAll(url: string, token: string, branch: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `/v1/runs?branch=${branch}&limit=100${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await fetch(`${url}${q}`, { headers: { authorization: `Bearer ${token}` } });
    const page = (await res.json()) as { items: any[]; nextCursor: string | null };
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

describe('crash recovery (kill -9)', () => {
  it('stores every accepted execution exactly once across two kill -9 cycles, and replays stay deduplicated', async () => {
    // The production default: the pipeline on its own thread.
    const env = { SERVICE_DATA_DIR: dataDir, SERVICE_PIPELINE_THREAD: 'true' };
    server = await startServerProcess(env);
    const token = bootstrapToken(dataDir);
    expect(statSync(path.join(dataDir, 'bootstrap-token')).mode & 0o777).toBe(0o600);

    const accepted: { key: string; receiptId: string; n: number }[] = [];
    for (let cycle = 0; cycle < 2; cycle++) {
      const bodies = Array.from({ length: 40 }, (_, i) => nativeBatch({ n: 20 + (i % 5), resource: { branch: 'crash' } }));
      const results = await Promise.all(bodies.map((b) => post(server!.url, token, b)));
      results.forEach((r, i) => {
        expect(r.status).toBe(202);
        accepted.push({ key: bodies[i]!.idempotencyKey as string, receiptId: r.json.receiptId, n: r.json.acceptedExecutions });
      });
      // No grace period: the worker is mid-flight on some of these.
      await server.kill9();
      server = await startServerProcess(env);
    }

    const expectedExecutions = accepted.reduce((s, a) => s + a.n, 0);
    const deadline = Date.now() + 30_000;
    let runs: any[] = [];
    while (Date.now() < deadline) {
      runs = await listAll(server.url, token, 'crash');
      if (runs.length >= accepted.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(runs).toHaveLength(accepted.length);
    expect(new Set(runs.map((r) => r.id)).size).toBe(accepted.length);
    expect(runs.reduce((s, r) => s + r.counts.total, 0)).toBe(expectedExecutions);

    // Row level: each run's executions are there once.
    for (const run of runs.slice(0, 10)) {
      const res = await fetch(`${server.url}/v1/runs/${run.id}`, { headers: { authorization: `Bearer ${token}` } });
      const detail = (await res.json()) as { executions: { id: string }[]; counts: { total: number } };
      expect(detail.executions).toHaveLength(detail.counts.total);
    }

    // Replays after the restarts: same receipt, deduplicated, no new run.
    const replay = await post(server.url, token, { ...nativeBatch({ n: 1 }), idempotencyKey: accepted[0]!.key });
    expect(replay.json).toEqual({ receiptId: accepted[0]!.receiptId, acceptedExecutions: accepted[0]!.n, deduplicated: true });
    // Once the queue is empty (the last runs' acks land just after they are readable) no run can
    // come of the replay any more, and none came of it.
    const admin = readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
    const queueEmptyBy = Date.now() + 30_000;
    for (;;) {
      const stats = await fetch(`${server.url}/v1/admin/stats`, { headers: { authorization: `Bearer ${admin}` } });
      const q = ((await stats.json()) as { queue: { pending: number; inflight: number; delayed: number } }).queue;
      if (q.pending + q.inflight + q.delayed === 0) break;
      if (Date.now() > queueEmptyBy) throw new Error(`the queue is not empty after 30 s: ${JSON.stringify(q)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await listAll(server.url, token, 'crash')).toHaveLength(accepted.length);

    // SIGTERM: graceful stop with exit code 0.
    expect(await server.stop()).toBe(0);
  }, 180_000);
});

// Scaling out on a real nats-server: one worker (embedded chDB) and two ingest processes. The
// worker is killed with kill -9 while CI keeps sending; the ingest processes keep answering 202
// (they hold no storage: the queue is JetStream, the tokens a snapshot in JetStream KV), and once
// the worker is back every accepted run is stored exactly once. A token revoked on the worker is
// refused by the ingest processes within seconds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch } from '../helpers/daemon.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../helpers/nats.js';
import { bootstrapToken, runCliProcess, startServerProcess, type ServerProcess } from '../helpers/process.js';

const dirs: string[] = [];
const tempDir = (tag: string): string => {
  const dir = mkdtempSync(path.join(tmpdir(), `fh-scale-${tag}-`));
  dirs.push(dir);
  return dir;
};

let nats: NatsServer;
const processes: ServerProcess[] = [];

beforeAll(async () => {
  if (!natsServerAvailable()) throw new Error('nats-server is not installed (Debian package nats-server; .ci/run installs it)');
  nats = await startNatsServer();
});

afterAll(async () => {
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) await p.kill9();
  await nats?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function post(url: string, token: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}/v1/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

async function get(url: string, token: string, pathAndQuery: string): Promise<any> {
  const res = await fetch(`${url}${pathAndQuery}`, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
}

async function listRuns(url: string, token: string, branch: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const page = await get(url, token, `/v1/runs?branch=${branch}&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/** A new ingest token of the first project, made on a worker with the admin token. */
async function createIngestToken(workerUrl: string, admin: string): Promise<{ id: string; token: string }> {
  const projects = await get(workerUrl, admin, '/v1/admin/projects');
  const projectSlug = (projects.items ?? projects)[0].slug as string;
  const res = await fetch(`${workerUrl}/v1/admin/projects/${projectSlug}/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ scopes: ['ingest'] }),
  });
  return (await res.json()) as { id: string; token: string };
}

/** Polls `f` until it answers; on time-out the error carries `explain()` (a process's log, say). */
async function waitFor<T>(what: string, f: () => Promise<T | undefined | false>, timeoutMs: number, explain?: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${explain ? `\n${explain()}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('ingest and worker processes on NATS JetStream', () => {
  it('keeps answering 202 while the worker is killed, and stores every accepted run once after it restarts', async () => {
    const common = { SERVICE_QUEUE_URL: nats.url, SERVICE_QUEUE_PREFIX: 'e2e', SERVICE_QUEUE_PARTITIONS: '4', SERVICE_PARTITION_LEASE_TTL_MS: '1500' };
    const workerDir = tempDir('worker');
    // The production default: the pipeline on its own thread, fed leases from the NATS queue.
    const workerEnv = { ...common, SERVICE_DATA_DIR: workerDir, SERVICE_ROLE: 'worker', SERVICE_DASHBOARD_ENABLED: 'false', SERVICE_PIPELINE_THREAD: 'true' };
    let worker = await startServerProcess(workerEnv);
    processes.push(worker);
    const token = bootstrapToken(workerDir);
    // `--role` on the command line, the variable for the other: both name the role.
    const ingest = [
      await startServerProcess({ ...common, SERVICE_DATA_DIR: tempDir('ingest-a') }, 60_000, [], ['--role', 'ingest']),
      await startServerProcess({ ...common, SERVICE_DATA_DIR: tempDir('ingest-b'), SERVICE_ROLE: 'ingest' }),
    ];
    processes.push(...ingest);

    // The worker published the bootstrap token's snapshot: both ingest processes know it.
    for (const p of ingest) await waitFor('the token snapshot', async () => (await post(p.url, token, nativeBatch({ n: 1, resource: { branch: 'warmup' } }))).status === 202, 10_000);

    const accepted: { key: string; n: number; receiptId: string }[] = [];
    const refused: { status: number; body: unknown }[] = [];
    let sending = true;
    let i = 0;
    // CI: a steady stream of runs, alternating between the two ingest processes.
    const ci = (async () => {
      while (sending) {
        const body = nativeBatch({ n: 3 + (i % 4), resource: { branch: 'scale' } });
        const r = await post(ingest[i % 2]!.url, token, body);
        i++;
        if (r.status === 202) accepted.push({ key: body.idempotencyKey as string, n: r.json.acceptedExecutions, receiptId: r.json.receiptId });
        else refused.push({ status: r.status, body: r.json });
        await new Promise((res) => setTimeout(res, 15));
      }
    })();

    await waitFor('some runs accepted', async () => accepted.length >= 20, 10_000);
    await worker.kill9();
    const atKill = accepted.length;
    // While the worker is gone the door stays open.
    await waitFor('runs accepted with the worker down', async () => accepted.length >= atKill + 30, 15_000);
    worker = await startServerProcess(workerEnv);
    processes.push(worker);
    await waitFor('runs accepted after the restart', async () => accepted.length >= atKill + 60, 15_000);
    sending = false;
    await ci;

    expect(refused).toEqual([]);
    const runs = await waitFor(
      'every accepted run stored',
      async () => {
        const r = await listRuns(worker.url, token, 'scale');
        return r.length >= accepted.length ? r : undefined;
      },
      60_000,
    );
    expect(runs).toHaveLength(accepted.length);
    expect(new Set(runs.map((r) => r.id)).size).toBe(accepted.length);
    expect(runs.reduce((s, r) => s + r.counts.total, 0)).toBe(accepted.reduce((s, a) => s + a.n, 0));

    // A replay through the other ingest process: the first receipt, deduplicated.
    const first = accepted[0]!;
    const replay = await post(ingest[1]!.url, token, { ...nativeBatch({ n: 1 }), idempotencyKey: first.key });
    expect(replay.status).toBe(202);
    expect(replay.json).toMatchObject({ receiptId: first.receiptId, deduplicated: true });
  }, 150_000);

  it('refuses a revoked token at the ingest processes within seconds, and accepts a new one', async () => {
    const common = { SERVICE_QUEUE_URL: nats.url, SERVICE_QUEUE_PREFIX: 'tokens', SERVICE_QUEUE_PARTITIONS: '2' };
    const workerDir = tempDir('worker-tokens');
    const admin = 'fha_scaleout_test_admin_token_0123456789';
    const worker = await startServerProcess({ ...common, SERVICE_DATA_DIR: workerDir, SERVICE_ROLE: 'worker', SERVICE_ADMIN_TOKEN: admin, SERVICE_DASHBOARD_ENABLED: 'false' });
    processes.push(worker);
    const ingest = await startServerProcess({ ...common, SERVICE_DATA_DIR: tempDir('ingest-tokens'), SERVICE_ROLE: 'ingest' });
    processes.push(ingest);
    const created = await createIngestToken(worker.url, admin);

    const t0 = Date.now();
    await waitFor('the new token at the ingest process', async () => (await post(ingest.url, created.token, nativeBatch({ n: 1 }))).status === 202, 5_000);
    const createdAfterMs = Date.now() - t0;

    const revoked = await fetch(`${worker.url}/v1/admin/tokens/${created.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } });
    expect(revoked.status).toBeLessThan(300);
    const t1 = Date.now();
    await waitFor('the revocation at the ingest process', async () => (await post(ingest.url, created.token, nativeBatch({ n: 1 }))).status === 401, 5_000);
    const revokedAfterMs = Date.now() - t1;
    expect(createdAfterMs).toBeLessThan(5_000);
    expect(revokedAfterMs).toBeLessThan(5_000);
  }, 90_000);

  it('answers 503 with Retry-After while NATS is unreachable, and 202 once it is back, the retried batch stored once', async () => {
    const common = { SERVICE_QUEUE_URL: nats.url, SERVICE_QUEUE_PREFIX: 'outage', SERVICE_QUEUE_PARTITIONS: '2' };
    const workerDir = tempDir('worker-outage');
    const admin = 'fha_scaleout_outage_admin_token_0123456789';
    const worker = await startServerProcess({ ...common, SERVICE_DATA_DIR: workerDir, SERVICE_ROLE: 'worker', SERVICE_ADMIN_TOKEN: admin, SERVICE_DASHBOARD_ENABLED: 'false', LOG_LEVEL: 'info' });
    processes.push(worker);
    const token = bootstrapToken(workerDir);
    const ingest = await startServerProcess({ ...common, SERVICE_DATA_DIR: tempDir('ingest-outage'), SERVICE_ROLE: 'ingest' });
    processes.push(ingest);
    await waitFor('the token snapshot', async () => (await post(ingest.url, token, nativeBatch({ n: 1, resource: { branch: 'outage' } }))).status === 202, 10_000);

    expect((await fetch(`${ingest.url}/ready`)).status).toBe(200);
    expect((await fetch(`${worker.url}/ready`)).status).toBe(200);
    await nats.stop();
    // Readiness follows NATS (liveness does not): a load balancer routes around the process.
    for (const p of [ingest, worker]) {
      const ready = await waitFor('not ready', async () => {
        const r = await fetch(`${p.url}/ready`);
        return r.status === 503 ? r : undefined;
      }, 5_000);
      expect(await ready.json()).toEqual({ error: 'not_ready', message: expect.stringMatching(/^NATS \(SERVICE_QUEUE_URL\) unreachable for \d+ s; reconnecting$/) });
      expect((await fetch(`${p.url}/health`)).status).toBe(200);
    }
    const res = await fetch(`${ingest.url}/v1/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(nativeBatch({ n: 1, resource: { branch: 'outage' } })),
    });
    const body = (await res.json()) as { error: string };
    expect(res.status).toBe(503);
    expect(body.error).toBe('queue_unavailable');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);

    await nats.start();
    // As a CI client retries: the same batch, so a publish that landed although its answer was lost
    // is answered with its receipt instead of being stored twice.
    const retried = nativeBatch({ n: 2, resource: { branch: 'outage' } });
    const accepted = await waitFor(
      '202 after NATS is back',
      async () => {
        const r = await post(ingest.url, token, retried);
        return r.status === 202 ? r : undefined;
      },
      20_000,
    );
    expect(accepted.json.acceptedExecutions).toBe(2);
    expect((await fetch(`${ingest.url}/ready`)).status).toBe(200);
    await waitFor('the worker ready again', async () => (await fetch(`${worker.url}/ready`)).status === 200, 10_000);
    // The worker reconnected too: both accepted runs are stored (the first one's lease may have
    // failed while NATS was away: handed back once it returned, and processed then).
    await waitFor('the runs stored', async () => (await listRuns(worker.url, token, 'outage')).length >= 2, 30_000, () => worker.output());
    expect(await listRuns(worker.url, token, 'outage')).toHaveLength(2);

    // The token snapshot outlived the restart too: the ingest process's watch still follows it.
    const created = await createIngestToken(worker.url, admin);
    await waitFor('a token created after the restart, at the ingest process', async () => (await post(ingest.url, created.token, nativeBatch({ n: 1 }))).status === 202, 10_000);
    await fetch(`${worker.url}/v1/admin/tokens/${created.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } });
    await waitFor('a token revoked after the restart, refused by the ingest process', async () => (await post(ingest.url, created.token, nativeBatch({ n: 1 }))).status === 401, 10_000, () => ingest.output());
  }, 90_000);

  it('an ingest process started before NATS waits for it; one whose NATS never answers exits naming SERVICE_QUEUE_URL', async () => {
    const late = await startNatsServer();
    await late.stop();
    const env = { SERVICE_QUEUE_URL: late.url, SERVICE_QUEUE_PREFIX: 'late', SERVICE_DATA_DIR: tempDir('ingest-late'), SERVICE_ROLE: 'ingest', LOG_LEVEL: 'info' };
    // NATS comes up once the process has said it is waiting for it (not after a fixed delay: on a
    // busy machine the process may take longer than any delay to get that far).
    let sawWaiting!: () => void;
    const waiting = new Promise<void>((r) => (sawWaiting = r));
    const starting = startServerProcess(env, 60_000, [], [], (out) => {
      if (out.includes('nats: not reachable yet')) sawWaiting();
    });
    await Promise.race([waiting, starting.then(() => undefined)]);
    await late.start();
    const ingest = await starting;
    processes.push(ingest);
    expect(ingest.output()).toContain('nats: not reachable yet; waiting for it (SERVICE_QUEUE_URL)');
    expect((await fetch(`${ingest.url}/health`)).status).toBe(200);
    await ingest.stop();
    await late.close();

    // Nothing listens there now: after SERVICE_QUEUE_CONNECT_TIMEOUT_MS the process exits, saying why.
    const res = await runCliProcess(['serve', '--role', 'ingest'], {
      env: { ...env, SERVICE_HOST: '127.0.0.1', SERVICE_PORT: '0', SERVICE_DATA_DIR: tempDir('ingest-never'), SERVICE_QUEUE_CONNECT_TIMEOUT_MS: '1000' },
      timeoutMs: 30_000,
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`cannot reach NATS at ${late.url} (SERVICE_QUEUE_URL)`);
    expect(res.stderr).toContain('SERVICE_QUEUE_CONNECT_TIMEOUT_MS');
  }, 60_000);
});

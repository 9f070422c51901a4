// Scaling out on a real nats-server: ingest processes (no storage) and a worker (embedded chDB).
// A token revoked on the worker is refused by the ingest processes within seconds; while NATS is
// unreachable the processes say so (not ready, 503 with Retry-After) and recover once it is back.
// The worker killed under load, and an ingest process started before NATS:
// test/e2e/scale-out-restarts.test.ts (a file each, so the suite's workers share them).
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { nativeBatch } from '../helpers/daemon.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../helpers/nats.js';
import { bootstrapToken, startServerProcess } from '../helpers/process.js';
import { createIngestToken, listRuns, post, scaleOutScratch, waitFor } from '../helpers/scale-out.js';

const { tempDir, processes } = scaleOutScratch('scale');

let nats: NatsServer;

beforeAll(async () => {
  if (!natsServerAvailable()) throw new Error('nats-server is not installed (Debian package nats-server; .ci/run installs it)');
  nats = await startNatsServer();
});

afterAll(async () => {
  await nats?.close();
});

describe('ingest and worker processes on NATS JetStream', () => {
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
    // Seen once (Node 24, session 54): a request refused (ECONNREFUSED) mid-test, not reproduced
    // since. Whether a process had exited, and what it said, is what the next failure must show.
    onTestFailed(() => {
      for (const [name, p] of [['worker', worker], ['ingest', ingest]] as const) {
        console.log(`${name} ${p.url}: ${p.child.exitCode !== null || p.child.signalCode !== null ? `exited (${p.child.exitCode ?? p.child.signalCode})` : 'running'}\n${p.output().slice(-4_000)}`);
      }
    });
    await waitFor('the token snapshot', async () => (await post(ingest.url, token, nativeBatch({ n: 1, resource: { branch: 'outage' } }))).status === 202, 30_000);

    expect((await fetch(`${ingest.url}/ready`)).status).toBe(200);
    expect((await fetch(`${worker.url}/ready`)).status).toBe(200);
    await nats.stop();
    // Readiness follows NATS (liveness does not): a load balancer routes around the process.
    for (const p of [ingest, worker]) {
      const ready = await waitFor('not ready', async () => {
        const r = await fetch(`${p.url}/ready`);
        return r.status === 503 ? r : undefined;
      }, 30_000);
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
    await waitFor('the worker ready again', async () => (await fetch(`${worker.url}/ready`)).status === 200, 30_000);
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
});

// Scaling out on a real nats-server: one worker (embedded chDB) and two ingest processes. The
// worker is killed with kill -9 while CI keeps sending; the ingest processes keep answering 202
// (they hold no storage: the queue is JetStream, the tokens a snapshot in JetStream KV), and once
// the worker is back every accepted run is stored exactly once. An ingest process started before
// NATS waits for it, and one whose NATS never answers exits saying why. Tokens and a NATS outage:
// test/e2e/scale-out.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch } from '../helpers/daemon.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../helpers/nats.js';
import { bootstrapToken, runCliProcess, startServerProcess } from '../helpers/process.js';
import { listRuns, post, scaleOutScratch, waitFor } from '../helpers/scale-out.js';

const { tempDir, processes } = scaleOutScratch('scale-restarts');

let nats: NatsServer;

beforeAll(async () => {
  if (!natsServerAvailable()) throw new Error('nats-server is not installed (Debian package nats-server; .ci/run installs it)');
  nats = await startNatsServer();
});

afterAll(async () => {
  await nats?.close();
});

describe('ingest and worker processes on NATS JetStream, restarted', () => {
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
    for (const p of ingest) await waitFor('the token snapshot', async () => (await post(p.url, token, nativeBatch({ n: 1, resource: { branch: 'warmup' } }))).status === 202, 30_000);

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

    await waitFor('some runs accepted', async () => accepted.length >= 20, 30_000);
    await worker.kill9();
    const atKill = accepted.length;
    // While the worker is gone the door stays open.
    await waitFor('runs accepted with the worker down', async () => accepted.length >= atKill + 30, 30_000);
    worker = await startServerProcess(workerEnv);
    processes.push(worker);
    await waitFor('runs accepted after the restart', async () => accepted.length >= atKill + 60, 30_000);
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

// The one daemon (role all) with its queue on NATS JetStream (SERVICE_QUEUE_URL) and its pipeline on
// its own thread: every ingest route stores its runs once, replays answer the first receipt, the
// pipeline's events are dispatched (this process owns partition 0), and the token snapshot is
// published for ingest processes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { sha256Hex } from '../../client/src/contract/ids.js';
import { snapshotBucketName } from '../../src/tokens/snapshot.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startNatsServer, type NatsServer } from '../helpers/nats.js';
import { REPO_ROOT } from '../helpers/process.js';

let nats: NatsServer;
let td: TestDaemon;
const events: DomainEvent[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  td = await startTestDaemon({
    env: { SERVICE_QUEUE_URL: nats.url, SERVICE_QUEUE_PREFIX: 'allrole', SERVICE_QUEUE_PARTITIONS: '3', SERVICE_PIPELINE_THREAD: 'true' },
  });
  td.daemon.runtime.onEvent((e) => events.push(e));
});

afterAll(async () => {
  await td?.close();
  await nats?.close();
});

describe('the daemon with its queue on NATS JetStream', () => {
  it('stores what every ingest route accepted once, answers replays with the first receipt, and dispatches the events', async () => {
    const native = nativeBatch({ n: 3, resource: { branch: 'nats-all' } });
    const first = await td.request('POST', '/v1/ingest', { body: native });
    expect(first.status).toBe(202);
    const junit = await td.request('POST', '/v1/ingest/junit', {
      body: {
        idempotencyKey: 'nats-all-junit-0001',
        resource: { ciProvider: 'github_actions', commitSha: 'abcdef1234567', branch: 'nats-all', trigger: 'push' },
        xml: readFileSync(path.join(REPO_ROOT, 'examples/junit/report.xml'), 'utf8'),
      },
    });
    expect(junit.status).toBe(202);

    await td.waitFor(async () => (await td.request('GET', '/v1/runs?branch=nats-all&limit=10')).json.items.length === 2, 20_000);
    await td.waitFor(async () => events.filter((e) => e.type === 'run.processed').length >= 2, 20_000);
    const runs = (await td.request('GET', '/v1/runs?branch=nats-all&limit=10')).json.items as { counts: { total: number } }[];
    expect(runs.map((r) => r.counts.total).sort()).toEqual([3, junit.json.acceptedExecutions].sort());

    const replay = await td.request('POST', '/v1/ingest', { body: native });
    expect(replay.status).toBe(202);
    expect(replay.json).toMatchObject({ receiptId: first.json.receiptId, deduplicated: true });
    // A window of 0.5 s for a second run or a second event to show (none may: the behaviour under
    // test; there is no event to wait for).
    await new Promise((r) => setTimeout(r, 500));
    expect((await td.request('GET', '/v1/runs?branch=nats-all&limit=10')).json.items).toHaveLength(2);
    // Each run's event once: one dispatcher.
    expect(events.filter((e) => e.type === 'run.processed')).toHaveLength(2);
  });

  it('publishes the bootstrap token to the snapshot ingest processes read', async () => {
    const nc = await connect({ servers: nats.url });
    try {
      const kv = await nc.jetstream().views.kv(snapshotBucketName('allrole'));
      const entry = await kv.get(sha256Hex(td.token));
      expect(entry?.json<{ scopes: string[] }>().scopes).toEqual(expect.arrayContaining(['ingest', 'read']));
    } finally {
      await nc.close();
    }
  });
});

// Chaos on the scale-out deployment (issue 37): a real nats-server on loopback, one worker
// (`serve --role worker`, chDB under its data dir) and two ingest processes, CI-like clients
// sending native batches, JUnit reports and two-request OTLP/HTTP traces, each request retried
// unchanged (same idempotency key) until it is answered 2xx. While they send, one fault at a time:
// SIGTERM of nats-server, kill -9 of nats-server, of the worker, of an ingest process. Then the
// worker's store is reconciled with what the clients were told: every run stored once (native and
// JUnit by idempotency key, OTLP by trace, executions not doubled) and every receipt id of a 202
// naming a stored run. The scenario code is shared with `npm run bench -- nats-chaos`
// (test/helpers/chaos.ts), which runs defect 1 at full size. Issue 37's defect 1 (a sequence of
// faults) has a deployment of its own: test/e2e/nats-chaos-defect1.test.ts (a file each, so the
// suite's workers share them).
//
// The scenarios share one deployment, one after the other, each on a branch of its own.
import { afterAll, beforeAll, describe, it } from 'vitest';
import { natsServerAvailable } from '../helpers/nats.js';
import { startChaosCluster, type ChaosCluster } from '../helpers/chaos.js';
import { checkScenario } from '../helpers/chaos-check.js';

let cluster: ChaosCluster;

beforeAll(async () => {
  if (!natsServerAvailable()) throw new Error('nats-server is not installed (Debian package nats-server; .ci/run installs it)');
  cluster = await startChaosCluster({ prefix: 'chaos' });
});

afterAll(async () => {
  await cluster?.close();
});

const RUNS = 100;

describe('NATS scale-out under faults: every accepted run stored once, every receipt resolving', () => {
  it('kill -9 of an ingest process (clients retry through the other one)', () => checkScenario(cluster, 'ingest-kill9', RUNS), 120_000);
  it('kill -9 of the worker while CI keeps sending', () => checkScenario(cluster, 'worker-kill9', RUNS), 120_000);
  it('SIGTERM of nats-server and its restart on the same store', () => checkScenario(cluster, 'nats-sigterm', RUNS), 120_000);
  it('kill -9 of nats-server and its restart on the same store', () => checkScenario(cluster, 'nats-kill9', RUNS), 120_000);
});

// Chaos on the scale-out deployment, issue 37's defect 1, on a deployment of its own (the single
// faults: test/e2e/nats-chaos.test.ts, which says what the deployment, the clients and the
// reconciliation are): SIGTERM nats-server and restart it on its store, restart the three
// processes, load, kill -9 nats-server and restart it, a while later kill -9 the worker and restart
// it. Every accepted run must be stored once and every receipt resolve. `npm run bench -- nats-chaos`
// runs the same sequence at full size (test/helpers/chaos.ts).
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

describe('NATS scale-out under a sequence of faults: every accepted run stored once, every receipt resolving', () => {
  it('issue 37 defect 1: SIGTERM + restart of nats-server, processes restarted, load, kill -9 + restart of nats-server, then kill -9 + restart of the worker', () => checkScenario(cluster, 'defect-1', 150), 150_000);
});

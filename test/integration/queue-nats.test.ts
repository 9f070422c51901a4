// The queue contract against the NATS JetStream backend (a real nats-server), with one partition
// and with four. What only this backend promises (duplicate publishes, stream limits as
// backpressure, an ingest-only process, takeover after a crash, MaxDeliver, lost pulls and acks):
// test/integration/queue-nats-specifics.test.ts (a file each, so the suite's workers share them).
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { NatsQueue } from '../../src/queue/nats/index.js';
import { startNatsServer, type NatsServer } from '../helpers/nats.js';
import { queueContract } from './queue-contract.js';

let server: NatsServer;

beforeAll(async () => {
  server = await startNatsServer();
});

afterAll(async () => {
  await server?.close();
});

/** A stream/bucket prefix per contract test dir: a reopen on the same dir finds the same streams. */
const prefixOf = (dir: string): string => `c_${path.basename(dir).replace(/[^A-Za-z0-9]/g, '_')}`;

// One partition: every contract test as written, including one lease across projects in global
// receipt order (a lease holds the jobs of one partition only).
queueContract('nats jetstream (1 partition)', {
  open: (dir, opts) => NatsQueue.open({ servers: server.url, prefix: prefixOf(dir), partitions: 1, ...opts }),
});

// Partitioned as deployed: projects spread over partitions, so receipt order holds per project.
queueContract(
  'nats jetstream (4 partitions)',
  { open: (dir, opts) => NatsQueue.open({ servers: server.url, prefix: `${prefixOf(dir)}_p4`, partitions: 4, ...opts }) },
  { leasesSpanProjects: false },
);

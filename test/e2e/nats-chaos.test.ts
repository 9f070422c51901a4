// Chaos on the scale-out deployment (issue 37): a real nats-server on loopback, one worker
// (`serve --role worker`, chDB under its data dir) and two ingest processes, CI-like clients
// sending native batches, JUnit reports and two-request OTLP/HTTP traces, each request retried
// unchanged (same idempotency key) until it is answered 2xx. While they send, one fault at a time
// (SIGTERM of nats-server, kill -9 of nats-server, of the worker, of an ingest process), and last
// the sequence of issue 37's defect 1: SIGTERM nats-server and restart it on its store, restart the
// three processes, load, kill -9 nats-server and restart it, a while later kill -9 the worker and
// restart it. Then the worker's store is reconciled with what the clients were told: every run
// stored once (native and JUnit by idempotency key, OTLP by trace, executions not doubled) and
// every receipt id of a 202 naming a stored run. The scenario code is shared with
// `npm run bench -- nats-chaos` (test/helpers/chaos.ts), which runs defect 1 at full size.
//
// The scenarios share one deployment, in this order: the single faults first, defect 1 last (its
// kill -9 of nats-server is the one whose consequences the later processes see).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { natsServerAvailable } from '../helpers/nats.js';
import { runScenario, startChaosCluster, type ChaosCluster, type ScenarioName, type ScenarioResult } from '../helpers/chaos.js';

let cluster: ChaosCluster;

beforeAll(async () => {
  if (!natsServerAvailable()) throw new Error('nats-server is not installed (Debian package nats-server; .ci/run installs it)');
  cluster = await startChaosCluster({ prefix: 'chaos' });
});

afterAll(async () => {
  await cluster?.close();
});

/** What a scenario must come to: everything accepted, stored once, every receipt resolving. */
function verdict(r: ScenarioResult) {
  return {
    refused: r.refused,
    accepted: r.accepted,
    storedOnce: r.storedOnce,
    storedTwice: r.storedTwice,
    missing: r.missing,
    receiptsUnresolved: r.receiptsUnresolved,
    settled: r.settled,
  };
}

const RUNS = 100;

async function check(scenario: ScenarioName, runs = RUNS): Promise<void> {
  const r = await runScenario(cluster, scenario, { runs, clients: 6, paceMs: 30, settleMs: 45_000, stepMs: 45_000 });
  const summary = { ...verdict(r), byKind: r.byKind, receiptsGiven: r.receiptsGiven, statuses: r.statuses, seconds: r.seconds };
  console.log(`nats-chaos ${scenario}: ${JSON.stringify(summary)}`);
  const ok = r.refused.length === 0 && r.storedTwice === 0 && r.missing === 0 && r.receiptsUnresolved === 0 && r.settled && r.accepted === runs;
  if (!ok) console.log(`nats-chaos ${scenario} findings:\n${JSON.stringify({ examples: r.examples, events: r.events }, null, 2)}\n${cluster.logs().slice(-20_000)}`);
  expect(verdict(r)).toEqual({ refused: [], accepted: runs, storedOnce: runs, storedTwice: 0, missing: 0, receiptsUnresolved: 0, settled: true });
}

describe('NATS scale-out under faults: every accepted run stored once, every receipt resolving', () => {
  it('kill -9 of an ingest process (clients retry through the other one)', () => check('ingest-kill9'), 120_000);
  it('kill -9 of the worker while CI keeps sending', () => check('worker-kill9'), 120_000);
  it('SIGTERM of nats-server and its restart on the same store', () => check('nats-sigterm'), 120_000);
  it('kill -9 of nats-server and its restart on the same store', () => check('nats-kill9'), 120_000);
  it('issue 37 defect 1: SIGTERM + restart of nats-server, processes restarted, load, kill -9 + restart of nats-server, then kill -9 + restart of the worker', () => check('defect-1', 150), 150_000);
});

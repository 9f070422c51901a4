// The chaos tests' verdict on a scenario (test/e2e/nats-chaos*.test.ts): every run the clients sent
// accepted, stored once, every receipt resolving, the worker settled. On a miss, the findings, the
// events and the processes' logs are printed. (test/helpers/chaos.ts runs the scenarios, for the
// bench too; this part is the tests' own.)
import { expect } from 'vitest';
import { runScenario, type ChaosCluster, type ScenarioName, type ScenarioResult } from './chaos.js';

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

export async function checkScenario(cluster: ChaosCluster, scenario: ScenarioName, runs: number): Promise<void> {
  const r = await runScenario(cluster, scenario, { runs, clients: 6, paceMs: 30, settleMs: 45_000, stepMs: 45_000 });
  const summary = { ...verdict(r), byKind: r.byKind, receiptsGiven: r.receiptsGiven, statuses: r.statuses, seconds: r.seconds };
  console.log(`nats-chaos ${scenario}: ${JSON.stringify(summary)}`);
  const ok = r.refused.length === 0 && r.storedTwice === 0 && r.missing === 0 && r.receiptsUnresolved === 0 && r.settled && r.accepted === runs;
  if (!ok) console.log(`nats-chaos ${scenario} findings:\n${JSON.stringify({ examples: r.examples, events: r.events }, null, 2)}\n${cluster.logs().slice(-20_000)}`);
  expect(verdict(r)).toEqual({ refused: [], accepted: runs, storedOnce: runs, storedTwice: 0, missing: 0, receiptsUnresolved: 0, settled: true });
}

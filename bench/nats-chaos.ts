// `npm run bench -- nats-chaos [--runs 1200] [--clients 6] [--pace-ms 40] [--worker-kill-after-s 10]
//                              [--settle-s 180] [--partitions 4]`
//
// Issue 37, defect 1, at full size: a real nats-server on loopback, one `serve --role worker`
// (chDB under its data dir) and two `serve --role ingest`. SIGTERM nats-server and restart it on
// its store, restart the three processes; send paced CI-like load (native batches, JUnit reports,
// OTLP/HTTP traces in two requests; every request retried unchanged, same idempotency key, until
// it is answered 2xx); kill -9 nats-server and restart it; `--worker-kill-after-s` later kill -9
// the worker and restart it. Then the worker's store is reconciled with what the clients were
// told. The scenario is test/e2e/nats-chaos.test.ts's (test/helpers/chaos.ts), sized up.
//
// Prints and writes bench/results/nats-chaos-latest.json: runs sent, 202 answers, runs accepted
// (every request of the run answered 202), stored once, stored twice, missing, receipt ids given
// and unresolved, by kind, with the fault timeline. Exit 1 when anything is stored twice, missing
// or unresolved.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { writeResult } from './results.js';
import { natsServerAvailable } from '../test/helpers/nats.js';
import { REPO_ROOT } from '../test/helpers/process.js';
import { runScenario, startChaosCluster } from '../test/helpers/chaos.js';
import { freshBuild } from '../bin/built-cli.js';

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string', default: '1200' },
      clients: { type: 'string', default: '6' },
      'pace-ms': { type: 'string', default: '40' },
      'worker-kill-after-s': { type: 'string', default: '10' },
      'settle-s': { type: 'string', default: '180' },
      partitions: { type: 'string', default: '4' },
    },
  });
  if (!natsServerAvailable()) {
    console.error('nats-server is not installed (Debian package nats-server)');
    return 2;
  }
  // The processes start from the CLI build while it is current (seconds faster than tsx): bring it up to date.
  try {
    execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build-cli.mjs'), '--if-stale'], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    console.warn('npm run build:cli failed (above): the processes run the sources through tsx');
  }
  const runs = Number(values.runs);
  const cluster = await startChaosCluster({ prefix: 'chaosbench', partitions: Number(values.partitions) });
  try {
    const r = await runScenario(cluster, 'defect-1', {
      runs,
      clients: Number(values.clients),
      paceMs: Number(values['pace-ms']),
      workerKillAfterMs: Number(values['worker-kill-after-s']) * 1000,
      settleMs: Number(values['settle-s']) * 1000,
      stepMs: 120_000,
    });
    let commit = '';
    try {
      commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      // not a checkout
    }
    const result = {
      bench: 'nats-chaos',
      scenario: 'issue 37 defect 1: SIGTERM + restart nats-server, restart worker and 2 ingest, load, kill -9 + restart nats-server, later kill -9 + restart worker',
      at: new Date().toISOString(),
      commit,
      cliBuild: freshBuild() ? 'dist/cli (current)' : 'sources (tsx)',
      options: { runs, clients: Number(values.clients), paceMs: Number(values['pace-ms']), workerKillAfterS: Number(values['worker-kill-after-s']), partitions: Number(values.partitions) },
      runsSent: r.runsSent,
      answered202: r.statuses['202'] ?? 0,
      runsAccepted: r.accepted,
      storedOnce: r.storedOnce,
      storedTwice: r.storedTwice,
      missing: r.missing,
      receiptsGiven: r.receiptsGiven,
      receiptsUnresolved: r.receiptsUnresolved,
      refused: r.refused.length,
      settled: r.settled,
      byKind: r.byKind,
      statuses: r.statuses,
      seconds: r.seconds,
      events: r.events,
      examples: r.examples,
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`wrote ${writeResult('nats-chaos', result)}`);
    return r.storedTwice === 0 && r.missing === 0 && r.receiptsUnresolved === 0 && r.refused.length === 0 ? 0 : 1;
  } finally {
    await cluster.close();
  }
}

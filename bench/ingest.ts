// `npm run bench -- ingest [--only junit|saturation|paced] [--clients 32] [--seconds 15] [--batch 100] [--rate 10000] [--thread true|false] [--pipeline FILE] [--junit-cases 100000]`
//
// Starts the daemon as a child process (embedded chDB + lmdb queue), drives it with N concurrent
// clients posting native batches, and measures in one run every target of docs/benchmarks.md
// "ingest" (printed with pass/fail under `targets`):
//  - idle anonymous memory of the started daemon, before any traffic,
//  - end-to-end executions/s at saturation (first POST → every execution committed) against the raw
//    chDB insert of the same rows in this process, in blocks of a lease's size (the storage limit),
//    and CPU per execution of both; beside them the durable minimum (parse, validate, queue, insert),
//    the floor under the daemon's CPU,
//  - `GET /v1/runs` latency while ingest saturates (a reader beside the writers; the board's and the
//    quarantine list's are reported beside it),
//  - ack latency p50/p99/max at a paced offered load (POST → 202, i.e. durable in the queue),
//  - peak RSS of the daemon at saturation,
//  - peak RSS of a second, fresh daemon ingesting one JUnit report of --junit-cases cases.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { parseProcStat } from './proc-stat.js';
import { writeResult } from './results.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { openStore } from '../src/store/client.js';
import { migrate } from '../src/store/migrate.js';
import { buildExecutions, buildRun } from '../src/domain/records.js';
import { EXECUTION_COLUMNS_IN, RUN_COLUMNS_IN, executionRow, runRow } from '../src/store/runs.js';
import { uuidv7 } from '../client/src/contract/ids.js';
import type { IngestBatch } from '../client/src/contract/batch.js';
import { startServerProcess, bootstrapToken } from '../test/helpers/process.js';
import { junitXml } from './junit-large.js';
import { gzipSync } from 'node:zlib';
import { Worker } from 'node:worker_threads';
import { freshBuild } from '../bin/built-cli.js';
import { withMallocTunable } from '../bin/malloc-tunables.js';
import { ENGINE_MALLOC_CONF } from '../src/store/engine-malloc.js';
import { DEFAULT_LEASE_LIMITS } from '../src/pipeline/runtime.js';
import { EmbeddedQueue } from '../src/queue/embedded.js';
import { nativeBatchSchema } from '../src/receivers/native/schema.js';


/** A native batch of `size` executions over `tests` distinct tests (bench/scale-out.ts sends the same). */
export function makeBatch(i: number, size: number, tests: number, fixed: { key?: string; commitSha?: string; startedAt?: number } = {}): IngestBatch {
  const startedAt = fixed.startedAt ?? Date.now() - 60_000 + i;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: fixed.key ?? `bench-${randomBytes(8).toString('hex')}-${i}`,
    resource: { ciProvider: 'github_actions', commitSha: fixed.commitSha ?? randomBytes(20).toString('hex'), branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt },
    executions: Array.from({ length: size }, (_, j) => {
      const t = (i * size + j) % tests;
      const fail = (i + j) % 37 === 0;
      return {
        filePath: `src/feature${t % 200}/module${t % 17}.test.ts`,
        suite: `Feature ${t % 200}`,
        title: `behaves correctly in case ${t}`,
        status: fail ? ('fail' as const) : ('pass' as const),
        attempt: 1,
        startedAt: startedAt + j,
        durationMs: 5 + ((i * 7 + j * 13) % 900),
        ...(fail ? { error: { type: 'AssertionError', message: `expected ${j} to equal ${j + 1}`, stack: `AssertionError: expected\n    at Object.<anonymous> (src/feature${t % 200}/module.test.ts:${j}:7)` } } : {}),
      };
    }),
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A field of /proc/<pid>/status in bytes (VmHWM: peak RSS; VmRSS; RssAnon: heap and stacks, no mapped files). */
function statusBytes(pid: number, field: 'VmHWM' | 'VmRSS' | 'RssAnon'): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const peakRss = (pid: number): number => statusBytes(pid, 'VmHWM');

/**
 * CPU seconds the daemon has used, in total and per thread (`main`: HTTP; `pipeline`: the pipeline
 * thread; `node`: libuv pool, where chDB runs queries, and V8 helpers; chDB's own pools by name). Threads that already ended count only in
 * `total`.
 */
function cpuSeconds(pid: number): { total: number; byThread: Record<string, number> } {
  const byThread: Record<string, number> = {};
  let total = 0;
  try {
    total = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).cpuS;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        // The main thread and the pipeline thread (the one at niceness 10) apart; Node's other unnamed
        // helpers (libuv pool, where chDB runs queries; V8 platform) are `node`.
        const stat = parseProcStat(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
        const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim().replace(/[0-9]+$/, '');
        const name = tid === String(pid) ? 'main' : comm === 'node' && stat.nice === 10 ? 'pipeline' : comm;
        byThread[name] = (byThread[name] ?? 0) + stat.cpuS;
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    // not Linux, or the process is gone
  }
  return { total, byThread };
}

function cpuDelta(a: ReturnType<typeof cpuSeconds>, b: ReturnType<typeof cpuSeconds>): { total: number; byThread: Record<string, number> } {
  const byThread: Record<string, number> = {};
  for (const [k, v] of Object.entries(b.byThread)) {
    const d = v - (a.byThread[k] ?? 0);
    if (d >= 0.05) byThread[k] = round(d);
  }
  return { total: round(b.total - a.total), byThread };
}

/** The same rows, inserted straight into chDB in blocks of `blockExecutions`: what storage alone can take. */
async function rawInsertRate(batches: IngestBatch[], blockExecutions: number): Promise<{ executionsPerSec: number; seconds: number; cpuMicrosPerExecution: number }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fh-bench-raw-'));
  const store = await openStore({ chdbPath: dir, database: 'bench_raw' });
  try {
    await migrate(store);
    const projectId = '00000000-0000-4000-8000-000000000001';
    const groups: { runs: Record<string, unknown>[]; executions: Record<string, unknown>[] }[] = [];
    let cur = { runs: [] as Record<string, unknown>[], executions: [] as Record<string, unknown>[] };
    batches.forEach((b) => {
      const run = buildRun({ projectId, receiptId: uuidv7(), source: 'native', batch: b, receivedAt: Date.now() });
      cur.runs.push(runRow(run));
      for (const e of buildExecutions(run, b)) cur.executions.push(executionRow(e, run));
      if (cur.executions.length >= blockExecutions) {
        groups.push(cur);
        cur = { runs: [], executions: [] };
      }
    });
    if (cur.runs.length > 0) groups.push(cur);
    const started = performance.now();
    const cpu0 = process.cpuUsage();
    let n = 0;
    for (const [i, g] of groups.entries()) {
      await store.insertTsv('executions', EXECUTION_COLUMNS_IN, g.executions, `raw:${i}:e`);
      await store.insertTsv('runs', RUN_COLUMNS_IN, g.runs, `raw:${i}:r`);
      n += g.executions.length;
    }
    const seconds = (performance.now() - started) / 1000;
    // This process's CPU over the inserts, every thread (TSV encoding here, chDB's own threads).
    const cpu = process.cpuUsage(cpu0);
    return { executionsPerSec: n / seconds, seconds, cpuMicrosPerExecution: (cpu.user + cpu.system) / n };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The least any daemon keeping "a 202 means stored" does per execution, in this process: each wire
 * body parsed and validated by the native receiver's schema, enqueued on the real queue (LMDB),
 * leased back in a lease's size, built into rows and inserted as the raw insert does, then acked.
 * No HTTP, no identity, scoring or other tables: a floor under the daemon's CPU, not a target.
 */
async function durableMinimum(batches: IngestBatch[], blockExecutions: number): Promise<{ executionsPerSec: number; cpuMicrosPerExecution: number }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fh-bench-durable-'));
  const store = await openStore({ chdbPath: dir, database: 'bench_durable' });
  const queue = EmbeddedQueue.open({ path: path.join(dir, 'queue'), visibilityMs: 300_000, maxAttempts: 5 });
  try {
    await migrate(store);
    const projectId = '00000000-0000-4000-8000-000000000001';
    const bodies = batches.map((b) => JSON.stringify(b));
    const total = batches.reduce((n, b) => n + b.executions.length, 0);
    const started = performance.now();
    const cpu0 = process.cpuUsage();
    const receive = async (): Promise<void> => {
      for (const body of bodies) {
        const parsed = nativeBatchSchema.safeParse(JSON.parse(body));
        if (!parsed.success) throw new Error(`bench batch refused: ${parsed.error.message}`);
        await queue.enqueue({ projectId, source: 'native', batch: parsed.data });
      }
    };
    const leaseAndInsert = async (): Promise<void> => {
      let stored = 0;
      for (let i = 0; stored < total; ) {
        const lease = await queue.dequeue({ maxJobs: DEFAULT_LEASE_LIMITS.maxJobs, maxExecutions: blockExecutions });
        if (!lease) {
          await queue.waitForWork(20);
          continue;
        }
        const runs: Record<string, unknown>[] = [];
        const executions: Record<string, unknown>[] = [];
        for (const job of lease.jobs) {
          const run = buildRun({ projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt });
          runs.push(runRow(run));
          for (const e of buildExecutions(run, job.batch)) executions.push(executionRow(e, run));
        }
        await store.insertTsv('executions', EXECUTION_COLUMNS_IN, executions, `durable:${i}:e`);
        await store.insertTsv('runs', RUN_COLUMNS_IN, runs, `durable:${i++}:r`);
        await queue.ack(lease.id);
        stored += executions.length;
      }
    };
    await Promise.all([receive(), leaseAndInsert()]);
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return { executionsPerSec: total / seconds, cpuMicrosPerExecution: (cpu.user + cpu.system) / total };
  } finally {
    await queue.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      clients: { type: 'string', default: '32' },
      seconds: { type: 'string', default: '15' },
      rate: { type: 'string', default: '10000' },
      'junit-cases': { type: 'string', default: '100000' },
      batch: { type: 'string', default: '100' },
      tests: { type: 'string', default: '20000' },
      profile: { type: 'string' },
      'node-args': { type: 'string', default: '' },
      pipeline: { type: 'string' },
      thread: { type: 'string', default: 'true' },
      // One phase alone, for working on one target: `junit` (the JUnit report's peak RSS) or
      // `saturation` (closed loop with the runs reader beside it), `paced` (saturation, then the paced
      // phase: the ack latency, on caches as warm as in the whole run). The targets need the whole run.
      only: { type: 'string' },
    },
  });
  // A daemon runs its sources through tsx while the build is older than an edit, and that costs
  // memory (idle anonymous memory 224 against 144 MB in one pair of runs, docs/benchmarks.md).
  const daemonFrom = freshBuild() ? 'build (dist/cli)' : 'sources (tsx): run `npm run build:cli` first for numbers comparable to a release';
  if (values.only === 'junit') {
    const junit = await junitPeakRss(Number(values['junit-cases']), values.pipeline, values.thread);
    console.log(JSON.stringify({ junitReport: junit, daemonFrom: daemonFrom.split(':')[0] }, null, 2));
    return 0;
  }
  const clients = Number(values.clients);
  const seconds = Number(values.seconds);
  const batchSize = Number(values.batch);
  const tests = Number(values.tests);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-bench-ingest-'));
  console.log(`ingest bench: ${clients} clients × batches of ${batchSize} for ${seconds}s (data ${dataDir}); daemon from ${daemonFrom}`);

  // Pre-build the bodies so the load generator spends its time sending, not building.
  const pool = Array.from({ length: 400 }, (_, i) => makeBatch(i, batchSize, tests));
  const nodeArgs = [...(values.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values.profile)}`] : []), ...values['node-args'].split(' ').filter(Boolean)];
  const server = await startServerProcess({ ...NPM_START_ENV, SERVICE_DATA_DIR: dataDir, LOG_LEVEL: 'warn', SERVICE_MAX_QUEUE_DEPTH: '0', SERVICE_RATE_LIMIT_MAX: '0', SERVICE_PIPELINE_THREAD: values.thread }, 60_000, nodeArgs, values.pipeline ? ['--pipeline', path.resolve(values.pipeline)] : []);
  const token = bootstrapToken(dataDir);
  const admin = readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
  const pid = server.child.pid!;
  const glibcTunables = daemonGlibcTunables(pid);
  // Idle: started, migrated, nothing sent yet; a few seconds for start-up work to settle.
  await new Promise((r) => setTimeout(r, 5_000));
  const idleAnonMb = round(statusBytes(pid, 'RssAnon') / 1024 / 1024);
  const sent: IngestBatch[] = [];
  let seq = 0;

  /** Drives one phase; `rate` (requests/s over all clients) paces an open loop, else closed loop. */
  async function phase(name: string, rate: number | null): Promise<Record<string, unknown>> {
    const latencies: number[] = [];
    let errors = 0;
    let accepted = 0;
    const before = await workerStats();
    const served0 = await ingestDurationBuckets();
    const cpu0 = cpuSeconds(pid);
    const gen0 = process.cpuUsage();
    const t0 = performance.now();
    const stopAt = t0 + seconds * 1000;
    const post = async (): Promise<void> => {
      const i = seq++;
      const body = { ...pool[i % pool.length]!, idempotencyKey: `bench-${i}-${pid}` };
      const payload = JSON.stringify(body);
      const s = performance.now();
      const res = await fetch(`${server.url}/v1/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: payload,
      });
      await res.arrayBuffer();
      const ms = performance.now() - s;
      if (res.status === 202) {
        latencies.push(ms);
        accepted += batchSize;
        if (sent.length < 2000) sent.push(body);
      } else errors++;
    };
    if (rate === null) {
      await Promise.all(Array.from({ length: clients }, async () => { while (performance.now() < stopAt) await post(); }));
    } else {
      // Open loop: each client sends on its own schedule whether or not earlier requests returned,
      // so latency is measured at a known offered load rather than set by the clients' own waiting.
      const interval = (1000 * clients) / rate;
      await Promise.all(
        Array.from({ length: clients }, async (_, c) => {
          const inflight: Promise<void>[] = [];
          let next = t0 + (interval * c) / clients;
          while (next < stopAt) {
            const wait = next - performance.now();
            if (wait > 0) await new Promise((r) => setTimeout(r, wait));
            inflight.push(post());
            next += interval;
          }
          await Promise.all(inflight);
        }),
      );
    }
    const postSeconds = (performance.now() - t0) / 1000;
    const served = bucketDelta(served0, await ingestDurationBuckets());
    // End to end: until the worker has committed everything accepted in this phase.
    for (;;) {
      const st = await workerStats();
      if (st.pending === 0 && st.inflight === 0 && st.executions - before.executions >= accepted) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const e2eSeconds = (performance.now() - t0) / 1000;
    const cpu = cpuDelta(cpu0, cpuSeconds(pid));
    const leases = (await workerStats()).leases - before.leases;
    const gen = process.cpuUsage(gen0);
    latencies.sort((a, b) => a - b);
    return {
      phase: name,
      offeredExecutionsPerSec: rate === null ? 'closed loop' : rate * batchSize,
      requests: latencies.length,
      errors,
      acceptedExecutions: accepted,
      ackLatencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(latencies[latencies.length - 1] ?? 0) },
      // The same acks as the daemon times them (headers read -> reply written, its request-duration
      // histogram): the gap to the above is the load generator's own event loop and the sockets.
      ackServedMs: { p50UpTo: bucketPercentile(served, 50), p99UpTo: bucketPercentile(served, 99), within10ms: served.total > 0 ? round((served.le.get(0.01) ?? 0) / served.total) : 0 },
      ackExecutionsPerSec: Math.round(accepted / postSeconds),
      endToEnd: { seconds: round(e2eSeconds), executionsPerSec: Math.round(accepted / e2eSeconds) },
      // How the worker took the phase's jobs: fewer, larger leases write fewer, larger parts.
      leases: { count: leases, executionsPerLease: leases > 0 ? Math.round(accepted / leases) : 0 },
      // Where the two cores went over the phase (until everything was committed).
      cpuSeconds: {
        daemon: cpu.total,
        daemonByThread: cpu.byThread,
        loadGenerator: round((gen.user + gen.system) / 1e6),
        daemonMicrosPerExecution: accepted > 0 ? round((cpu.total * 1e6) / accepted) : 0,
      },
    };
  }

  /** The daemon's request-duration histogram for POST /v1/ingest: cumulative count per bucket bound (s). */
  async function ingestDurationBuckets(): Promise<Map<number, number>> {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${admin}` } });
    const out = new Map<number, number>();
    for (const line of (await res.text()).split('\n')) {
      if (!line.startsWith('http_server_request_duration_seconds_bucket{') || !line.includes('http_route="/v1/ingest"') || !line.includes('"POST"')) continue;
      const le = /le="([^"]+)"/.exec(line)?.[1];
      if (!le) continue;
      const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
      out.set(bound, (out.get(bound) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
    }
    return out;
  }

  async function workerStats(): Promise<{ pending: number; inflight: number; leases: number; executions: number; eventsDelivered: number; eventLoopDelayMs: unknown; stageMs: Record<string, number> }> {
    const res = await fetch(`${server.url}/v1/admin/stats`, { headers: { authorization: `Bearer ${admin}` } });
    const st = (await res.json()) as { queue: { pending: number; inflight: number }; worker: { leases: number; executions: number; eventsDelivered: number; stageMs: Record<string, number> }; eventLoopDelayMs: unknown };
    return { pending: st.queue.pending, inflight: st.queue.inflight, leases: st.worker.leases, executions: st.worker.executions, eventsDelivered: st.worker.eventsDelivered, eventLoopDelayMs: st.eventLoopDelayMs, stageMs: st.worker.stageMs };
  }

  // One reader beside the writers: the runs page's and the board's requests in turn, while clients post.
  // On a thread of its own, so its latencies are the daemon's, not the 32 clients' event loop's.
  const readsDuringSaturation = pageReader(server.url, token, seconds * 1000);
  const saturation = await phase('saturation', null);
  const { runs: runsReadUnderIngest, board: boardReadUnderIngest, quarantine: quarantineReadUnderIngest } = await readsDuringSaturation;
  // The same reads once the queue has drained, on the same data: what the read itself costs, so the
  // reads under ingest show how much of their time is waiting for the two busy cores.
  const readsAfterDrain = await quietReads(server.url, token, 20);
  if (values.only === 'saturation') {
    console.log(JSON.stringify({ saturation, runsReadUnderIngest, boardReadUnderIngest, quarantineReadUnderIngest, readsAfterDrain, peakRssMb: round(peakRss(pid) / 1024 / 1024), stageMs: (await workerStats()).stageMs, daemonGlibcTunables: glibcTunables }, null, 2));
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    return 0;
  }
  const loopAfterSaturation = (await workerStats()).eventLoopDelayMs;
  const paced = await phase('paced', Number(values.rate) / batchSize);
  if (values.only === 'paced') {
    console.log(JSON.stringify({ saturation, runsReadUnderIngest, paced, loopAfterSaturation, loopAfterPaced: (await workerStats()).eventLoopDelayMs, daemonGlibcTunables: glibcTunables }, null, 2));
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    return 0;
  }
  const final = await workerStats();
  const loopAfterBoth = final.eventLoopDelayMs;
  // Where the worker's time went, per pipeline stage, over both phases.
  const workerStageMs = Object.fromEntries(Object.entries(final.stageMs).map(([k, v]) => [k, Math.round(v)]));
  // Queryable: the newest run is listed by the API.
  const list = await fetch(`${server.url}/v1/runs?limit=1`, { headers: { authorization: `Bearer ${token}` } });
  const queryable = list.status === 200 && ((await list.json()) as { items: unknown[] }).items.length === 1;
  const rss = peakRss(pid);
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });

  // The storage limit in blocks of the daemon's own lease size (10,000 executions), as it writes
  // them; and, for comparison with the runs before session 56, in the 50,000-execution blocks the
  // bench used from when a lease was that large (the engine is faster per row in bigger blocks).
  // The large blocks go first, so the baseline the targets use runs warm: the stricter order.
  const rawLargeBlocks = await rawInsertRate(sent, 50_000);
  const raw = await rawInsertRate(sent, DEFAULT_LEASE_LIMITS.maxExecutions);
  const durable = await durableMinimum(sent, DEFAULT_LEASE_LIMITS.maxExecutions);
  const e2eRate = (saturation.endToEnd as { executionsPerSec: number }).executionsPerSec;
  const junit = await junitPeakRss(Number(values['junit-cases']), values.pipeline, values.thread);
  const satCpu = saturation.cpuSeconds as { daemonMicrosPerExecution: number };
  const pacedAck = paced.ackLatencyMs as { p99: number };
  const peakRssMb = round(rss / 1024 / 1024);
  const endToEndVsRawInsert = round(e2eRate / raw.executionsPerSec);
  const cpuVsRawInsert = round(satCpu.daemonMicrosPerExecution / raw.cpuMicrosPerExecution);
  // Issue 40's targets, each measured above in this one run.
  const targets = [
    target('end to end ÷ raw chDB insert', endToEndVsRawInsert, '>=', 0.5),
    target('daemon CPU per execution ÷ raw insert', cpuVsRawInsert, '<=', 2),
    target('ack p99 ms at the paced load', pacedAck.p99, '<=', 10),
    target('peak RSS MB at saturation', peakRssMb, '<=', 1024),
    target(`peak RSS MB, one ${values['junit-cases']}-case JUnit report`, junit.peakRssMB, '<=', 1024),
    target('GET /v1/runs p95 ms while ingest saturates', runsReadUnderIngest.ms.p95, '<=', 50),
    target('idle anonymous memory MB', idleAnonMb, '<=', 150),
  ];
  const result = {
    bench: 'ingest',
    at: new Date().toISOString(),
    machine: { cpus: (await import('node:os')).cpus().length, node: process.version, note: 'load generator runs on the same 2 cores' },
    params: { clients, secondsPerPhase: seconds, batchSize, distinctTests: tests, pipeline: values.pipeline ?? 'pipelines/default.yaml', pipelineThread: values.thread === 'true', daemonFrom: daemonFrom.split(':')[0], daemonGlibcTunables: glibcTunables, daemonEngineMallocConf: ENGINE_MALLOC },
    saturation,
    paced,
    queryable,
    workerStageMs,
    // Domain events the lease plans carried out through the outbox (score.updated, run.processed, …).
    eventsDelivered: final.eventsDelivered,
    daemonEventLoopDelayMs: { afterSaturation: loopAfterSaturation, afterBoth: loopAfterBoth },
    peakRssMb,
    idleAnonMb,
    runsReadUnderIngest,
    // The board beside the same writers (no target of its own in issue 40; reported beside the runs page).
    boardReadUnderIngest,
    quarantineReadUnderIngest,
    readsAfterDrain,
    junitReport: junit,
    rawChdbInsert: { executions: sent.length * batchSize, blockExecutions: DEFAULT_LEASE_LIMITS.maxExecutions, executionsPerSec: Math.round(raw.executionsPerSec), cpuMicrosPerExecution: round(raw.cpuMicrosPerExecution) },
    endToEndVsRawInsert,
    cpuVsRawInsert,
    rawChdbInsertLargeBlocks: {
      blockExecutions: 50_000,
      executionsPerSec: Math.round(rawLargeBlocks.executionsPerSec),
      cpuMicrosPerExecution: round(rawLargeBlocks.cpuMicrosPerExecution),
      endToEndVsRawInsert: round(e2eRate / rawLargeBlocks.executionsPerSec),
      cpuVsRawInsert: round(satCpu.daemonMicrosPerExecution / rawLargeBlocks.cpuMicrosPerExecution),
    },
    // The floor under the CPU target: the receive → queue → insert path alone, before any of the
    // analytics (identity, scoring, the other tables) or HTTP. Its ratio to the raw insert is what
    // no daemon that stores what it acknowledged can go below.
    durableMinimum: {
      executionsPerSec: Math.round(durable.executionsPerSec),
      cpuMicrosPerExecution: round(durable.cpuMicrosPerExecution),
      cpuVsRawInsert: round(durable.cpuMicrosPerExecution / raw.cpuMicrosPerExecution),
      daemonCpuVsDurableMinimum: round(satCpu.daemonMicrosPerExecution / durable.cpuMicrosPerExecution),
    },
    targets,
    allTargetsMet: targets.every((t) => t.pass),
  };
  console.log(JSON.stringify(result, null, 2));
  for (const t of targets) console.log(`${t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.value} (target ${t.op} ${t.target})`);
  const name = `${values.pipeline ? `ingest-${path.basename(values.pipeline, path.extname(values.pipeline))}` : 'ingest'}${values.thread === 'true' ? '' : '-one-thread'}`;
  console.log(`written ${writeResult(name, result)}`);
  return 0;
}

/** Per-bucket growth of a cumulative histogram between two reads. */
function bucketDelta(a: Map<number, number>, b: Map<number, number>): { le: Map<number, number>; total: number } {
  const le = new Map<number, number>();
  for (const [bound, n] of b) le.set(bound, n - (a.get(bound) ?? 0));
  return { le, total: le.get(Number.POSITIVE_INFINITY) ?? 0 };
}

/** The smallest bucket bound (ms) under which `p` % of the observations fall. */
function bucketPercentile(h: { le: Map<number, number>; total: number }, p: number): number | null {
  if (h.total === 0) return null;
  for (const [bound, n] of [...h.le].sort((x, y) => x[0] - y[0])) if (n >= (h.total * p) / 100) return Number.isFinite(bound) ? bound * 1000 : null;
  return null;
}

/**
 * What `npm start` adds to the daemon's environment (glibc's malloc setting, bin/malloc-tunables.js),
 * so the daemon measured is the one the README starts on any Node, not only where the launcher can
 * re-execute itself with it.
 */
const NPM_START_ENV: Record<string, string> = { GLIBC_TUNABLES: (withMallocTunable(process.env) ?? process.env).GLIBC_TUNABLES ?? '' };
/**
 * The engine's allocator setting the daemons run with: one given to the bench, else the one a store
 * sets when it opens (src/store/engine-malloc.ts). Set in the daemon's process after it starts, so
 * not readable back from /proc as GLIBC_TUNABLES is; read here before this process opens a store.
 */
const ENGINE_MALLOC = process.env.JE_MALLOC_CONF || ENGINE_MALLOC_CONF;

/** The daemon's own GLIBC_TUNABLES, read back from the kernel (what it really started with). */
function daemonGlibcTunables(pid: number): string | null {
  const entry = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((e) => e.startsWith('GLIBC_TUNABLES='));
  return entry ? entry.slice('GLIBC_TUNABLES='.length) : null;
}

function target(name: string, value: number, op: '<=' | '>=', goal: number): { name: string; value: number; op: string; target: number; pass: boolean } {
  return { name, value, op, target: goal, pass: op === '<=' ? value <= goal : value >= goal };
}

/**
 * A fresh daemon (the same pipeline and thread setting) given one JUnit report of `cases` cases,
 * gzip, through `POST /v1/ingest/junit`: its peak RSS (VmHWM, sampled VmRSS too) until every case
 * is stored.
 */
async function junitPeakRss(cases: number, pipeline: string | undefined, thread: string): Promise<{ cases: number; status: number; storedExecutions: number; seconds: number; baselineRssMB: number; peakRssMB: number; daemonGlibcTunables: string | null }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-bench-ingest-junit-'));
  const server = await startServerProcess({ ...NPM_START_ENV, SERVICE_DATA_DIR: dataDir, LOG_LEVEL: 'warn', SERVICE_RATE_LIMIT_MAX: '0', SERVICE_PIPELINE_THREAD: thread }, 60_000, [], pipeline ? ['--pipeline', path.resolve(pipeline)] : []);
  const pid = server.child.pid!;
  const token = bootstrapToken(dataDir);
  try {
    const branch = `junit-${randomBytes(3).toString('hex')}`;
    const body = gzipSync(
      JSON.stringify({
        idempotencyKey: `bench-junit-${branch}`,
        resource: { ciProvider: 'github_actions', commitSha: randomBytes(20).toString('hex'), branch, trigger: 'push' },
        xml: junitXml(cases, branch),
      }),
    );
    const baseline = statusBytes(pid, 'VmRSS');
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, statusBytes(pid, 'VmRSS'))), 50);
    const t0 = performance.now();
    const res = await fetch(`${server.url}/v1/ingest/junit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body,
    });
    await res.arrayBuffer();
    let stored = 0;
    const deadline = performance.now() + 600_000;
    while (res.status === 202 && stored < cases && performance.now() < deadline) {
      const page = (await (await fetch(`${server.url}/v1/runs?branch=${branch}&limit=10`, { headers: { authorization: `Bearer ${token}` } })).json()) as { items: { counts: { total: number } }[] };
      stored = page.items.reduce((n, r) => n + r.counts.total, 0);
      if (stored < cases) await new Promise((r) => setTimeout(r, 250));
    }
    clearInterval(sampler);
    const mb = (b: number): number => round(b / 1024 / 1024);
    return { cases, status: res.status, storedExecutions: stored, seconds: round((performance.now() - t0) / 1000), baselineRssMB: mb(baseline), peakRssMB: mb(Math.max(peak, statusBytes(pid, 'VmHWM'))), daemonGlibcTunables: daemonGlibcTunables(pid) };
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

type ReadLatency = { requests: number; failed: number; ms: { p50: number; p95: number; max: number } };

/** The pages the readers ask for: the runs page (its p95 is a target), the board, the quarantine list. */
const PAGE_PATHS = { runs: '/v1/runs?limit=50', board: '/v1/flaky?limit=50', quarantine: '/v1/quarantine' } as const;

/**
 * The runs page's, the board's and a runner's requests (GET /v1/runs?limit=50, GET /v1/flaky?limit=50,
 * GET /v1/quarantine: what `flakehouse run` and the reporters fetch before a run) in turn, one every
 * 100 ms for `ms`, from a worker thread: each one's latencies' p50/p95/max.
 */
async function pageReader(url: string, token: string, ms: number): Promise<{ runs: ReadLatency; board: ReadLatency; quarantine: ReadLatency }> {
  const code = `
    const { parentPort, workerData: { url, token, ms } } = require('node:worker_threads');
    (async () => {
      const stop = performance.now() + ms;
      const paths = ${JSON.stringify(PAGE_PATHS)};
      const out = { runs: { times: [], failed: 0 }, board: { times: [], failed: 0 }, quarantine: { times: [], failed: 0 } };
      // The runs page every other read (its p95 is a target), the board and the quarantine list in turn.
      const order = ['runs', 'board', 'runs', 'quarantine'];
      let turn = 0;
      while (performance.now() < stop) {
        const which = order[turn++ % order.length];
        const s = performance.now();
        const res = await fetch(url + paths[which], { headers: { authorization: 'Bearer ' + token } });
        await res.arrayBuffer();
        if (res.status === 200) out[which].times.push(performance.now() - s);
        else out[which].failed++;
        await new Promise((r) => setTimeout(r, 100));
      }
      parentPort.postMessage(out);
    })();
  `;
  const worker = new Worker(code, { eval: true, workerData: { url, token, ms } });
  const out = await new Promise<Record<'runs' | 'board' | 'quarantine', { times: number[]; failed: number }>>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  return { runs: readLatency(out.runs), board: readLatency(out.board), quarantine: readLatency(out.quarantine) };
}

/** One page's reads: how many, how many failed, and the p50/p95/max of those that answered 200. */
function readLatency({ times, failed }: { times: number[]; failed: number }): ReadLatency {
  times.sort((a, b) => a - b);
  return { requests: times.length, failed, ms: { p50: round(percentile(times, 50)), p95: round(percentile(times, 95)), max: round(times[times.length - 1] ?? 0) } };
}

/** `n` reads of each page in turn, one at a time, with nothing else running (after the drain). */
async function quietReads(url: string, token: string, n: number): Promise<Record<keyof typeof PAGE_PATHS, ReadLatency>> {
  const pages = Object.keys(PAGE_PATHS) as (keyof typeof PAGE_PATHS)[];
  const out = Object.fromEntries(pages.map((page) => [page, { times: [] as number[], failed: 0 }])) as Record<keyof typeof PAGE_PATHS, { times: number[]; failed: number }>;
  for (let i = 0; i < n; i++) {
    for (const page of pages) {
      const s = performance.now();
      const res = await fetch(url + PAGE_PATHS[page], { headers: { authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      if (res.status === 200) out[page].times.push(performance.now() - s);
      else out[page].failed++;
    }
  }
  return { runs: readLatency(out.runs), board: readLatency(out.board), quarantine: readLatency(out.quarantine) };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

// `npm run bench -- scale-out [--clients 16] [--seconds 10] [--batch 50] [--warmup 2] [--drain-cap 60]
//                             [--partitions 16] [--phases single,nats-1,nats-2,nats-3]`  (also nats-N-mainthread: the worker's pipeline on its main thread)
//
// Does scaling out on NATS JetStream buy ack throughput on this machine? In ONE run, on loopback,
// each phase on fresh data dirs (and a fresh nats-server):
//   single: `serve` (role all): the single daemon, embedded chDB + on-disk lmdb queue;
//   nats-N: nats-server + one `serve --role worker` (embedded chDB) + N `serve --role ingest`;
//           the load generator spreads its requests round-robin over the ingest processes.
// Per phase, `--clients` closed-loop clients post native batches of `--batch` executions
// (POST /v1/ingest, bearer token, a unique idempotencyKey each) for `--warmup` + `--seconds` s;
// the warm-up is excluded. Reported: acks/s (202s per second), ack latency p50/p99/max, non-202
// answers by status, CPU% of one core per process over the load window (/proc/<pid>/stat; the load
// generator by process.cpuUsage), the worker's drain time after the load (until its queue depth is
// 0 and it has committed every accepted execution, capped), ratios against `single` of this run,
// and the process that took the most CPU. The load generator shares the machine's cores with
// every server process: the numbers are what this box does, not what N machines would.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { parseProcStat } from './proc-stat.js';
import { writeResult } from './results.js';
import { BIN, bootstrapToken, type ServerProcess } from '../test/helpers/process.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../test/helpers/nats.js';
import { freshBuild } from '../bin/built-cli.js';
import { makeBatch } from './ingest.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, d = 2): number => Math.round(n * 10 ** d) / 10 ** d;


function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** utime + stime of a whole process (every thread), seconds; undefined once it is gone. */
function procCpuS(pid: number): number | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).cpuS;
  } catch {
    return undefined;
  }
}

function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

/** Machine-wide CPU seconds from /proc/stat (all cores): busy (not idle, not iowait) and iowait. */
function machineCpuS(): { busy: number; iowait: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: (total - f[3]! - f[4]!) / 100, iowait: f[4]! / 100 };
  } catch {
    return { busy: 0, iowait: 0 };
  }
}

/** Every process's CPU seconds, by pid, with its command: to name the other load on the box. */
function allProcsCpuS(): Map<number, { cpuS: number; cmd: string }> {
  const m = new Map<number, { cpuS: number; cmd: string }>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').filter(Boolean).map((a) => path.basename(a)).slice(0, 4).join(' ').slice(0, 80);
      m.set(Number(e), { cpuS: parseProcStat(stat).cpuS, cmd: cmd || stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
    } catch {
      // gone meanwhile
    }
  }
  return m;
}

/** Our own nats-server children (startNatsServer does not expose the pid). */
function natsServerPids(): number[] {
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (comm === 'nats-server' && parseProcStat(stat).ppid === process.pid) pids.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

// Everything started, so that it is killed at the end whatever happened.
const liveServers = new Set<ServerProcess>();
const liveNats = new Set<NatsServer>();
const liveDirs = new Set<string>();
function killAllNow(): void {
  for (const s of liveServers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  for (const pid of natsServerPids()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
}
async function cleanUp(): Promise<void> {
  for (const s of liveServers) if (s.child.exitCode === null && s.child.signalCode === null) await s.kill9();
  liveServers.clear();
  for (const n of liveNats) await n.close().catch(() => undefined);
  liveNats.clear();
  for (const d of liveDirs) rmSync(d, { recursive: true, force: true });
  liveDirs.clear();
}

function tempDir(tag: string): string {
  const d = mkdtempSync(path.join(tmpdir(), `fh-bench-scale-out-${tag}-`));
  liveDirs.add(d);
  return d;
}

/** Start failures (role, exit code or signal, output), retried once and reported. */
const startFailures: string[] = [];

/** startServerProcess of test/helpers/process.ts, but saying how a process that died at start ended. */
async function startOnce(label: string, env: Record<string, string>, serveArgs: string[]): Promise<ServerProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', ...serveArgs], {
    env: { ...process.env, SERVICE_HOST: '127.0.0.1', SERVICE_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const server: ServerProcess = {
    child,
    url: '',
    output: () => out,
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
  liveServers.add(server);
  server.url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${label} did not start within 120 s:\n${out}`)), 120_000);
    child.stdout.on('data', () => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(t);
      reject(new Error(`${label} exited before listening (code ${code}, signal ${child.signalCode}):\n${out}`));
    });
  });
  return server;
}

async function start(label: string, env: Record<string, string>, serveArgs: string[] = []): Promise<ServerProcess> {
  try {
    return await startOnce(label, env, serveArgs);
  } catch (err) {
    const msg = (err as Error).message;
    startFailures.push(msg);
    console.error(`${msg}\n(retrying once)`);
    return startOnce(label, env, serveArgs);
  }
}

interface Params {
  clients: number;
  seconds: number;
  warmup: number;
  batchSize: number;
  drainCapS: number;
  partitions: number;
}

interface Target {
  /** role → pid, for CPU; `nats-server` included when there is one. */
  pids: Record<string, number>;
  /** Where the load goes, round-robin. */
  ingestUrls: string[];
  workerUrl: string;
  token: string;
  admin: string;
  startupS: number;
  /** Executions accepted before the load (readiness probes), which the worker commits too. */
  probeExecutions: number;
}

interface WorkerStats {
  depth: number;
  pending: number;
  inflight: number;
  dead: number;
  executions: number;
}

async function workerStats(t: Target): Promise<WorkerStats | undefined> {
  try {
    const res = await fetch(`${t.workerUrl}/v1/admin/stats`, { headers: { authorization: `Bearer ${t.admin}` }, signal: AbortSignal.timeout(5_000) });
    if (res.status !== 200) return undefined;
    const st = (await res.json()) as { queue: { pending: number; inflight: number; dead: number }; worker: { executions: number } };
    return { depth: st.queue.pending + st.queue.inflight, pending: st.queue.pending, inflight: st.queue.inflight, dead: st.queue.dead, executions: st.worker.executions };
  } catch {
    return undefined;
  }
}

async function postOnce(url: string, token: string, body: string): Promise<number> {
  try {
    const res = await fetch(`${url}/v1/ingest`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

const COMMON_ENV = { LOG_LEVEL: 'warn', SERVICE_RATE_LIMIT_MAX: '0', SERVICE_DASHBOARD_ENABLED: 'false', SERVICE_PIPELINE_THREAD: 'true' };

async function startSingle(): Promise<Target> {
  const t0 = performance.now();
  const dir = tempDir('single');
  const daemon = await start('single daemon', { ...COMMON_ENV, SERVICE_DATA_DIR: dir });
  return {
    pids: { daemon: daemon.child.pid! },
    ingestUrls: [daemon.url],
    workerUrl: daemon.url,
    token: bootstrapToken(dir),
    admin: readFileSync(path.join(dir, 'admin-token'), 'utf8').trim(),
    startupS: round((performance.now() - t0) / 1000, 1),
    probeExecutions: 0,
  };
}

async function startNats(ingestCount: number, p: Params, phase: string, workerThread = true): Promise<Target> {
  const t0 = performance.now();
  const nats = await startNatsServer();
  liveNats.add(nats);
  const natsPid = natsServerPids().find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(nats.storeDir);
    } catch {
      return false;
    }
  });
  const common = { ...COMMON_ENV, SERVICE_QUEUE_URL: nats.url, SERVICE_QUEUE_PREFIX: `bench_${phase.replace(/\W/g, '_')}`, SERVICE_QUEUE_PARTITIONS: String(p.partitions) };
  const workerDir = tempDir(`${phase}-worker`);
  const worker = await start(`${phase} worker`, { ...common, SERVICE_DATA_DIR: workerDir, SERVICE_ROLE: 'worker', SERVICE_PIPELINE_THREAD: String(workerThread) });
  const token = bootstrapToken(workerDir);
  const ingest = await Promise.all(Array.from({ length: ingestCount }, (_, i) => start(`${phase} ingest${i + 1}`, { ...common, SERVICE_DATA_DIR: tempDir(`${phase}-ingest${i}`) }, ['--role', 'ingest'])));
  // An ingest process knows the token once the worker's snapshot reached it: poll until a POST is accepted.
  let probeExecutions = 0;
  for (const [i, ing] of ingest.entries()) {
    const deadline = Date.now() + 20_000;
    for (let k = 0; ; k++) {
      const status = await postOnce(ing.url, token, JSON.stringify({ ...makeBatch(k, 1, 1), idempotencyKey: `probe-${phase}-${i}-${k}` }));
      if (status === 202) {
        probeExecutions += 1;
        break;
      }
      if (Date.now() > deadline) throw new Error(`ingest process ${i} of ${phase} never accepted the token (last status ${status}):\n${ing.output()}`);
      await sleep(100);
    }
  }
  const pids: Record<string, number> = {};
  ingest.forEach((ing, i) => (pids[`ingest${i + 1}`] = ing.child.pid!));
  pids.worker = worker.child.pid!;
  if (natsPid) pids['nats-server'] = natsPid;
  return {
    pids,
    ingestUrls: ingest.map((x) => x.url),
    workerUrl: worker.url,
    token,
    admin: readFileSync(path.join(workerDir, 'admin-token'), 'utf8').trim(),
    startupS: round((performance.now() - t0) / 1000, 1),
    probeExecutions,
  };
}

/** Bodies with a placeholder key, serialised once: the generator spends its time sending. */
function bodyTemplates(batchSize: number): string[] {
  return Array.from({ length: 200 }, (_, i) => JSON.stringify({ ...makeBatch(i, batchSize, 20_000), idempotencyKey: '__KEY__' }));
}

async function runPhase(name: string, t: Target, p: Params, templates: string[]): Promise<Record<string, unknown>> {
  const before = (await workerStats(t)) ?? { executions: 0 };
  const latencies: number[] = [];
  const nonAccepted: Record<string, number> = {};
  let acceptedExecutionsTotal = t.probeExecutions; // warm-up included: the worker drains those too
  let measuredAcks = 0;
  let seq = 0;
  const keyBase = `${name}-${process.pid}-${randomBytes(4).toString('hex')}`;

  const t0 = performance.now();
  const warmEnd = t0 + p.warmup * 1000;
  const stopAt = warmEnd + p.seconds * 1000;
  let cpuAtWarmEnd: Record<string, number | undefined> = {};
  let genAtWarmEnd = process.cpuUsage();
  let machineAtWarmEnd = machineCpuS();
  let procsAtWarmEnd = allProcsCpuS();
  let wallAtWarmEnd = warmEnd;
  const warmTimer = setTimeout(() => {
    wallAtWarmEnd = performance.now();
    cpuAtWarmEnd = Object.fromEntries(Object.entries(t.pids).map(([k, pid]) => [k, procCpuS(pid)]));
    genAtWarmEnd = process.cpuUsage();
    machineAtWarmEnd = machineCpuS();
    procsAtWarmEnd = allProcsCpuS();
  }, p.warmup * 1000);

  const client = async (): Promise<void> => {
    while (performance.now() < stopAt) {
      const i = seq++;
      const url = t.ingestUrls[i % t.ingestUrls.length]!;
      const body = templates[i % templates.length]!.replace('"__KEY__"', JSON.stringify(`${keyBase}-${i}`));
      const s = performance.now();
      const status = await postOnce(url, t.token, body);
      const ms = performance.now() - s;
      const measured = s >= warmEnd;
      if (status === 202) {
        acceptedExecutionsTotal += p.batchSize;
        if (measured) {
          measuredAcks++;
          latencies.push(ms);
        }
      } else {
        const key = status === 0 ? 'network_error' : String(status);
        if (measured) nonAccepted[key] = (nonAccepted[key] ?? 0) + 1;
        // Do not spin on refusals.
        await sleep(status === 0 ? 100 : 10);
      }
    }
  };
  await Promise.all(Array.from({ length: p.clients }, client));
  clearTimeout(warmTimer);
  const loadEnd = performance.now();
  const cpuAtEnd = Object.fromEntries(Object.entries(t.pids).map(([k, pid]) => [k, procCpuS(pid)]));
  const gen = process.cpuUsage(genAtWarmEnd);
  const machineAtEnd = machineCpuS();
  const procsAtEnd = allProcsCpuS();
  const windowS = (loadEnd - wallAtWarmEnd) / 1000;

  const cpuPct: Record<string, number> = {};
  for (const [k, end] of Object.entries(cpuAtEnd)) {
    const a = cpuAtWarmEnd[k];
    if (a !== undefined && end !== undefined) cpuPct[k] = round(((end - a) / windowS) * 100, 1);
  }
  cpuPct.loadGenerator = round(((gen.user + gen.system) / 1e6 / windowS) * 100, 1);
  const cpuSum = round(Object.values(cpuPct).reduce((s, v) => s + v, 0), 1);
  // The whole machine over the same window: what our processes do not account for is other load
  // (other processes on the box, kernel work such as loopback softirqs), and iowait (fsync).
  const machineBusyPct = round(((machineAtEnd.busy - machineAtWarmEnd.busy) / windowS) * 100, 1);
  const machineIowaitPct = round(((machineAtEnd.iowait - machineAtWarmEnd.iowait) / windowS) * 100, 1);
  const ours = new Set([process.pid, ...Object.values(t.pids)]);
  const otherProcesses = [...procsAtEnd.entries()]
    .filter(([pid]) => !ours.has(pid) && procsAtWarmEnd.has(pid))
    .map(([pid, v]) => ({ pid, cmd: v.cmd, cpuPct: round(((v.cpuS - procsAtWarmEnd.get(pid)!.cpuS) / windowS) * 100, 1) }))
    .filter((x) => x.cpuPct >= 2)
    .sort((a, b) => b.cpuPct - a.cpuPct)
    .slice(0, 5);
  const top = Object.entries(cpuPct).sort((a, b) => b[1] - a[1])[0]!;

  // Drain: until the worker's queue is empty and it committed every execution accepted in the phase.
  const drainStart = performance.now();
  let drainS: number | null = null;
  let committedS: number | null = null;
  let last: WorkerStats | undefined;
  let atLoadEnd: WorkerStats | undefined;
  while ((performance.now() - drainStart) / 1000 < p.drainCapS) {
    last = await workerStats(t);
    atLoadEnd ??= last;
    if (last) {
      const done = last.executions - before.executions >= acceptedExecutionsTotal;
      if (done && committedS === null) committedS = round((performance.now() - drainStart) / 1000);
      if (done && last.depth === 0) {
        drainS = round((performance.now() - drainStart) / 1000);
        break;
      }
    }
    await sleep(100);
  }
  const rss = Object.fromEntries(Object.entries(t.pids).map(([k, pid]) => [k, peakRssMb(pid)]));
  const alive = Object.fromEntries(Object.entries(t.pids).map(([k, pid]) => [k, procCpuS(pid) !== undefined]));

  latencies.sort((a, b) => a - b);
  const acksPerSec = round(measuredAcks / windowS, 1);
  return {
    phase: name,
    processes: Object.keys(t.pids),
    startupSeconds: t.startupS,
    loadWindowSeconds: round(windowS),
    acks: measuredAcks,
    acksPerSec,
    ackedExecutionsPerSec: Math.round(acksPerSec * p.batchSize),
    ackLatencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(latencies[latencies.length - 1] ?? 0) },
    nonAcceptedByStatus: nonAccepted,
    cpuPctOfOneCore: cpuPct,
    cpuPctSum: cpuSum,
    // Server CPU (every server process, not the generator) per acknowledged request over the window
    // (it includes what the worker processed meanwhile).
    serverCpuMsPerAck: measuredAcks > 0 ? round(((cpuSum - cpuPct.loadGenerator) / 100) * windowS * 1000 / measuredAcks, 2) : null,
    machineCpuPct: { busy: machineBusyPct, notOurProcesses: round(machineBusyPct - cpuSum, 1), otherProcesses, iowait: machineIowaitPct, maximum: cpus().length * 100 },
    // coresSaturated: our processes alone took ~2 cores; machineSaturated: the whole box was busy.
    bottleneck: { process: top[0], cpuPct: top[1], coresSaturated: cpuSum >= 180, machineSaturated: machineBusyPct >= 180 },
    drain: {
      seconds: drainS ?? round((performance.now() - drainStart) / 1000),
      capped: drainS === null,
      allExecutionsCommittedAfterSeconds: committedS,
      acceptedExecutions: acceptedExecutionsTotal,
      committedExecutions: last ? last.executions - before.executions : null,
      // The worker's commit rate once it had the machine to itself.
      executionsPerSec: atLoadEnd && last ? Math.round((last.executions - atLoadEnd.executions) / Math.max(0.001, (performance.now() - drainStart) / 1000)) : null,
      queueAtEnd: last ? { pending: last.pending, inflight: last.inflight, dead: last.dead } : null,
    },
    // From the first POST of the phase (warm-up included) until everything accepted was committed.
    endToEndExecutionsPerSec: drainS === null ? null : Math.round(acceptedExecutionsTotal / ((drainStart - t0) / 1000 + drainS)),
    peakRssMb: rss,
    aliveAtEnd: alive,
  };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      clients: { type: 'string', default: '16' },
      seconds: { type: 'string', default: '10' },
      batch: { type: 'string', default: '50' },
      warmup: { type: 'string', default: '2' },
      'drain-cap': { type: 'string', default: '60' },
      partitions: { type: 'string', default: '16' },
      phases: { type: 'string', default: 'single,nats-1,nats-2,nats-3' },
    },
  });
  const p: Params = {
    clients: Number(values.clients),
    seconds: Number(values.seconds),
    warmup: Number(values.warmup),
    batchSize: Number(values.batch),
    drainCapS: Number(values['drain-cap']),
    partitions: Number(values.partitions),
  };
  const phases = values.phases.split(',').filter(Boolean);
  if (phases.some((ph) => ph.startsWith('nats-')) && !natsServerAvailable()) {
    console.error('nats-server is not installed (Debian package nats-server)');
    return 1;
  }
  const cliFrom = freshBuild() ? 'build (dist/cli)' : 'sources (tsx)';
  console.log(`scale-out bench: ${p.clients} clients × batches of ${p.batchSize}, ${p.warmup}s warm-up + ${p.seconds}s per phase, phases ${phases.join(',')}; servers from ${cliFrom}`);
  console.log(`note: loopback, ${cpus().length} cores shared by the load generator and every server process`);
  const onSignal = (): void => {
    killAllNow();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const templates = bodyTemplates(p.batchSize);
  const results: Record<string, unknown>[] = [];
  const errors: Record<string, string> = {};
  try {
    for (const ph of phases) {
      try {
        // nats-N-mainthread: the worker's pipeline on its main thread (SERVICE_PIPELINE_THREAD=false), for before/after.
        const m = /^nats-(\d+)(-mainthread)?$/.exec(ph);
        if (ph !== 'single' && !m) throw new Error(`unknown phase ${ph}`);
        const target = m ? await startNats(Number(m[1]), p, ph, m[2] === undefined) : await startSingle();
        console.log(`${ph}: started in ${target.startupS}s (${Object.keys(target.pids).join(', ')})`);
        const r = await runPhase(ph, target, p, templates);
        results.push(r);
        console.log(`${ph}: ${String(r.acksPerSec)} acks/s, p99 ${(r.ackLatencyMs as { p99: number }).p99} ms, drain ${(r.drain as { seconds: number }).seconds}s, cpu ${JSON.stringify(r.cpuPctOfOneCore)}`);
      } catch (err) {
        errors[ph] = (err as Error).stack ?? String(err);
        console.error(`${ph} failed: ${errors[ph]}`);
      } finally {
        await cleanUp();
      }
    }
  } finally {
    await cleanUp();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  const single = results.find((r) => r.phase === 'single');
  for (const r of results) {
    if (r === single || !single) continue;
    r.vsSingle = {
      acksPerSec: round((r.acksPerSec as number) / (single.acksPerSec as number)),
      ackP99: round((r.ackLatencyMs as { p99: number }).p99 / (single.ackLatencyMs as { p99: number }).p99),
    };
  }

  // The table.
  const cols = ['phase', 'acks/s', 'exec/s', 'p50 ms', 'p99 ms', 'max ms', 'non-202', 'drain s', 'e2e exec/s', 'x acks', 'x p99', 'CPU% (of one core)', 'sum', 'box', 'bottleneck'];
  const rows = results.map((r) => {
    const l = r.ackLatencyMs as { p50: number; p99: number; max: number };
    const d = r.drain as { seconds: number; capped: boolean };
    const v = r.vsSingle as { acksPerSec: number; ackP99: number } | undefined;
    const b = r.bottleneck as { process: string; coresSaturated: boolean; machineSaturated: boolean };
    const non = Object.entries(r.nonAcceptedByStatus as Record<string, number>).map(([k, n]) => `${k}:${n}`).join(' ') || '0';
    const cpu = Object.entries(r.cpuPctOfOneCore as Record<string, number>).map(([k, n]) => `${k.replace('loadGenerator', 'gen').replace('nats-server', 'nats')} ${Math.round(n)}`).join(', ');
    return [r.phase as string, String(r.acksPerSec), String(r.ackedExecutionsPerSec), String(l.p50), String(l.p99), String(l.max), non, `${d.seconds}${d.capped ? ' (cap)' : ''}`, String((r.endToEndExecutionsPerSec as number | null) ?? '-'), v ? String(v.acksPerSec) : '-', v ? String(v.ackP99) : '-', cpu, String(Math.round(r.cpuPctSum as number)), String(Math.round((r.machineCpuPct as { busy: number }).busy)), `${b.process}${b.coresSaturated ? ' (cores full)' : b.machineSaturated ? ' (box full, not all ours)' : ''}`];
  });
  const widths = cols.map((c, i) => Math.max(c.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ');
  console.log(`\n(CPU% of one core over the load window; sum: our processes incl. the generator; box: the whole machine's busy CPU, max ${cpus().length * 100})`);
  console.log(`${line(cols)}\n${widths.map((w) => '-'.repeat(w)).join('-|-')}\n${rows.map(line).join('\n')}\n`);

  const result = {
    bench: 'scale-out',
    at: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version, note: `loopback only; the load generator shares the machine's ${cpus().length} cores with every server process (and nats-server)` },
    params: {
      ...p,
      phases,
      servers: cliFrom,
      env: { ...COMMON_ENV, SERVICE_MAX_QUEUE_DEPTH: 'server default (10000)', natsWorker: 'the worker runs its pipeline on its own thread (SERVICE_PIPELINE_THREAD=true) except in nats-N-mainthread phases' },
      loadGenerator: 'closed loop, fetch (undici keep-alive), one in-flight request per client, round-robin over the ingest processes; warm-up excluded from latency, acks/s and CPU',
      drain: 'after the load: until the worker queue depth (GET /v1/admin/stats) is 0 and its executions counter covers every accepted execution (warm-up included), capped',
    },
    phases: results,
    errors,
    startFailures,
  };
  console.log(`written ${writeResult('scale-out', result)}`);
  return Object.keys(errors).length > 0 ? 1 : 0;
}

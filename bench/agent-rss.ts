// `npm run bench -- agent-rss [--runs 200] [--executions 50] [--idle-ms 3000] [--from-sources] [--compare-daemon]`
//
// What an agent (`flakehouse serve --pipeline pipelines/agent.yaml`: no store, src/main/agent.ts) costs
// in memory: the resident set (VmRSS of /proc/<pid>/status) of the real process after it has been
// idle for --idle-ms since listening, right after forwarding --runs native batches of --executions
// each, and idle again after that; VmHWM is the peak. The gateway is an OTLP/HTTP sink in this
// process that answers 200 (the agent's memory is what is measured; the gateway's forwarding is
// covered by test/e2e/agent-gateway.test.ts). The process is also checked for chDB in its maps.
//
// By default the CLI build runs (built first when stale, as the test suite does); --from-sources
// runs the TypeScript sources through tsx, as the Docker image does. --compare-daemon also starts
// the full daemon on pipelines/default.yaml and samples its idle RSS the same way.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT, startServerProcess, type ServerProcess } from '../test/helpers/process.js';
import { writeResult } from './results.js';

interface Options {
  runs: number;
  executions: number;
  idleMs: number;
  fromSources: boolean;
  compareDaemon: boolean;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { runs: 200, executions: 50, idleMs: 3000, fromSources: false, compareDaemon: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--from-sources') opts.fromSources = true;
    else if (a === '--compare-daemon') opts.compareDaemon = true;
    else if (a === '--runs' || a === '--executions' || a === '--idle-ms') {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v < 0) throw new Error(`${a} needs a number`);
      if (a === '--runs') opts.runs = v;
      else if (a === '--executions') opts.executions = v;
      else opts.idleMs = v;
    } else throw new Error(`unknown option ${a}`);
  }
  return opts;
}

/** VmRSS and VmHWM of a process, MiB. */
function memory(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: round(kib('VmRSS') / 1024), peakMiB: round(kib('VmHWM') / 1024) };
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The gateway's stand-in: takes OTLP/HTTP posts, counts them, answers 200. */
async function otlpSink(): Promise<{ server: Server; url: string; requests: () => number; bytes: () => number }> {
  let requests = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${port}`, requests: () => requests, bytes: () => bytes };
}

function nativeBatch(n: number, i: number): Record<string, unknown> {
  const started = Date.UTC(2026, 10, 20, 10, 0, 0) + i * 1000;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `agent-rss-${i}-${randomBytes(4).toString('hex')}`,
    resource: { ciProvider: 'github_actions', commitSha: randomBytes(20).toString('hex'), branch: 'agent-rss', trigger: 'push' },
    run: { status: 'passed', startedAt: new Date(started).toISOString() },
    executions: Array.from({ length: n }, (_, k) => ({
      filePath: `src/area${k % 20}.test.ts`,
      suite: `Suite ${k % 20}`,
      title: `case ${k}`,
      status: k % 17 === 0 ? 'fail' : 'pass',
      startedAt: started + k,
      durationMs: 5 + (k % 50),
      ...(k % 17 === 0 ? { error: { message: `expected ${k} to be ${k + 1}`, stack: `Error: expected\n    at src/area${k % 20}.test.ts:${k}:3` } } : {}),
    })),
  };
}

async function adminStats(url: string, adminToken: string): Promise<{ queue: { pending: number; inflight: number; dead: number }; worker: { jobs: number }; memory: { rss: number; heapUsed: number } }> {
  const res = await fetch(`${url}/v1/admin/stats`, { headers: { authorization: `Bearer ${adminToken}` } });
  if (res.status !== 200) throw new Error(`GET /v1/admin/stats: ${res.status}`);
  return (await res.json()) as never;
}

export async function run(argv: string[]): Promise<number> {
  const opts = parseArgs(argv);
  const nodeEnv: Record<string, string> = opts.fromSources ? { FLAKEHOUSE_CLI_FROM_SOURCES: '1' } : {};
  if (!opts.fromSources) execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build-cli.mjs'), '--if-stale'], { cwd: REPO_ROOT, stdio: 'inherit' });
  const root = mkdtempSync(path.join(tmpdir(), 'fh-bench-agent-rss-'));
  const sink = await otlpSink();
  const processes: ServerProcess[] = [];
  try {
    const dataDir = path.join(root, 'agent');
    const agentToken = `agent-${randomBytes(16).toString('hex')}`;
    // The shipped pipeline, with no backoff to wait out (the sink never refuses).
    const pipeline = path.join(root, 'agent.yaml');
    writeFileSync(pipeline, readFileSync(path.join(REPO_ROOT, 'pipelines/agent.yaml'), 'utf8'));
    const t0 = performance.now();
    const agent = await startServerProcess(
      { ...nodeEnv, SERVICE_DATA_DIR: dataDir, SERVICE_AGENT_TOKEN: agentToken, SERVICE_GATEWAY_ENDPOINT: sink.url, SERVICE_GATEWAY_TOKEN: 'fh_bench', SERVICE_RATE_LIMIT_MAX: '0' },
      120_000,
      [],
      ['--pipeline', pipeline],
    );
    processes.push(agent);
    const startMs = Math.round(performance.now() - t0);
    const pid = agent.child.pid!;
    if (!/agent mode/.test(agent.output())) throw new Error(`not in agent mode:\n${agent.output()}`);
    const adminToken = readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();

    await sleep(opts.idleMs);
    const idle = { ...memory(pid), heapUsedMiB: round((await adminStats(agent.url, adminToken)).memory.heapUsed / 1048576) };

    const t1 = performance.now();
    for (let i = 0; i < opts.runs; i++) {
      const res = await fetch(`${agent.url}/v1/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agentToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(nativeBatch(opts.executions, i)),
      });
      if (res.status !== 202) throw new Error(`ingest ${i}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
    let stats = await adminStats(agent.url, adminToken);
    const deadline = Date.now() + 120_000;
    while (stats.queue.pending + stats.queue.inflight > 0 || stats.worker.jobs < opts.runs) {
      if (Date.now() > deadline) throw new Error(`not forwarded in time: ${JSON.stringify(stats)}`);
      await sleep(50);
      stats = await adminStats(agent.url, adminToken);
    }
    const forwardMs = Math.round(performance.now() - t1);
    const afterForward = { ...memory(pid), heapUsedMiB: round(stats.memory.heapUsed / 1048576) };
    await sleep(opts.idleMs);
    const idleAfter = { ...memory(pid), heapUsedMiB: round((await adminStats(agent.url, adminToken)).memory.heapUsed / 1048576) };
    const chdbMapped = /chdb/i.test(readFileSync(`/proc/${pid}/maps`, 'utf8'));
    if ((await agent.stop()) !== 0) throw new Error(`the agent did not stop cleanly:\n${agent.output()}`);

    let daemon: { idle: { rssMiB: number; peakMiB: number }; startMs: number } | undefined;
    if (opts.compareDaemon) {
      const t2 = performance.now();
      // The production default: the pipeline on its own thread (the test helper's default is one thread).
      const d = await startServerProcess({ ...nodeEnv, SERVICE_DATA_DIR: path.join(root, 'daemon'), SERVICE_DASHBOARD_ENABLED: 'false', SERVICE_PIPELINE_THREAD: 'true' }, 120_000);
      processes.push(d);
      const dStartMs = Math.round(performance.now() - t2);
      await sleep(opts.idleMs);
      daemon = { idle: memory(d.child.pid!), startMs: dStartMs };
      await d.stop();
    }

    const result = {
      bench: 'agent-rss',
      at: new Date().toISOString(),
      node: process.version,
      cli: opts.fromSources ? 'sources (tsx)' : 'build (dist/cli)',
      pipeline: 'pipelines/agent.yaml',
      options: opts,
      agent: {
        startMs,
        idle,
        forwarded: { runs: opts.runs, executions: opts.runs * opts.executions, ms: forwardMs, jobs: stats.worker.jobs, dead: stats.queue.dead, sinkRequests: sink.requests(), sinkBytes: sink.bytes() },
        afterForward,
        idleAfter,
        chdbMapped,
      },
      ...(daemon ? { daemon: { pipeline: 'pipelines/default.yaml', ...daemon } } : {}),
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`wrote ${writeResult(opts.fromSources ? 'agent-rss-sources' : 'agent-rss', result)}`);
    return 0;
  } finally {
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) await p.kill9();
    await new Promise<void>((resolve) => sink.server.close(() => resolve()));
    rmSync(root, { recursive: true, force: true });
  }
}

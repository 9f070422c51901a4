// `npm run bench -- grpc-hostile [--sessions 10] [--streams 10] [--body-mib 8] [--hold 10] [--settle 10]
//                                [--limit-mib 1024] [--root DIR] [--label NAME]`
//
// Defect 2 of issue 37 ("the gRPC receiver lets a stranger take the daemon's memory"), on loopback
// only, against the daemon as a child process (its memory is its own), OTLP/gRPC and a
// `memory_limiter` (`--limit-mib`, spike 0) enabled. `--sessions` HTTP/2 connections each open
// `--streams` Export calls without a token, each announcing a `--body-mib` MiB message and sending
// it as fast as the server lets it, never the last byte; they are held `--hold` s, then closed.
// Meanwhile a legitimate client posts a native batch with the bootstrap token every 200 ms
// (`POST /v1/ingest`): every answer should be 202. The daemon's RSS is sampled every 100 ms: idle
// before, the peak, and `--settle` s after the clients left. Pass: growth ≤ 100 MB and every
// legitimate request 202.
// `--root DIR` runs the daemon of another checkout (a `git worktree` of the commit before, with
// node_modules linked in), `--label NAME` writes bench/results/grpc-hostile-NAME-latest.json.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';
import { writeResult } from './results.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');
const EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const GROWTH_TARGET_MB = 100;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssMb(pid: number): number | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Math.round(Number(/VmRSS:\s+(\d+) kB/.exec(s)?.[1] ?? 0) / 1024);
  } catch {
    return null;
  }
}

interface Daemon {
  child: ChildProcess;
  port: number;
  grpc: string;
  token: string;
  stop(): Promise<void>;
}

async function startDaemon(root: string, limitMib: number): Promise<Daemon> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-bench-grpc-hostile-'));
  const doc = parseDocument(readFileSync(path.join(root, 'pipelines/default.yaml'), 'utf8'));
  doc.setIn(['receivers', 'otlp'], doc.createNode({ protocols: { grpc: { endpoint: '127.0.0.1:0' }, http: {} } }));
  doc.setIn(['processors', 'memory_limiter'], doc.createNode({ check_interval: '500ms', limit_mib: limitMib, spike_limit_mib: 0 }));
  const processors = (doc.getIn(['service', 'pipelines', 'executions', 'processors']) as { toJSON(): string[] }).toJSON();
  doc.setIn(['service', 'pipelines', 'executions', 'processors'], doc.createNode(['memory_limiter', ...processors]));
  const pipelineFile = path.join(dataDir, 'pipeline.yaml');
  writeFileSync(pipelineFile, String(doc));
  const child = spawn(process.execPath, [path.join(root, 'bin/flakehouse.js'), 'serve', '--pipeline', pipelineFile], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      FLAKEHOUSE_CLI_FROM_SOURCES: '1',
      SERVICE_DATA_DIR: dataDir,
      SERVICE_HOST: '127.0.0.1',
      SERVICE_PORT: '0',
      SERVICE_PIPELINE_THREAD: 'false',
      SERVICE_RATE_LIMIT_MAX: '0',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const { port, grpc } = await new Promise<{ port: number; grpc: string }>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`daemon did not start:\n${out.slice(-4000)}`)), 120_000);
    const check = (): void => {
      const http = /listening on http:\/\/[^\s:]+:(\d+)/.exec(out) ?? /"address":"http:\/\/[^"]+:(\d+)"/.exec(out);
      const g = /"address":"([^"]+)"[^\n]*otlp grpc listening|otlp grpc listening[^\n]*"address":"([^"]+)"/.exec(out);
      if (http && g) {
        clearTimeout(t);
        resolve({ port: Number(http[1]), grpc: g[1] ?? g[2]! });
      }
    };
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    void exited.then(() => reject(new Error(`daemon exited:\n${out.slice(-4000)}`)));
  });
  const token = readFileSync(path.join(dataDir, 'bootstrap-token'), 'utf8').trim();
  return {
    child,
    port,
    grpc,
    token,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface StreamOutcome {
  status: string;
  closedByServer: boolean;
  sent: number;
  answeredMs: number | null;
}

/** One unauthenticated Export announcing `bytes`, sent as fast as flow control lets, never the last byte. */
function hostileStream(session: http2.ClientHttp2Session, bytes: number, chunk: Buffer): { done: Promise<StreamOutcome>; stream: http2.ClientHttp2Stream } {
  const t0 = performance.now();
  const stream = session.request({ ':method': 'POST', ':path': EXPORT_PATH, 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => {});
  const outcome: StreamOutcome = { status: 'none', closedByServer: false, sent: 0, answeredMs: null };
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(bytes, 1);
  stream.write(prefix);
  const pump = () => {
    while (!stream.destroyed && outcome.sent + chunk.length < bytes) {
      outcome.sent += chunk.length;
      if (!stream.write(chunk)) return void stream.once('drain', pump);
    }
  };
  pump();
  stream.on('response', (h) => {
    outcome.status = String(h['grpc-status'] ?? h[':status']);
    outcome.answeredMs = Math.round(performance.now() - t0);
  });
  stream.resume();
  let ours = false;
  const done = new Promise<StreamOutcome>((resolve) =>
    stream.once('close', () => {
      outcome.closedByServer = !ours;
      resolve(outcome);
    }),
  );
  return {
    done,
    get stream() {
      ours = true;
      return stream;
    },
  };
}

function postIngest(port: number, token: string, i: number): Promise<number> {
  const started = Date.parse('2026-11-20T10:00:00Z') + i * 1000;
  const body = JSON.stringify({
    contractVersion: '0.1.0',
    idempotencyKey: `grpc-hostile-legit-${process.pid}-${i}`,
    resource: { ciProvider: 'github_actions', commitSha: 'abcdef1234', branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: new Date(started).toISOString() },
    executions: [{ filePath: 'src/a.test.ts', suite: 'A', title: 'works', status: 'pass', startedAt: started, durationMs: 5 }],
  });
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: '/v1/ingest', method: 'POST', agent: false, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      sessions: { type: 'string', default: '10' },
      streams: { type: 'string', default: '10' },
      'body-mib': { type: 'string', default: '8' },
      hold: { type: 'string', default: '10' },
      settle: { type: 'string', default: '10' },
      'limit-mib': { type: 'string', default: '1024' },
      root: { type: 'string' },
      label: { type: 'string' },
    },
  });
  const root = path.resolve(values.root ?? REPO_ROOT);
  const bytes = Math.round(Number(values['body-mib']) * 1024 * 1024);
  const chunk = Buffer.alloc(64 * 1024, 0x0a);
  const daemon = await startDaemon(root, Number(values['limit-mib']));
  const pid = daemon.child.pid!;
  try {
    await sleep(3000);
    const idleSamples: number[] = [];
    for (let i = 0; i < 10; i++, await sleep(100)) idleSamples.push(rssMb(pid)!);
    const idle = Math.round(idleSamples.reduce((s, m) => s + m, 0) / idleSamples.length);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid) ?? 0)), 100);

    // Legitimate ingest all along: attack, hold, settle.
    let legitOn = true;
    const legit: Record<string, number> = {};
    const legitLoop = (async () => {
      for (let i = 0; legitOn; i++) {
        const status = await postIngest(daemon.port, daemon.token, i);
        legit[status] = (legit[status] ?? 0) + 1;
        await sleep(200);
      }
    })();

    const sessions = Array.from({ length: Number(values.sessions) }, () => {
      const s = http2.connect(`http://${daemon.grpc}`);
      s.on('error', () => {});
      return s;
    });
    const calls = sessions.flatMap((s) => Array.from({ length: Number(values.streams) }, () => hostileStream(s, bytes, chunk)));
    await sleep(Number(values.hold) * 1000);
    const duringMb = rssMb(pid)!;
    const peakDuring = peak;
    const closedInHold = (await Promise.all(calls.map((c) => Promise.race([c.done, Promise.resolve(null)])))).filter((o) => o !== null).length;
    for (const c of calls) c.stream.destroy();
    for (const s of sessions) s.destroy();
    const outcomes = await Promise.all(calls.map((c) => c.done));
    await sleep(Number(values.settle) * 1000);
    legitOn = false;
    await legitLoop;
    clearInterval(sampler);
    const after = rssMb(pid)!;

    const statuses: Record<string, number> = {};
    for (const o of outcomes) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
    const answered = outcomes.map((o) => o.answeredMs).filter((ms): ms is number => ms !== null);
    const growth = peak - idle;
    const legitOk = Object.keys(legit).every((s) => s === '202');
    const pass = growth <= GROWTH_TARGET_MB && legitOk;
    const result = {
      bench: 'grpc-hostile',
      when: new Date().toISOString(),
      root: path.relative(REPO_ROOT, root) || '.',
      attack: { sessions: Number(values.sessions), streamsPerSession: Number(values.streams), announcedMib: Number(values['body-mib']), holdS: Number(values.hold), settleS: Number(values.settle), memoryLimiterMib: Number(values['limit-mib']) },
      rssMb: { idle, duringHold: duringMb, peakDuringHold: peakDuring, peak, afterSettle: after },
      growthMb: growth,
      streams: {
        statuses,
        closedByServerWithinHold: closedInHold,
        maxAnsweredMs: answered.length ? Math.max(...answered) : null,
        maxBytesSentMib: Math.round((Math.max(...outcomes.map((o) => o.sent)) / 1024 / 1024) * 100) / 100,
      },
      legitimateIngest: legit,
      target: { growthAtMostMb: GROWTH_TARGET_MB, legitimateAll202: true },
      pass,
    };
    console.log(
      `idle ${idle} MB, during ${duringMb} MB, peak ${peak} MB (+${growth}), after ${after} MB; streams ${JSON.stringify(statuses)}, ${closedInHold}/${outcomes.length} closed by the server within the hold; legitimate ingest ${JSON.stringify(legit)}: ${pass ? 'PASS' : 'FAIL'} (growth ≤ ${GROWTH_TARGET_MB} MB, every legitimate request 202)`,
    );
    console.log(`written ${writeResult(values.label ? `grpc-hostile-${values.label}` : 'grpc-hostile', result)}`);
    return pass ? 0 : 1;
  } finally {
    await daemon.stop();
  }
}

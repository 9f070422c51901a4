// `npm run bench -- door [--connections 100] [--body-mib 8] [--part 0.9] [--chunk-kib 256] [--interval-ms 100]
//                        [--hold 5] [--settle 10] [--phases anonymous,token] [--root DIR] [--label NAME]`
//
// The "stranger exhausts memory" attack of issue 28, on loopback only, against the daemon as a
// child process (its memory is its own). Per phase, on a fresh daemon and data dir:
//   `--connections` sockets each send the headers of a `--body-mib` MiB ingest body, then
//   `--part` of it in `--chunk-kib` KiB chunks every `--interval-ms` ms, hold the connection
//   `--hold` s, and close; the daemon's RSS is sampled every 100 ms: idle before, the peak, and
//   `--settle` s after the sockets closed.
//   anonymous: no token (refused from the headers, so nothing of the bodies should be held);
//   token:     the bootstrap token (bodies are read, bounded by SERVICE_MAX_CONCURRENT_BODIES and
//              the timeouts instead).
// `--root DIR` runs the daemon of another checkout (e.g. a `git worktree` of the commit before),
// `--label NAME` writes bench/results/door-NAME-latest.json instead of door-latest.json.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { writeResult } from './results.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');

interface Mem {
  rss: number;
  anon: number;
}

function memMb(pid: number): Mem | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(s)?.[1] ?? 0);
    return { rss: Math.round(kb('VmRSS') / 1024), anon: Math.round(kb('RssAnon') / 1024) };
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Daemon {
  child: ChildProcess;
  port: number;
  dataDir: string;
  stop(): Promise<void>;
}

/** `serve` of the checkout at `root`, from its sources (a worktree has no build), on loopback. */
async function startDaemon(root: string): Promise<Daemon> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-bench-door-'));
  const child = spawn(process.execPath, [path.join(root, 'bin/flakehouse.js'), 'serve'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      FLAKEHOUSE_CLI_FROM_SOURCES: '1',
      SERVICE_DATA_DIR: dataDir,
      SERVICE_HOST: '127.0.0.1',
      SERVICE_PORT: '0',
      SERVICE_PIPELINE_THREAD: 'false',
      // Rate limiting is not what this measures.
      SERVICE_RATE_LIMIT_MAX: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`daemon did not start:\n${out}`)), 120_000);
    const check = (): void => {
      const m = /listening on http:\/\/[^\s:]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    };
    child.stdout.on('data', check);
    void exited.then(() => reject(new Error(`daemon exited:\n${out}`)));
  });
  return {
    child,
    port,
    dataDir,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface Attack {
  connections: number;
  bodyBytes: number;
  sendBytes: number;
  chunkBytes: number;
  intervalMs: number;
  holdMs: number;
}

interface Outcome {
  statuses: Record<string, number>;
  closedByServer: number;
  bytesSent: number;
}

/** One socket per connection: headers, then part of the body slowly; resolves once all are closed. */
async function attack(port: number, a: Attack, authorization: string | undefined, onSent: () => void): Promise<Outcome> {
  const chunk = Buffer.alloc(a.chunkBytes, 0x20);
  const head = [
    'POST /v1/ingest HTTP/1.1',
    'host: 127.0.0.1',
    'content-type: application/json',
    `content-length: ${a.bodyBytes}`,
    ...(authorization ? [`authorization: ${authorization}`] : []),
    '',
    '',
  ].join('\r\n');
  const outcome: Outcome = { statuses: {}, closedByServer: 0, bytesSent: 0 };
  const sockets: net.Socket[] = [];
  const done: Promise<void>[] = [];
  for (let i = 0; i < a.connections; i++) {
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    let received = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', () => {});
    done.push(
      new Promise<void>((resolve) => {
        socket.on('close', () => {
          clearInterval(timer);
          const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 'none';
          outcome.statuses[status] = (outcome.statuses[status] ?? 0) + 1;
          outcome.bytesSent += sent;
          resolve();
        });
        socket.on('end', () => outcome.closedByServer++);
      }),
    );
    socket.once('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        // Never buffer on our side: a server that stopped reading gets nothing more.
        if (socket.destroyed || socket.writableLength > 0) return;
        if (sent >= a.sendBytes) return clearInterval(timer);
        const n = Math.min(a.chunkBytes, a.sendBytes - sent);
        socket.write(n === a.chunkBytes ? chunk : chunk.subarray(0, n));
        sent += n;
      }, a.intervalMs);
    });
  }
  // Sending takes sendBytes / chunkBytes intervals; then the connections are held, then closed.
  await sleep(Math.ceil(a.sendBytes / a.chunkBytes) * a.intervalMs + a.holdMs);
  onSent();
  for (const s of sockets) s.destroy();
  await Promise.all(done);
  return outcome;
}

async function phase(root: string, name: 'anonymous' | 'token', a: Attack, settleMs: number): Promise<Record<string, unknown>> {
  const daemon = await startDaemon(root);
  try {
    const pid = daemon.child.pid!;
    const token = readFileSync(path.join(daemon.dataDir, 'bootstrap-token'), 'utf8').trim();
    // Let start-up allocations settle, then take the idle as the mean of a second of samples.
    await sleep(3000);
    const idleSamples: Mem[] = [];
    for (let i = 0; i < 10; i++, await sleep(100)) idleSamples.push(memMb(pid)!);
    const idle = { rss: Math.round(idleSamples.reduce((s, m) => s + m.rss, 0) / idleSamples.length), anon: Math.round(idleSamples.reduce((s, m) => s + m.anon, 0) / idleSamples.length) };
    const peak: Mem = { ...idle };
    let peakAtClose: Mem = { ...idle };
    const sampler = setInterval(() => {
      const m = memMb(pid);
      if (m) {
        peak.rss = Math.max(peak.rss, m.rss);
        peak.anon = Math.max(peak.anon, m.anon);
      }
    }, 100);
    const t0 = performance.now();
    const outcome = await attack(daemon.port, a, name === 'token' ? `Bearer ${token}` : undefined, () => (peakAtClose = memMb(pid) ?? peakAtClose));
    const attackS = Math.round((performance.now() - t0) / 100) / 10;
    await sleep(settleMs);
    clearInterval(sampler);
    const after = memMb(pid)!;
    const growth = peak.rss - idle.rss;
    const backWithin = Math.round(((after.rss - idle.rss) / idle.rss) * 1000) / 10;
    const r = {
      idleMb: idle,
      peakMb: peak,
      beforeCloseMb: peakAtClose,
      afterCloseMb: after,
      growthMb: growth,
      afterVsIdlePct: backWithin,
      targets: { growthAtMost150Mb: growth <= 150, backWithin10Pct: backWithin <= 10 },
      attackSeconds: attackS,
      outcome,
    };
    console.log(`${name}: idle ${idle.rss} MB, peak ${peak.rss} MB (+${growth}), after close ${after.rss} MB (${backWithin >= 0 ? '+' : ''}${backWithin} % of idle); answers ${JSON.stringify(outcome.statuses)}`);
    return r;
  } finally {
    await daemon.stop();
  }
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      connections: { type: 'string', default: '100' },
      'body-mib': { type: 'string', default: '8' },
      part: { type: 'string', default: '0.9' },
      'chunk-kib': { type: 'string', default: '256' },
      'interval-ms': { type: 'string', default: '100' },
      hold: { type: 'string', default: '5' },
      settle: { type: 'string', default: '10' },
      phases: { type: 'string', default: 'anonymous,token' },
      root: { type: 'string' },
      label: { type: 'string' },
    },
  });
  const root = path.resolve(values.root ?? REPO_ROOT);
  const bodyBytes = Math.round(Number(values['body-mib']) * 1024 * 1024);
  const a: Attack = {
    connections: Number(values.connections),
    bodyBytes,
    sendBytes: Math.min(bodyBytes - 1, Math.round(bodyBytes * Number(values.part))),
    chunkBytes: Number(values['chunk-kib']) * 1024,
    intervalMs: Number(values['interval-ms']),
    holdMs: Number(values.hold) * 1000,
  };
  const phases = values.phases.split(',').filter((p): p is 'anonymous' | 'token' => p === 'anonymous' || p === 'token');
  console.log(`door bench: ${a.connections} connections × ${values['body-mib']} MiB bodies, ${Math.round(a.sendBytes / 1024)} KiB sent of each, daemon from ${root}`);
  const results: Record<string, unknown> = {};
  for (const p of phases) results[p] = await phase(root, p, a, Number(values.settle) * 1000);
  const result = {
    bench: 'door',
    at: new Date().toISOString(),
    label: values.label ?? 'current',
    machine: { cpus: cpus().length, node: process.version, note: 'loopback; the attacking client runs on the same cores' },
    params: { ...a, settleMs: Number(values.settle) * 1000 },
    phases: results,
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`written ${writeResult(values.label ? `door-${values.label}` : 'door', result)}`);
  return 0;
}

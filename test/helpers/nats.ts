// A real nats-server with JetStream on a loopback port, its store in a temp dir: what the NATS
// queue backend, the partition leases and the scale-out tests run against. Debian's `nats-server`
// package (.ci/run installs it when missing).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface NatsServer {
  /** nats://127.0.0.1:<port> */
  url: string;
  port: number;
  storeDir: string;
  /** Stops the server (SIGTERM, JetStream flushed); `start()` brings it back on the same port and store. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP: the server takes connections' bytes into its socket buffers and answers nothing. */
  pause(): void;
  /** SIGKILL (also of a paused server): whatever it had not answered is lost. `start()` brings it back. */
  kill9(): Promise<void>;
  /** Stops it and removes its store. */
  close(): Promise<void>;
}

const BINARY = process.env.NATS_SERVER_BIN ?? 'nats-server';

/** Whether the binary is on this machine (tests say so plainly when it is not). */
export function natsServerAvailable(): boolean {
  return spawnSync(BINARY, ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function startNatsServer(opts: { port?: number } = {}): Promise<NatsServer> {
  const storeDir = mkdtempSync(path.join(tmpdir(), 'fh-nats-'));
  let child: ChildProcess | undefined;
  let port = opts.port ?? -1;

  const launch = async (): Promise<void> => {
    // -p -1: a random free port, read back from the server's own log line.
    const proc = spawn(BINARY, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir, '--http_port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    port = await new Promise<number>((resolve, reject) => {
      let log = '';
      const timer = setTimeout(() => reject(new Error(`nats-server did not start within 10 s:\n${log}`)), 10_000);
      const onData = (chunk: Buffer): void => {
        log += chunk.toString('utf8');
        const m = /Listening for client connections on [^\s:]+:(\d+)/.exec(log);
        if (m && log.includes('Server is ready')) {
          clearTimeout(timer);
          proc.stderr.off('data', onData);
          proc.stderr.resume();
          proc.stdout.resume();
          resolve(Number(m[1]));
        }
      };
      proc.stderr.on('data', onData);
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`nats-server exited with ${code} before it was ready:\n${log}`));
      });
      proc.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
    });
  };

  const kill9 = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  };

  await launch();
  return {
    get url() {
      return `nats://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    storeDir,
    stop,
    start: launch,
    pause() {
      child?.kill('SIGSTOP');
    },
    kill9,
    async close() {
      await stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

// Runs `flakehouse serve` as a real child process, for crash and CLI tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
export const BIN = path.join(REPO_ROOT, 'bin/flakehouse.js');

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  kill9(): Promise<void>;
  stop(): Promise<number | null>;
}

export async function startServerProcess(env: Record<string, string>, timeoutMs = 60_000, nodeArgs: string[] = [], serveArgs: string[] = []): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...nodeArgs, BIN, 'serve', ...serveArgs], {
    // One thread unless the test asks (crash-recovery runs the default, threaded): the pipeline
    // thread re-imports src/ through tsx, seconds per start.
    env: { ...process.env, SERVICE_HOST: '127.0.0.1', SERVICE_PORT: '0', LOG_LEVEL: 'warn', SERVICE_PIPELINE_THREAD: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), timeoutMs);
    const check = (): void => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', check);
    void exited.then(() => {
      clearTimeout(t);
      reject(new Error(`server exited before listening:\n${out}`));
    });
  });
  return {
    child,
    url,
    output: () => out,
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

export function bootstrapToken(dataDir: string): string {
  return readFileSync(path.join(dataDir, 'bootstrap-token'), 'utf8').trim();
}

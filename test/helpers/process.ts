// Runs `flakehouse`: its commands in this process (runCli, main() with buffers for its output),
// or as a real child process (runCliProcess, bin/flakehouse.js, which runs the CLI build
// test/helpers/global-setup.ts makes while it is current), and `serve` for crash and CLI tests.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { main } from '../../src/main/cli.js';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
export const BIN = path.join(REPO_ROOT, 'bin/flakehouse.js');

export interface CliResult {
  /** The exit code; null when a signal ended the process. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A stream that keeps what is written to it. */
class Captured extends Writable {
  private readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer | string, encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
    done();
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/**
 * One `flakehouse` command, run in this process: the CLI's main() with the arguments, `env` (and
 * PATH, nothing else of this process's environment) and `cwd`, an empty stdin and buffers for
 * stdout and stderr. What a command does and prints is the same as in its own process, which costs
 * a Node start and the CLI's load each time (about 0.3 CPU-seconds); runCliProcess covers the
 * process itself (the bin, the build and the sources, exit codes).
 */
export async function runCli(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  const stdout = new Captured();
  const stderr = new Captured();
  const ran = main(args, { PATH: process.env.PATH ?? '', ...opts.env }, opts.cwd ?? process.cwd(), { stdin: Readable.from([]), stdout, stderr });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`flakehouse ${args.join(' ')} did not finish within ${opts.timeoutMs ?? 120_000} ms`)), opts.timeoutMs ?? 120_000);
  });
  try {
    const code = await Promise.race([ran, timedOut]);
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One `flakehouse` command as its own process. Only PATH and `env` reach it, so the outer
 * environment (CI's variables, SERVICE_*) cannot leak in. A non-zero exit is a result, not an error.
 */
export function runCliProcess(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, ...args], { cwd: opts.cwd, env: { PATH: process.env.PATH ?? '', ...opts.env }, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) return resolve({ code: 0, stdout, stderr });
      const { code, signal } = err as Error & { code?: number | string | null; signal?: string | null };
      if (typeof code === 'number') return resolve({ code, stdout, stderr });
      if (signal) return resolve({ code: null, stdout, stderr });
      reject(new Error(`could not run flakehouse ${args.join(' ')}: ${err.message}`, { cause: err }));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  kill9(): Promise<void>;
  stop(): Promise<number | null>;
}

export async function startServerProcess(
  env: Record<string, string>,
  timeoutMs = 60_000,
  nodeArgs: string[] = [],
  serveArgs: string[] = [],
  /** Sees the output so far on every chunk, before the process is listening. */
  onOutput?: (out: string) => void,
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...nodeArgs, BIN, 'serve', ...serveArgs], {
    // One thread unless the test asks (crash-recovery runs the default, threaded): a thread costs
    // a second start of the pipeline (through tsx, seconds, when the CLI build is stale).
    env: { ...process.env, SERVICE_HOST: '127.0.0.1', SERVICE_PORT: '0', LOG_LEVEL: 'warn', SERVICE_PIPELINE_THREAD: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  if (onOutput) for (const stream of [child.stdout, child.stderr]) stream.on('data', () => onOutput(out));
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

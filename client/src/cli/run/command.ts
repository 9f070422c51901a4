// The wrapped test command of `flakehouse run`: spawned with the terminal's stdio (its output
// streams as it comes), its exit code as a shell would report it (128 + n after signal n, 127 when
// it cannot be started), and SIGINT/SIGTERM/SIGHUP sent to `flakehouse run` passed on to it, so
// CI's cancel stops the tests rather than orphaning them.
import { spawn } from 'node:child_process';
import os from 'node:os';

export interface CommandResult {
  /** The code `flakehouse run` falls back to: the command's own. */
  exitCode: number;
  /** Set when a signal ended it. */
  signal?: NodeJS.Signals;
  /** Set when it could not be started (not found, not executable). */
  spawnError?: string;
  startedAt: number;
  finishedAt: number;
}

export interface CommandOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
}

const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Runs `argv`: several words are the program and its arguments, run as given (no shell, no
 * quoting to get wrong); a single word with blanks in it (`flakehouse run -- "npm test -- --ci"`)
 * is a shell command line.
 */
export function runCommand(argv: readonly string[], opts: CommandOptions): Promise<CommandResult> {
  const startedAt = Date.now();
  return new Promise((resolve) => {
    const viaShell = argv.length === 1 && /\s/.test(argv[0]!);
    const child = viaShell
      ? spawn(argv[0]!, { cwd: opts.cwd, env: opts.env, stdio: 'inherit', shell: true })
      : spawn(argv[0]!, argv.slice(1), { cwd: opts.cwd, env: opts.env, stdio: 'inherit' });
    const forward = (signal: NodeJS.Signals): void => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    for (const s of FORWARDED) process.on(s, forward);
    const done = (r: Omit<CommandResult, 'startedAt' | 'finishedAt'>): void => {
      for (const s of FORWARDED) process.off(s, forward);
      resolve({ ...r, startedAt, finishedAt: Date.now() });
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      // Only a failed start reports here without an exit; an error after the start is followed by `exit`.
      if (child.pid === undefined) done({ exitCode: err.code === 'EACCES' ? 126 : 127, spawnError: err.message });
    });
    child.once('exit', (code, signal) => {
      if (signal) done({ exitCode: 128 + (os.constants.signals[signal] ?? 0), signal });
      else done({ exitCode: code ?? 1 });
    });
  });
}

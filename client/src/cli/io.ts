// Where a command reads and writes. `flakehouse` gives it the process's own streams; a test can
// give it buffers and run the command in its own process (test/helpers/process.ts).
import type { Writable } from 'node:stream';

export interface CliIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: Writable;
  stderr: Writable;
}

let closedPipesHandled = false;

/**
 * `flakehouse flaky | head -5`: the reader closes the pipe once it has what it wants, and the next
 * write fails with EPIPE, which Node raises as an unhandled 'error' event (a stack trace and exit
 * 1). A reader of stdout that has gone away wants nothing more, so the command stops there,
 * quietly, with exit 0, as a Unix filter does; for every command, since each writes through these
 * streams. A closed stderr only loses the diagnostics: the command goes on and exits with its own
 * code (`flakehouse run`, `report --strict` keep their verdict). Other stream errors are thrown.
 */
export function exitQuietlyWhenPipeCloses(
  streams: { stdout: Writable; stderr: Writable } = { stdout: process.stdout, stderr: process.stderr },
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  streams.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    exit(0);
  });
  streams.stderr.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

export function processIo(): CliIo {
  if (!closedPipesHandled) {
    closedPipesHandled = true;
    exitQuietlyWhenPipeCloses();
  }
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}

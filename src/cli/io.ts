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
 * 1). A reader that has gone away wants nothing more, so the command stops there, quietly, with
 * exit 0, as a Unix filter does; for every command, since each writes through these streams. Other
 * stream errors are thrown as before.
 */
export function exitQuietlyWhenPipeCloses(streams: readonly Writable[] = [process.stdout, process.stderr], exit: (code: number) => void = (code) => process.exit(code)): void {
  for (const stream of streams) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') {
        exit(0);
        return;
      }
      throw err;
    });
  }
}

export function processIo(): CliIo {
  if (!closedPipesHandled) {
    closedPipesHandled = true;
    exitQuietlyWhenPipeCloses();
  }
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}

// Where a command reads and writes. `flakehouse` gives it the process's own streams; a test can
// give it buffers and run the command in its own process (test/helpers/process.ts).
import type { Writable } from 'node:stream';

export interface CliIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: Writable;
  stderr: Writable;
}

export function processIo(): CliIo {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}

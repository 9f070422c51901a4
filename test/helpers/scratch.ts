// Where the test daemons keep their engine and queue files: memory-backed /dev/shm where the
// machine has it (Linux), else the temp dir. The tests write and delete many small files (a part
// per insert, a queue commit per job); on a disk that was a sixth of the suite's CPU time in the
// kernel. A process crash (the kill -9 tests) leaves tmpfs files as it leaves disk files.
import { accessSync, constants, statSync } from 'node:fs';
import { tmpdir } from 'node:os';

function memoryBacked(): string | undefined {
  try {
    if (!statSync('/dev/shm').isDirectory()) return undefined;
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return undefined;
  }
}

export const SCRATCH_DIR = process.env.FLAKEHOUSE_TEST_SCRATCH ?? memoryBacked() ?? tmpdir();

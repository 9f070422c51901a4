// `serve` runs with glibc's mmap threshold fixed (bin/malloc-tunables.js): the launcher re-executes
// itself with it where Node can, and `npm start` and the image set it where it cannot or need not.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MALLOC_TUNABLE, withMallocTunable } from '../../bin/malloc-tunables.js';
import { BIN, REPO_ROOT } from '../helpers/process.js';

describe('withMallocTunable', () => {
  it('sets the threshold when GLIBC_TUNABLES is unset', () => {
    expect(withMallocTunable({ PATH: '/bin' })).toEqual({ PATH: '/bin', GLIBC_TUNABLES: MALLOC_TUNABLE });
  });

  it('puts it before other tunables, so an operator value given later still wins', () => {
    expect(withMallocTunable({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' })?.GLIBC_TUNABLES).toBe(`${MALLOC_TUNABLE}:glibc.malloc.arena_max=2`);
  });

  it('leaves an environment that already sets the threshold alone', () => {
    expect(withMallocTunable({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=4194304' })).toBeUndefined();
    expect(withMallocTunable({ GLIBC_TUNABLES: MALLOC_TUNABLE })).toBeUndefined();
  });
});

describe('where the setting comes from', () => {
  it('npm start and the image set the same value as the launcher', () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toContain(`GLIBC_TUNABLES=${MALLOC_TUNABLE}\${GLIBC_TUNABLES:+:$GLIBC_TUNABLES} node bin/flakehouse.js serve`);
    expect(readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8')).toMatch(new RegExp(`^\\s+GLIBC_TUNABLES=${MALLOC_TUNABLE} \\\\$`, 'm'));
  });

  it('the launcher restarts serve with it in the same process where Node has process.execve', async () => {
    // A preload that prints what each start of the process sees; `--role nope` then ends the run at
    // the settings check, after the launcher has done its part.
    const probe = 'process.stdout.write(`${process.pid} ${process.env.GLIBC_TUNABLES ?? "-"}\\n`)';
    const env = { ...process.env };
    delete env.GLIBC_TUNABLES;
    const run = await promisify(execFile)(process.execPath, [`--import=data:text/javascript,${encodeURIComponent(probe)}`, BIN, 'serve', '--role', 'nope'], { env }).then(
      () => {
        throw new Error('serve --role nope exited 0');
      },
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('SERVICE_ROLE');
    const starts = run.stdout.trim().split('\n').map((l) => l.split(' '));
    const pid = starts[0]![0];
    if (process.platform === 'linux' && typeof (process as { execve?: unknown }).execve === 'function') {
      expect(starts).toEqual([
        [pid, '-'],
        [pid, MALLOC_TUNABLE],
      ]);
    } else {
      // Node 20: no execve, so the process runs on without it (npm start sets it there).
      expect(starts).toEqual([[pid, '-']]);
    }
  });

  it('other commands are not restarted', async () => {
    const probe = 'process.stdout.write(`start ${process.env.GLIBC_TUNABLES ?? "-"}\\n`)';
    const env = { ...process.env };
    delete env.GLIBC_TUNABLES;
    const { stdout } = await promisify(execFile)(process.execPath, [`--import=data:text/javascript,${encodeURIComponent(probe)}`, BIN, '--version'], { env });
    expect(stdout.split('\n').filter((l) => l.startsWith('start '))).toEqual(['start -']);
  });
});

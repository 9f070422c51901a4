// `serve` runs with glibc's mmap threshold fixed (bin/malloc-tunables.js): the launcher re-executes
// itself with it where Node can, and `npm start` and the image set it where it cannot or need not.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { MALLOC_TUNABLE, reexecWithMallocTunable, withMallocTunable } from '../../bin/malloc-tunables.js';
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

describe('reexecWithMallocTunable, with process.execve stood in for', () => {
  const proc = process as { execve?: unknown };
  const realExecve = proc.execve;
  const realTunables = process.env.GLIBC_TUNABLES;
  afterEach(() => {
    proc.execve = realExecve;
    if (realTunables === undefined) delete process.env.GLIBC_TUNABLES;
    else process.env.GLIBC_TUNABLES = realTunables;
  });

  it.runIf(process.platform === 'linux')('hands execve the same node, flags and arguments, with the setting', () => {
    delete process.env.GLIBC_TUNABLES;
    const calls: unknown[][] = [];
    proc.execve = (...args: unknown[]) => calls.push(args);
    reexecWithMallocTunable(['/usr/bin/node', '/app/bin/flakehouse.js', 'serve', '--role', 'worker']);
    expect(calls).toHaveLength(1);
    const [file, args, env] = calls[0] as [string, string[], NodeJS.ProcessEnv];
    expect(file).toBe(process.execPath);
    expect(args).toEqual([process.execPath, ...process.execArgv, '/app/bin/flakehouse.js', 'serve', '--role', 'worker']);
    expect(env.GLIBC_TUNABLES).toBe(MALLOC_TUNABLE);
  });

  it.runIf(process.platform === 'linux')('when the exec fails, warns and lets serve run on', async () => {
    delete process.env.GLIBC_TUNABLES;
    proc.execve = () => {
      throw new Error('E2BIG: argument list too long');
    };
    const warned = new Promise<Error>((resolve) => process.once('warning', resolve));
    expect(() => reexecWithMallocTunable(['/usr/bin/node', '/app/bin/flakehouse.js', 'serve'])).not.toThrow();
    expect((await warned).message).toContain('E2BIG');
  });

  it('leaves other commands and a set threshold alone', () => {
    const calls: unknown[] = [];
    proc.execve = (...args: unknown[]) => calls.push(args);
    delete process.env.GLIBC_TUNABLES;
    reexecWithMallocTunable(['/usr/bin/node', '/app/bin/flakehouse.js', 'report', 'junit.xml']);
    process.env.GLIBC_TUNABLES = 'glibc.malloc.mmap_threshold=4194304';
    reexecWithMallocTunable(['/usr/bin/node', '/app/bin/flakehouse.js', 'serve']);
    expect(calls).toEqual([]);
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

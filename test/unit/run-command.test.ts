// `flakehouse run`'s building blocks: the wrapped command's exit code as a shell reports it
// (client/src/cli/run/command.ts, real processes), which report files count as this command's, and how
// several result sources become one run (client/src/cli/run/results.ts).
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRunArgs } from '../../client/src/cli/run.js';
import { runCommand } from '../../client/src/cli/run/command.js';
import { collectResults, mergeRuns, writtenSince } from '../../client/src/cli/run/results.js';
import { handOffRun, RUN_HANDOFF_ENV } from '../../client/src/reporter/run-handoff.js';
import type { ExecutionInput } from '../../client/src/contract/batch.js';

const env = { PATH: process.env.PATH ?? '' };

describe('runCommand', () => {
  it("returns the command's code, 128 + n after signal n, 127 when it cannot start; one word with blanks goes through the shell", async () => {
    expect((await runCommand([process.execPath, '-e', 'process.exit(5)'], { cwd: tmpdir(), env })).exitCode).toBe(5);
    const killed = await runCommand([process.execPath, '-e', 'process.kill(process.pid, "SIGTERM"); setTimeout(() => {}, 5000)'], { cwd: tmpdir(), env });
    expect([killed.exitCode, killed.signal]).toEqual([143, 'SIGTERM']);
    const missing = await runCommand(['no-such-command-fh-unit'], { cwd: tmpdir(), env });
    expect(missing.exitCode).toBe(127);
    expect(missing.spawnError).toContain('ENOENT');
    expect((await runCommand(['exit 6'], { cwd: tmpdir(), env })).exitCode).toBe(6);
  });
});

describe('parseRunArgs', () => {
  it('takes options before `--` and the command after it, as given', () => {
    expect(parseRunArgs(['--junit', 'a.xml', '--junit', 'b/**/*.xml', '--', 'npm', 'test', '--', '--ci'], '/repo')).toEqual({
      junit: ['a.xml', 'b/**/*.xml'],
      attach: [],
      rootDir: '/repo',
      command: ['npm', 'test', '--', '--ci'],
      verify: { verifyFix: false, fixRuns: 20, budgetMs: 300_000, maxNew: 50 },
    });
    // --verify-new / --verify-fix and their bounds; counts must be whole numbers.
    expect(
      parseRunArgs(['--verify-new', '10', '--verify-budget', '60', '--verify-max-new', '5', '--verify-fix', '--verify-fix-runs', '7', '--rerun', 'node t.js {file} {name}', '--base-branch', 'dev', '--', 'x'], '/repo').verify,
    ).toEqual({ verifyNew: 10, verifyFix: true, fixRuns: 7, budgetMs: 60_000, maxNew: 5, rerun: 'node t.js {file} {name}', baseBranch: 'dev' });
    expect(() => parseRunArgs(['--verify-new', 'ten', '--', 'x'], '/repo')).toThrow(/--verify-new must be a whole number/);
    expect(() => parseRunArgs(['--verify-new', '0', '--', 'x'], '/repo')).toThrow(/at least 1/);
    expect(() => parseRunArgs(['--rerun', ' ', '--', 'x'], '/repo')).toThrow(/--rerun needs a command template/);
    expect(() => parseRunArgs(['npm', 'test'], '/repo')).toThrow(/after `--`/);
    expect(() => parseRunArgs(['--junit', 'a.xml', '--'], '/repo')).toThrow(/no test command/);
    expect(() => parseRunArgs(['--bogus', '--', 'x'], '/repo')).toThrow(/bogus/);
  });
});

describe('collecting results', () => {
  const exec = (title: string, extra: Partial<ExecutionInput> = {}): ExecutionInput => ({ filePath: 'a.test.ts', suite: '', title, status: 'fail', attempt: 1, startedAt: 1_800_000_000_000, durationMs: 1, ...extra });

  it('counts a file written in the second the command started (coarse file times), not one before it', () => {
    expect(writtenSince(10_000, 10_400)).toBe(true);
    expect(writtenSince(10_500, 10_400)).toBe(true);
    expect(writtenSince(9_999, 10_400)).toBe(false);
  });

  it('joins reporter hand-offs and fresh JUnit files into one run, retry links re-based; stale files left out', async () => {
    const dir = fs.mkdtempSync(path.join(tmpdir(), 'fh-run-collect-'));
    const handoff = path.join(dir, 'handoff');
    fs.mkdirSync(handoff);
    const startedAt = Date.now();
    expect(handOffRun({ executions: [exec('a'), exec('a', { attempt: 2, retryOfIndex: 0, status: 'flaky' })], startedAt, finishedAt: startedAt + 5 }, { [RUN_HANDOFF_ENV]: handoff })).toBe(true);
    await new Promise((r) => setTimeout(r, 5)); // hand-offs are read in the order they were written
    expect(handOffRun({ executions: [exec('b'), exec('b', { attempt: 2, retryOfIndex: 0 })], startedAt: startedAt - 10, finishedAt: startedAt + 20 }, { [RUN_HANDOFF_ENV]: handoff })).toBe(true);
    expect(handOffRun({ executions: [], startedAt }, {})).toBe(false);
    fs.writeFileSync(path.join(dir, 'fresh.xml'), '<testsuite name="s"><testcase classname="s" name="c"/></testsuite>');
    fs.writeFileSync(path.join(dir, 'stale.xml'), '<testsuite name="s"><testcase classname="s" name="old"/></testsuite>');
    const old = new Date(startedAt - 3_600_000);
    fs.utimesSync(path.join(dir, 'stale.xml'), old, old);
    const logged: string[] = [];
    const { run, sources } = collectResults({ cwd: dir, rootDir: dir, junit: ['*.xml'], handoffDir: handoff, startedAt, log: (l) => logged.push(l) });
    expect(run!.executions.map((e) => [e.title, e.retryOfIndex])).toEqual([
      ['a', undefined],
      ['a', 0],
      ['b', undefined],
      ['b', 2],
      ['c', undefined],
    ]);
    expect(sources).toEqual(['2 reporter run(s)', 'fresh.xml']);
    expect(logged.join('\n')).toContain('stale.xml was not written by this command');
    expect(run!.startedAt).toBe(startedAt - 10);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('has no run without results', () => {
    expect(mergeRuns([], '/x')).toBeUndefined();
  });
});

// `flakehouse flaky | head -5` (issue 39, defect 7): the reader closes the pipe early, and the CLI
// used to die on the next write with an unhandled EPIPE (a stack trace, exit 1). Every command now
// exits quietly with 0 when its output is no longer read (client/src/cli/io.ts), checked on real processes:
// the issue's own pipeline under bash with pipefail against a real daemon, and commands whose stdout
// is closed before they write a byte.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { BIN } from '../helpers/process.js';

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function collect(child: ReturnType<typeof spawn>): Promise<Exit> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let td: TestDaemon;

beforeAll(async () => {
  td = await startTestDaemon();
  // Enough tests that the board printed as a table is far larger than a pipe's buffer (64 KiB).
  const executions = Array.from({ length: 1500 }, (_, i) => ({
    filePath: `src/area-${i % 30}/module-${i}.test.ts`,
    suite: `suite ${i % 30}`,
    title: `does the thing number ${i} without fuss`,
    status: 'pass',
    startedAt: Date.now() - 60_000 + i,
    durationMs: 5,
  }));
  await td.ingest(nativeBatch({ key: 'closed-pipe-1', executions }));
}, 120_000);

afterAll(async () => td?.close());

const env = (): Record<string, string> => ({ PATH: process.env.PATH ?? '', SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token, COLUMNS: '120' });

describe('the CLI when its output stops being read', () => {
  it('`flakehouse flaky --state all | head -5` prints 5 lines and exits 0, with nothing on stderr (bash, pipefail)', async () => {
    const ran = await collect(
      spawn('bash', ['-c', `set -o pipefail; "${process.execPath}" "${BIN}" flaky --state all --limit 1500 | head -5`], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    expect(ran.stdout.split('\n').filter(Boolean)).toHaveLength(5);
  }, 60_000);

  const commands = [['--help'], ['--version'], ['config', '--json'], ['flaky', '--state', 'all', '--json']];
  it.each(commands.map((args) => [args.join(' '), args] as const))(
    '`flakehouse %s` with its stdout closed before it writes exits 0 quietly',
    async (_name, args) => {
      const child = spawn(process.execPath, [BIN, ...args], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.destroy();
      const ran = await collect(child);
      expect(ran.stderr).toBe('');
      expect(ran.code).toBe(0);
    },
    60_000,
  );

  it('a closed stderr loses only the diagnostics: the command exits with its own code', async () => {
    const child = spawn(process.execPath, [BIN, 'flaky', '--state', 'sideways'], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stderr.destroy();
    const ran = await collect(child);
    // A usage error: exit 2, as with stderr open.
    expect(ran.code).toBe(2);
  }, 60_000);
});

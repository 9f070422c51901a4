// `flakehouse split` as CI runs it: three real CLI processes, one per shard, against a real daemon
// with a history where one file takes 10× the others; the build id comes from the CI's run id. Each
// prints only its files (relative to where it runs, though the server knows them relative to the
// repository root); together they are disjoint and cover every file, and the heavy file has a shard
// of its own. With the server down each shard splits by name, warns, and exits 0.
import fs from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { runCli, runCliProcess } from '../helpers/process.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'fh-e2e-split-'));
const app = path.join(root, 'packages/app');
const NAMES = [...Array.from({ length: 11 }, (_, i) => `tests/unit${String(i).padStart(2, '0')}.test.ts`), 'tests/heavy.test.ts'];
let td: TestDaemon;

beforeAll(async () => {
  fs.mkdirSync(path.join(root, '.git'), { recursive: true });
  for (const n of NAMES) {
    fs.mkdirSync(path.dirname(path.join(app, n)), { recursive: true });
    fs.writeFileSync(path.join(app, n), '// a test file\n');
  }
  fs.writeFileSync(path.join(app, 'tests/helpers.ts'), '// not a test\n');
  td = await startTestDaemon();
  // Stored as the reporters store them: relative to the repository root.
  const started = Date.now() - 3_600_000;
  await td.ingest(
    nativeBatch({
      run: { status: 'passed', startedAt: new Date(started).toISOString() },
      executions: NAMES.map((n, i) => ({
        filePath: `packages/app/${n}`,
        suite: n,
        title: 'works',
        status: 'pass',
        startedAt: started + i,
        durationMs: n.includes('heavy') ? 10_000 : 1_000,
      })),
    }),
  );
}, 60_000);

afterAll(async () => {
  await td?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const p = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return p;
}

const lines = (stdout: string): string[] => stdout.split('\n').filter(Boolean);

function expectDisjointCover(shards: string[][]): void {
  const all = shards.flat();
  expect(new Set(all).size).toBe(all.length);
  expect([...all].sort()).toEqual([...NAMES].sort());
}

describe('flakehouse split', () => {
  it('three shards of one CI run print disjoint files covering the suite, balanced by history', async () => {
    const env = { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token, GITLAB_CI: 'true', CI_PIPELINE_ID: '4711' };
    const results = await Promise.all([0, 1, 2].map((i) => runCliProcess(['split', '--total', '3', '--index', String(i), 'tests/**/*.test.ts'], { cwd: app, env })));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const shards = results.map((r) => lines(r.stdout));
    expectDisjointCover(shards);
    // 21 s of work: the heavy file (10 s) alone; the eleven others 5 and 6 on the other two.
    expect(shards.find((s) => s.includes('tests/heavy.test.ts'))).toEqual(['tests/heavy.test.ts']);
    expect(shards.map((s) => s.length).sort()).toEqual([1, 5, 6]);
    const stderr = results.map((r) => r.stderr).join('');
    expect(stderr).toContain('a new plan for build gitlab_ci:4711, stored for its other shards');
    expect(stderr.match(/the plan an earlier shard of build gitlab_ci:4711 stored/g)).toHaveLength(2);
    expect(stderr).not.toContain('warning');
    expect(stderr).not.toContain(td.token);

    // The build's plan is stored: a re-run of shard 1 (a retried job) prints the same files.
    const again = await runCli(['split', '--total', '3', '--index', '1', 'tests/**/*.test.ts'], { cwd: app, env });
    expect(again.code, again.stderr).toBe(0);
    expect(lines(again.stdout)).toEqual(shards[1]);
  }, 120_000);

  it('splits by name with a warning and exits 0 when the server is down', async () => {
    const env = { SERVICE_ENDPOINT: `http://127.0.0.1:${await freePort()}`, SERVICE_TOKEN: td.token };
    const results = await Promise.all(
      [0, 1, 2].map((i) => runCliProcess(['split', '--total', '3', '--index', String(i), '--build-id', 'down-1', 'tests/**/*.test.ts', 'tests/missing.test.ts'], { cwd: app, env })),
    );
    for (const r of results) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/warning: cannot reach Flakehouse at http:\/\/127\.0\.0\.1:\d+ \(.*ECONNREFUSED.*\); splitting by file name instead/);
      expect(r.stderr).toContain('warning: "tests/missing.test.ts" matched no file');
    }
    const shards = results.map((r) => lines(r.stdout));
    expectDisjointCover(shards);
    // By name: the sorted files dealt round-robin.
    expect(shards.map((s) => s.length)).toEqual([4, 4, 4]);
    expect(shards[0]).toEqual(['tests/heavy.test.ts', 'tests/unit02.test.ts', 'tests/unit05.test.ts', 'tests/unit08.test.ts']);
  }, 120_000);

  it('refuses bad flags with exit 2; a refusing server is a warning, not a failure', async () => {
    const env = { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: 'fh_not_a_real_token_0000000000000000000000000000000' };
    const outOfRange = await runCli(['split', '--total', '3', '--index', '3', 'tests/**/*.test.ts'], { cwd: app, env });
    expect(outOfRange.code).toBe(2);
    expect(outOfRange.stderr).toContain('--index must be an integer from 0 to 2');
    expect((await runCli(['split', '--index', '0', 'x'], { cwd: app, env })).code).toBe(2);
    expect((await runCli(['split', '--total', '2', '--index', '0', 'nothing/*.ts'], { cwd: app, env })).code).toBe(2);

    const refused = await runCli(['split', '--total', '2', '--index', '1', '--build-id', 'b', 'tests/**/*.test.ts'], { cwd: app, env });
    expect(refused.code, refused.stderr).toBe(0);
    expect(refused.stderr).toContain('warning: Flakehouse refused the split (401 unauthorized');
    expect(lines(refused.stdout)).toHaveLength(6);
  }, 60_000);
});

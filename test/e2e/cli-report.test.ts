// `flakehouse report` as CI runs it (in-process) against a real `flakehouse serve` process.
// The server is down for the first report (exit 0, a warning, the run buffered; --strict exits 1),
// comes back at the same address, and the next report replays the buffered run exactly once and
// syncs CODEOWNERS and the service.yml channels. `config --json` shows the resolved reporter.
import fs from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bootstrapToken, runCli, startServerProcess, type CliResult, type ServerProcess } from '../helpers/process.js';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/junit');
const root = fs.mkdtempSync(path.join(tmpdir(), 'fh-e2e-report-'));
const dataDir = path.join(root, 'data');
const repo = path.join(root, 'repo');
let server: ServerProcess | undefined;

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

/**
 * A free port below the kernel's ephemeral range (32768–60999 on Linux), where no other test's
 * listen(0) is given a port: the server is down for a while and comes back at the same address,
 * and a port from the ephemeral range was once taken by another test's daemon in between (the
 * report then got that daemon's 401 instead of a refused connection).
 */
async function freePort(): Promise<number> {
  for (;;) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    const srv = net.createServer();
    const bound = await new Promise<boolean>((r) => {
      srv.once('error', () => r(false));
      srv.listen(candidate, '127.0.0.1', () => r(true));
    });
    if (bound) {
      await new Promise<void>((r) => srv.close(() => r()));
      return candidate;
    }
  }
}

const cli = (args: string[], env: Record<string, string>): Promise<CliResult> => runCli(args, { cwd: repo, env, timeoutMs: 120_000 });

async function runsOn(url: string, token: string, branch: string): Promise<any[]> {
  const res = await fetch(`${url}/v1/runs?branch=${encodeURIComponent(branch)}`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { items: any[] }).items;
}

async function waitRuns(url: string, token: string, branch: string): Promise<any[]> {
  // A generous ceiling: a busy machine is slow, not wrong.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const items = await runsOn(url, token, branch);
    if (items.length > 0) return items;
    if (Date.now() > deadline) throw new Error(`no run on ${branch} within 60 s`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('flakehouse report', () => {
  it('buffers while the server is down, replays once when it is back, syncs owners and channels', async () => {
    const port = await freePort();
    const serverEnv = { SERVICE_DATA_DIR: dataDir, SERVICE_PORT: String(port) };
    server = await startServerProcess(serverEnv);
    const token = bootstrapToken(dataDir);
    await server.stop();

    fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
    fs.mkdirSync(path.join(repo, 'reports/unit'), { recursive: true });
    fs.copyFileSync(path.join(FIXTURES, 'dorny/jest-junit.xml'), path.join(repo, 'reports/unit/jest.xml'));
    fs.copyFileSync(path.join(FIXTURES, 'mikepenz/maven_surefire_flaky__surefire-report.xml'), path.join(repo, 'reports/surefire.xml'));
    fs.writeFileSync(path.join(repo, 'reports/corrupt.xml'), '<testsuite><testcase name="a">');
    fs.writeFileSync(path.join(repo, 'CODEOWNERS'), '/__tests__/ @acme/web\n');
    fs.writeFileSync(
      path.join(repo, 'service.yml'),
      `project: default\nendpoint: http://127.0.0.1:${port}\nnotifications:\n  channels:\n    - kind: slack\n      target: https://hooks.slack.com/services/T/B/e2e\n`,
    );
    const env = { SERVICE_TOKEN: token, SERVICE_BUFFER_DIR: path.join(root, 'buffer'), SERVICE_COMMIT_SHA: 'abcdef1' };

    // Server down.
    const down = await cli(['report', 'reports/**/*.xml'], { ...env, SERVICE_BRANCH: 'e2e-outage' });
    expect(down.code, down.stderr).toBe(0);
    expect(down.stderr).toContain('flakehouse: skipped reports/corrupt.xml: not valid JUnit XML');
    expect(down.stderr).toContain('flakehouse: read 8 executions from 2 report(s)');
    expect(down.stderr).toMatch(/flakehouse: warning: results not delivered to http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED.* after 4 tries\); saved to .*\.run\.json and sent again by the next `flakehouse report`/);
    expect(down.stderr).not.toContain(token);
    expect(fs.readdirSync(path.join(root, 'buffer')).filter((f) => f.endsWith('.run.json'))).toHaveLength(1);

    const strict = await cli(['report', '--strict', 'reports/unit/jest.xml'], { ...env, SERVICE_BRANCH: 'e2e-strict', SERVICE_BUFFER_DIR: path.join(root, 'buffer-strict') });
    expect(strict.code, strict.stderr).toBe(1);
    expect(strict.stderr).toContain('warning: results not delivered');

    // Server back at the same address.
    server = await startServerProcess(serverEnv);
    expect(server.url).toBe(`http://127.0.0.1:${port}`);
    const up = await cli(['report', '--json', 'reports/unit'], { ...env, SERVICE_BRANCH: 'e2e-back' });
    expect(up.code, up.stderr).toBe(0);
    const result = JSON.parse(up.stdout);
    expect(result).toMatchObject({ delivered: true, buffered: false, replayed: 1, acceptedExecutions: 6, deduplicated: false });
    expect(result.files).toEqual([{ file: 'reports/unit/jest.xml', executions: 6 }]);
    expect(up.stderr).toContain('flakehouse: replayed a buffered run');
    expect(up.stderr).toContain('flakehouse: synced owners from CODEOWNERS');
    expect(up.stderr).toContain('flakehouse: synced 1 notification channel(s) from service.yml');
    expect(fs.readdirSync(path.join(root, 'buffer')).filter((f) => f.includes('.run.json'))).toEqual([]);

    const [outage] = await waitRuns(server.url, token, 'e2e-outage');
    expect(outage).toMatchObject({ commitSha: 'abcdef1', ciProvider: 'local', status: 'failed', counts: { total: 7, passed: 1, failed: 4, skipped: 1, flaky: 1 } });
    await waitRuns(server.url, token, 'e2e-back');

    // Nothing left to replay: a third report leaves the outage run alone.
    const again = await cli(['report', '--json', 'reports/unit/jest.xml'], { ...env, SERVICE_BRANCH: 'e2e-again' });
    expect(JSON.parse(again.stdout)).toMatchObject({ delivered: true, replayed: 0 });
    await waitRuns(server.url, token, 'e2e-again');
    expect(await runsOn(server.url, token, 'e2e-outage')).toHaveLength(1);

    const channels = await fetch(`${server.url}/v1/notifications/channels`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await channels.json()) as { items: any[] }).items.map((c) => [c.source, c.kind, c.target])).toEqual([['config', 'slack', 'https://hooks.slack.com/services/T/B/e2e']]);
  }, 240_000);

  it('config --json shows the resolved reporter and CI detection, never the token', async () => {
    const secret = 'fh_0123456789abcdef0123456789abcdef0123456789abcdef';
    const res = await cli(['config', '--json'], {
      SERVICE_TOKEN: secret,
      SERVICE_TRANSPORT: 'json',
      SERVICE_COMPRESSION: 'gzip',
      SERVICE_SAMPLE_RATE: '0.5',
      SERVICE_SHARD_INDEX: '1',
      SERVICE_SHARD_TOTAL: '2',
      SERVICE_BUFFER_DIR: 'buf',
      GITHUB_ACTIONS: 'true',
      GITHUB_SHA: '3f2c1ab9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3',
      GITHUB_REF_NAME: 'main',
      GITHUB_EVENT_NAME: 'push',
      GITHUB_RUN_ID: '77',
      GITHUB_REPOSITORY: 'acme/shop',
    });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).not.toContain(secret.slice(10));
    const out = JSON.parse(res.stdout);
    expect(out.reporter).toMatchObject({
      endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      endpointSource: 'file',
      project: 'default',
      tokenPresent: true,
      transport: 'json',
      compression: 'gzip',
      bufferDir: path.join(repo, 'buf'),
      sampleRate: 0.5,
      shard: { index: 1, total: 2 },
      idempotencyKeySource: 'trace id',
      configChannels: 1,
    });
    expect(out.ci).toEqual({
      provider: 'github_actions',
      commitSha: '3f2c1ab9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3',
      branch: 'main',
      runId: '77',
      jobUrl: 'https://github.com/acme/shop/actions/runs/77',
      trigger: 'push',
      repository: 'acme/shop',
    });
  }, 60_000);
});

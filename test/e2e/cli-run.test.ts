// `flakehouse run` as CI runs it: the real CLI process (bin/flakehouse.js) wrapping a real test
// command against a real daemon. A command whose only failure is quarantined exits 0, says what
// it muted, and its failure is stored marked quarantined; a real failure, an unreachable server
// or a command without results keep the command's own code; a passing command stays at 0. The
// Jest reporter hands its run to the wrapper (one run stored, not two) and, outside the wrapper,
// names the failures that are quarantined.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { runCliProcess, type CliResult } from '../helpers/process.js';
import { jestSample } from '../helpers/jest-sample.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'fh-e2e-run-'));
const repo = path.join(root, 'repo');
let td: TestDaemon;

beforeAll(async () => {
  // Polling the read API counts against the per-project rate limit; this file is not about it.
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  fs.mkdirSync(path.join(repo, 'reports'), { recursive: true });
}, 60_000);

afterAll(async () => {
  await td?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

interface Case {
  name: string;
  fail?: boolean;
}

/** A `node -e` script that prints a line, writes a JUnit report of `cases` to `file` and exits with `code`. */
function testScript(file: string | null, cases: Case[], code: number): string {
  const xml =
    `<?xml version="1.0" encoding="UTF-8"?><testsuite name="cart" tests="${cases.length}">` +
    cases.map((c) => `<testcase classname="cart" name="${c.name}" file="test/cart.test.js" time="0.01">${c.fail ? `<failure message="${c.name} broke">Error: ${c.name} broke</failure>` : ''}</testcase>`).join('') +
    '</testsuite>';
  const write = file ? `require('fs').writeFileSync(${JSON.stringify(file)}, ${JSON.stringify(xml)});` : '';
  return `console.log('output of the tests, streamed'); ${write} process.exit(${code});`;
}

function env(branch: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SERVICE_ENDPOINT: td.url,
    SERVICE_TOKEN: td.token,
    SERVICE_BUFFER_DIR: path.join(root, 'buffer'),
    SERVICE_COMMIT_SHA: 'abcdef1',
    SERVICE_BRANCH: branch,
    ...extra,
  };
}

const flakehouse = (args: string[], e: Record<string, string>, cwd = repo): Promise<CliResult> => runCliProcess(args, { cwd, env: e, timeoutMs: 120_000 });

/** `flakehouse run --junit reports/<branch>.xml -- node -e <script>`. */
function wrapped(branch: string, cases: Case[] | null, code: number, extra: Record<string, string> = {}): Promise<CliResult> {
  const report = `reports/${branch}.xml`;
  return flakehouse(['run', '--junit', report, '--', process.execPath, '-e', testScript(cases ? path.join(repo, report) : null, cases ?? [], code)], env(branch, extra));
}

async function runOf(branch: string): Promise<any> {
  const items = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
    return res.status === 200 && res.json.items.length > 0 ? res.json.items : undefined;
  }, 30_000);
  expect(items).toHaveLength(1);
  return (await td.request('GET', `/v1/runs/${items[0].id}`)).json;
}

async function quarantine(testIdentityId: string, reason: string): Promise<void> {
  const res = await td.request('POST', `/v1/tests/${testIdentityId}/quarantine`, { body: { decision: 'quarantined', reason } });
  expect(res.status).toBe(200);
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const p = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return p;
}

describe('flakehouse run', () => {
  it('(e) a passing command exits 0 and is reported, even with a failing test in its report', async () => {
    const res = await wrapped('run-e', [{ name: 'adds an item' }, { name: 'flaky one', fail: true }, { name: 'real one' }], 0);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('output of the tests, streamed');
    expect(res.stderr).toContain('read 3 executions from reports/run-e.xml');
    const run = await runOf('run-e');
    expect(run.executions.map((e: any) => [e.title, e.status, e.quarantined]).sort()).toEqual([
      ['adds an item', 'pass', false],
      ['flaky one', 'fail', false],
      ['real one', 'pass', false],
    ]);
    await quarantine(run.executions.find((e: any) => e.title === 'flaky one').testIdentityId, 'flaky on CI');
  }, 120_000);

  it('(a) a command whose only failure is quarantined exits 0, prints it as muted, stores it marked', async () => {
    const res = await wrapped('run-a', [{ name: 'adds an item' }, { name: 'flaky one', fail: true }, { name: 'real one' }], 1);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('output of the tests, streamed');
    expect(res.stderr).toMatch(/the command failed \(exit 1\) only on quarantined tests: exiting 0; 1 failure\(s\) muted/);
    expect(res.stderr).toContain('muted: test/cart.test.js > cart > flaky one (quarantined: flaky on CI)');
    const run = await runOf('run-a');
    expect(run.status).toBe('failed');
    expect(run.executions.map((e: any) => [e.title, e.status, e.quarantined]).sort()).toEqual([
      ['adds an item', 'pass', false],
      ['flaky one', 'fail', true],
      ['real one', 'pass', false],
    ]);
  }, 120_000);

  it('(b) a real failure beside the quarantined one keeps the command code, and nothing is marked', async () => {
    const res = await wrapped('run-b', [{ name: 'adds an item' }, { name: 'flaky one', fail: true }, { name: 'real one', fail: true }], 1);
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toContain("1 failing test(s) are not quarantined (1 quarantined failure(s) beside them): exiting with the command's code 1");
    expect(res.stderr).toContain('failed: test/cart.test.js > cart > real one');
    expect(res.stderr).not.toContain('muted:');
    const run = await runOf('run-b');
    expect(run.executions.filter((e: any) => e.quarantined)).toEqual([]);
    // Any other code comes through as it is.
    const seven = await wrapped('run-b7', [{ name: 'real one', fail: true }], 7);
    expect(seven.code, seven.stderr).toBe(7);
  }, 120_000);

  it('(d) a failing command without results keeps its code, also when an old report is lying around', async () => {
    const stale = path.join(repo, 'reports/run-d.xml');
    fs.writeFileSync(stale, '<testsuite name="cart"><testcase classname="cart" name="flaky one" file="test/cart.test.js"><failure message="old"/></testcase></testsuite>');
    const old = new Date(Date.now() - 3_600_000);
    fs.utimesSync(stale, old, old);
    const res = await wrapped('run-d', null, 4);
    expect(res.code, res.stderr).toBe(4);
    expect(res.stderr).toContain('was not written by this command');
    expect(res.stderr).toContain('the command failed (exit 4) and left no test results');
    // A command that cannot even start: the shell's 127.
    const missing = await flakehouse(['run', '--junit', 'reports/none.xml', '--', 'no-such-command-fh'], env('run-d2'));
    expect(missing.code, missing.stderr).toBe(127);
    expect(missing.stderr).toContain('cannot start "no-such-command-fh"');
    expect((await td.request('GET', '/v1/runs?branch=run-d')).json.items).toEqual([]);
  }, 120_000);

  it('refuses a command line without `--` (usage, exit 2)', async () => {
    const res = await flakehouse(['run', '--junit', 'x.xml', 'npm', 'test'], env('run-usage'));
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('put the test command after `--`');
  }, 60_000);

  it('the Jest reporter hands its run to the wrapper; outside it, names the quarantined failures', async () => {
    const { dir: sample, command: jest } = jestSample(root);
    const direct = (branch: string): Promise<{ code: number | null; output: string }> =>
      new Promise((resolve, reject) => {
        const child = spawn(jest[0]!, jest.slice(1), { cwd: sample, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root, ...env(branch) }, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (d: Buffer) => (output += d.toString()));
        child.stderr.on('data', (d: Buffer) => (output += d.toString()));
        child.once('error', reject);
        child.once('close', (code) => resolve({ code, output }));
      });

    // Jest alone: its hard failure ('computes tax') fails the command; the reporter sends the run.
    const first = await direct('jest-direct-1');
    expect(first.code, first.output).toBe(1);
    expect(first.output).toContain('none of the 1 failing test(s) is quarantined');
    const tax = (await runOf('jest-direct-1')).executions.find((e: any) => e.title === 'computes tax');
    await quarantine(tax.testIdentityId, 'tax service flaky');
    const second = await direct('jest-direct-2');
    expect(second.code).toBe(1);
    expect(second.output).toContain('1 of 1 failing test(s) are quarantined and will be muted under `flakehouse run`');
    expect(second.output).toContain('muted: cart.spec.cjs > cart > computes tax (quarantined: tax service flaky)');

    // Wrapped: the reporter hands over, the wrapper mutes and sends one run with the failures marked.
    const res = await flakehouse(['run', '--', ...jest], { HOME: process.env.HOME ?? root, ...env('jest-wrapped') }, sample);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain('from 1 reporter run(s)');
    expect(res.stderr).toContain('muted: cart.spec.cjs > cart > computes tax');
    const run = await runOf('jest-wrapped');
    const marked = run.executions.filter((e: any) => e.quarantined).map((e: any) => [e.title, e.attempt, e.status]);
    expect(marked).toEqual([
      ['computes tax', 1, 'fail'],
      ['computes tax', 2, 'fail'],
      ['computes tax', 3, 'fail'],
    ]);
    // The flaky coupon test's failed first attempt is not a failing test: not marked.
    expect(run.executions.filter((e: any) => e.title === 'applies a coupon').map((e: any) => e.quarantined)).toEqual([false, false]);
  }, 180_000);

  it('(c) the server unreachable: the command code, with a warning; the cached list is only shown', async () => {
    // Nothing listens on this port, and nothing was ever cached for it.
    const port = await freePort();
    const nowhere = await wrapped('run-c', [{ name: 'flaky one', fail: true }], 3, { SERVICE_ENDPOINT: `http://127.0.0.1:${port}` });
    expect(nowhere.code, nowhere.stderr).toBe(3);
    expect(nowhere.stderr).toMatch(/warning: failures cannot be muted without the server's quarantine list \(cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
    expect(nowhere.stderr).toContain("exiting with the command's code 3");
    expect(nowhere.stderr).toContain('warning: results not delivered');

    // The server refuses the token: the command code, with the server's answer.
    const refused = await wrapped('run-c1', [{ name: 'flaky one', fail: true }], 3, { SERVICE_TOKEN: 'fh_not-a-token-of-this-server' });
    expect(refused.code, refused.stderr).toBe(3);
    expect(refused.stderr).toMatch(/warning: failures cannot be muted without the server's quarantine list \(http:\/\/127\.0\.0\.1:\d+ refused GET \/v1\/quarantine: 401/);
    expect(refused.stderr).toContain('warning: results refused by');

    // The server of the earlier runs goes away: its list, cached by them, is shown but mutes nothing.
    await td.stop();
    const down = await wrapped('run-c2', [{ name: 'flaky one', fail: true }], 3);
    expect(down.code, down.stderr).toBe(3);
    expect(down.stderr).toContain("warning: failures cannot be muted without the server's quarantine list");
    expect(down.stderr).toMatch(/by the list cached at \S+, 1 of 1 failing test\(s\) are quarantined\n {2}quarantined: test\/cart\.test\.js > cart > flaky one/);
  }, 120_000);
});

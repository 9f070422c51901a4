// A developer's machine (issue 39): the real CLI and the real Jest reporter, each its own process
// with a clean environment (PATH and HOME only: no CI variables, no SERVICE_*). With nothing set up
// the results are not sent and one short line says so, once, without the warnings about a run that
// is not sent (its commit, its branch, the token, the quarantine list); SERVICE_REPORT=off says
// nothing at all. Real problems stay loud: a server named without a token, CI without a token, a
// configured server that cannot be reached, a token the server refuses.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { jestSample } from '../helpers/jest-sample.js';
import { runCliProcess, type CliResult } from '../helpers/process.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'fh-e2e-local-'));
const repo = path.join(root, 'repo');
const home = path.join(root, 'home');
const NOT_SENDING = /^flakehouse: not sending results: no SERVICE_TOKEN and no server set up \(README "Sending results"; SERVICE_REPORT=off silences this\)$/;
let td: TestDaemon;

beforeAll(async () => {
  td = await startTestDaemon();
  fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
  fs.mkdirSync(home, { recursive: true });
}, 60_000);

afterAll(async () => {
  await td?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const JUNIT = `<?xml version="1.0" encoding="UTF-8"?><testsuite name="cart" tests="2"><testcase classname="cart" name="adds" file="test/cart.test.js" time="0.01"/><testcase classname="cart" name="pays" file="test/cart.test.js" time="0.01"><failure message="broke">Error: broke</failure></testcase></testsuite>`;

/** A test command that writes its JUnit report and exits with `code`. */
const testCommand = (code: number): string[] => [process.execPath, '-e', `require('fs').writeFileSync('report.xml', ${JSON.stringify(JUNIT)}); process.exit(${code});`];

const clean = (extra: Record<string, string> = {}): Record<string, string> => ({ HOME: home, SERVICE_BUFFER_DIR: path.join(root, 'buffer'), ...extra });
const flakehouse = (args: string[], env: Record<string, string>): Promise<CliResult> => runCliProcess(args, { cwd: repo, env, timeoutMs: 120_000 });
/** The lines flakehouse printed, the command's own output left out. */
const ours = (stderr: string): string[] => stderr.split('\n').filter((l) => l.startsWith('flakehouse:'));

describe('nothing set up on this machine', () => {
  it('flakehouse run: one line, no warnings, the command’s exit code (passing and failing)', async () => {
    for (const code of [0, 1]) {
      const r = await flakehouse(['run', '--junit', 'report.xml', '--', ...testCommand(code)], clean());
      expect(r.code).toBe(code);
      const lines = ours(r.stderr);
      expect(lines.filter((l) => NOT_SENDING.test(l)), r.stderr).toHaveLength(1);
      expect(lines.filter((l) => l.includes('warning')), r.stderr).toEqual([]);
      // Else only what it read: the failures are in the command's own output, and nothing is muted.
      expect(lines.filter((l) => !NOT_SENDING.test(l)), r.stderr).toEqual(['flakehouse: read 2 executions from report.xml']);
    }
  });

  it('flakehouse report: the same one line', async () => {
    fs.writeFileSync(path.join(repo, 'report.xml'), JUNIT);
    const r = await flakehouse(['report', 'report.xml'], clean());
    expect(r.code).toBe(0);
    expect(ours(r.stderr)).toEqual(['flakehouse: read 2 executions from 1 report(s)', expect.stringMatching(NOT_SENDING)]);
  });

  it('the Jest reporter on its own: the same one line, once', async () => {
    const { dir, command } = jestSample(root);
    const child = spawn(command[0]!, command.slice(1), { cwd: dir, env: { PATH: process.env.PATH ?? '', ...clean() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    expect(code).not.toBeNull();
    const lines = stderr.split('\n').filter((l) => l.includes('flakehouse:'));
    expect(lines, stderr).toEqual([expect.stringMatching(/flakehouse: not sending results: no SERVICE_TOKEN and no server set up/)]);
  }, 120_000);

  it('SERVICE_REPORT=off: nothing about sending at all', async () => {
    for (const code of [0, 1]) {
      const r = await flakehouse(['run', '--junit', 'report.xml', '--', ...testCommand(code)], clean({ SERVICE_REPORT: 'off' }));
      expect(r.code).toBe(code);
      expect(ours(r.stderr).filter((l) => NOT_SENDING.test(l) || l.includes('warning') || l.includes('sent')), r.stderr).toEqual([]);
    }
    // Off wins over a token and a server too.
    const r = await flakehouse(['report', 'report.xml'], clean({ SERVICE_REPORT: 'off', SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token }));
    expect(ours(r.stderr)).toEqual(['flakehouse: read 2 executions from 1 report(s)']);
  });
});

describe('real problems stay loud', () => {
  it('a server named without a token: the token warning, and none about the unsent run’s commit or branch', async () => {
    const r = await flakehouse(['report', 'report.xml'], clean({ SERVICE_ENDPOINT: td.url }));
    expect(ours(r.stderr)).toEqual(['flakehouse: read 2 executions from 1 report(s)', 'flakehouse: warning: results not sent: SERVICE_TOKEN is not set (create one with `flakehouse token create --project SLUG`)']);
  });

  it('CI without a token: the token warning', async () => {
    const r = await flakehouse(['report', 'report.xml'], clean({ GITHUB_ACTIONS: 'true', GITHUB_SHA: 'abcdef1234567', GITHUB_REF_NAME: 'main', GITHUB_RUN_ID: '1' }));
    expect(r.stderr).toContain('warning: results not sent: SERVICE_TOKEN is not set');
    expect(r.stderr).not.toMatch(NOT_SENDING);
  });

  it('a configured server that cannot be reached: the delivery warning', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const r = await flakehouse(['report', 'report.xml'], clean({ SERVICE_ENDPOINT: `http://127.0.0.1:${port}`, SERVICE_TOKEN: 'fh_whatever', SERVICE_COMMIT_SHA: 'abcdef1', SERVICE_BRANCH: 'main' }));
    expect(r.stderr).toMatch(/warning: results not delivered to http:\/\/127\.0\.0\.1:\d+ /);
    expect(r.stderr).not.toMatch(NOT_SENDING);
  });

  it('a token the server refuses: the refusal', async () => {
    const r = await flakehouse(['report', 'report.xml'], clean({ SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: 'fh_not_a_token', SERVICE_COMMIT_SHA: 'abcdef1', SERVICE_BRANCH: 'main' }));
    expect(r.stderr).toMatch(/warning: results refused by /);
    expect(r.stderr).not.toMatch(NOT_SENDING);
  });
});

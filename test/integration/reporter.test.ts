// The reporter (`sendRun`, `flakehouse report`) against the real daemon over real HTTP: JUnit
// fixtures over OTLP (plain and gzip) and the native JSON transport, buffering and exactly-once
// replay when the server is down, retries against a real HTTP peer answering 503/429/500,
// --strict, sampling, and the CODEOWNERS and routing syncs as the server stores them.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/main/cli.js';
import { countFinalStatuses } from '../../src/domain/records.js';
import { parseJUnit } from '../../client/src/contract/junit/parse.js';
import { junitFilesToRun } from '../../client/src/reporter/junit-to-run.js';
import { ReportDeliveryError, sendRun } from '../../client/src/reporter/send.js';
import type { ReporterRun } from '../../client/src/reporter/types.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/junit');
const fixture = (rel: string): string => path.join(FIXTURES, rel);

let td: TestDaemon;
let port: number;
let tmp: string;

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const p = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return p;
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fh-reporter-it-'));
  port = await freePort();
  // A fixed port, so the buffer-and-replay test can stop the server and bring it back at the same address.
  td = await startTestDaemon({ env: { SERVICE_PORT: String(port), SERVICE_RATE_LIMIT_MAX: '100000' } });
}, 60_000);

afterAll(async () => {
  await td?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function dir(name: string): string {
  const d = path.join(tmp, `${name}-${randomBytes(3).toString('hex')}`);
  fs.mkdirSync(d, { recursive: true });
  return d;
}

function branchName(label: string): string {
  return `rp-${label.replace(/[^A-Za-z0-9._-]/g, '_')}-${randomBytes(3).toString('hex')}`;
}

/** A clean reporter environment (no CI variables of the host) aimed at the test daemon. */
function envFor(branch: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SERVICE_TOKEN: td.token,
    SERVICE_ENDPOINT: td.url,
    SERVICE_BUFFER_DIR: path.join(tmp, 'buffer-default'),
    SERVICE_COMMIT_SHA: 'abcdef1',
    SERVICE_BRANCH: branch,
    ...extra,
  };
}

function runOf(...files: string[]): ReporterRun {
  const { run } = junitFilesToRun(files, { cwd: FIXTURES, now: Date.now() });
  if (!run) throw new Error(`no run from ${files.join(', ')}`);
  return run;
}

function logger(): { lines: string[]; log: (l: string) => void } {
  const lines: string[] = [];
  return { lines, log: (l) => lines.push(l) };
}

async function runsOn(branch: string): Promise<any[]> {
  const res = await td.request('GET', `/v1/runs?limit=100&branch=${encodeURIComponent(branch)}`);
  expect(res.status).toBe(200);
  return res.json.items;
}

/** Waits until the branch has `n` runs (and stays there for the last read). */
async function waitRuns(branch: string, n = 1): Promise<any[]> {
  await td.settled();
  return td.waitFor(async () => {
    const items = await runsOn(branch);
    return items.length >= n ? items : undefined;
  }, 30_000);
}

/** Waits for the queue to drain, so "still one run" is checked after every job was processed. */
async function drained(): Promise<void> {
  await td.settled(30_000);
}

describe('transports', () => {
  const cases: { label: string; env: Record<string, string> }[] = [
    { label: 'otlp', env: {} },
    { label: 'otlp-gzip', env: { SERVICE_COMPRESSION: 'gzip' } },
    { label: 'json', env: { SERVICE_TRANSPORT: 'json' } },
    { label: 'json-gzip', env: { SERVICE_TRANSPORT: 'json', SERVICE_COMPRESSION: 'gzip' } },
  ];
  for (const c of cases) {
    it(`${c.label}: the Pulsar report and a surefire flaky report as one run, counts as parsed`, async () => {
      const files = [fixture('dorny/external__java__pulsar-test-report.xml'), fixture('mikepenz/maven_surefire_flaky__surefire-report.xml')];
      const run = runOf(...files);
      const branch = branchName(c.label);
      const { lines, log } = logger();
      const result = await sendRun(run, { env: envFor(branch, c.env), cwd: dir(c.label), log });
      expect(result, lines.join('\n')).toMatchObject({ delivered: true, buffered: false, acceptedExecutions: 810, deduplicated: false });
      expect(lines.some((l) => l.startsWith(`sent 810 executions`) && l.includes(c.label.startsWith('json') ? 'over json' : 'over otlp'))).toBe(true);
      // The breakdown counts tests (as the run's counts below do) and adds up to the total with the earlier attempts.
      expect(lines).toContainEqual(expect.stringMatching(/^sent 810 executions: 671 tests \(663 passed, 1 failed, 1 flaky, 6 skipped\) \+ 139 earlier attempts of /));
      const [item] = await waitRuns(branch);
      // 670 tests of Pulsar (one failed) + the surefire test that failed then passed.
      expect(item).toMatchObject({ branch, commitSha: 'abcdef1', ciProvider: 'local', status: 'failed', counts: { total: 671, passed: 663, failed: 1, skipped: 6, flaky: 1 } });
      expect(item.counts).toEqual(countFinalStatuses(run.executions));
      const detail = await td.request('GET', `/v1/runs/${item.id}`);
      expect(detail.json.executions).toHaveLength(810);
      const flaky = detail.json.executions.filter((e: any) => e.title === 'createWebhook').map((e: any) => [e.status, e.attempt]);
      expect(flaky).toEqual([
        ['fail', 1],
        ['flaky', 2],
      ]);
    }, 60_000);
  }

  it('a sharded run gets the -shard<index> key and shard fields; SERVICE_IDEMPOTENCY_KEY makes a re-report a no-op', async () => {
    const branch = branchName('shard');
    const key = `ci-run-${randomBytes(4).toString('hex')}`;
    const env = envFor(branch, { SERVICE_IDEMPOTENCY_KEY: key, SERVICE_SHARD_INDEX: '2', SERVICE_SHARD_TOTAL: '3', SERVICE_TRANSPORT: 'json' });
    const first = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env, cwd: dir('shard'), log: () => {} });
    expect(first).toMatchObject({ delivered: true, idempotencyKey: `${key}-shard2`, deduplicated: false });
    const again = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env, cwd: dir('shard'), log: () => {} });
    expect(again).toMatchObject({ delivered: true, idempotencyKey: `${key}-shard2`, deduplicated: true, receiptId: first.receiptId });
    await waitRuns(branch);
    await drained();
    expect(await runsOn(branch)).toHaveLength(1);
  }, 60_000);
});

describe('every JUnit fixture', () => {
  it('is delivered with the counts the parser reads, or explained', async () => {
    const rels = ['dorny', 'mikepenz'].flatMap((d) => fs.readdirSync(path.join(FIXTURES, d)).filter((f) => f.endsWith('.xml')).map((f) => `${d}/${f}`));
    expect(rels.length).toBeGreaterThanOrEqual(60);
    const delivered: { rel: string; branch: string; run: ReporterRun }[] = [];
    const explained: { rel: string; problem: string }[] = [];
    const cwd = dir('fixtures');
    for (const rel of rels.sort()) {
      const { run, files } = junitFilesToRun([fixture(rel)], { cwd: FIXTURES, now: Date.now() });
      if (!run) {
        expect(files).toHaveLength(1);
        expect(files[0]!.file).toBe(rel);
        explained.push({ rel, problem: files[0]!.problem! });
        continue;
      }
      const branch = branchName(rel.slice(0, 40));
      const { lines, log } = logger();
      const result = await sendRun(run, { env: envFor(branch, { SERVICE_COMPRESSION: 'gzip' }), cwd, log });
      expect(result.delivered, `${rel}: ${lines.join('\n')}`).toBe(true);
      expect(result.acceptedExecutions, rel).toBe(run.executions.length);
      delivered.push({ rel, branch, run });
    }
    // Explanations say what is wrong: not JUnit (NUnit's <test-run>, the corrupt file) or no test case.
    expect(explained.map((e) => e.rel).sort()).toEqual([
      'dorny/dotnet-nunit.xml',
      'dorny/empty__java-junit.xml',
      'dorny/empty__jest-junit-empty-testsuite.xml',
      'dorny/empty__jest-junit.xml',
      'dorny/empty__phpunit-empty.xml',
      'dorny/external__nunit-sample.xml',
      'mikepenz/corrupt-junit__e2e-tests__corrupt__target__sf-reports__TEST-test.CorruptTest.xml',
      'mikepenz/cunit__testEmpty.xml',
    ]);
    for (const e of explained) {
      const parsed = parseJUnit(fs.readFileSync(fixture(e.rel), 'utf8'), { now: 0 });
      expect(parsed.ok).toBe(false);
      if (parsed.ok) continue;
      expect(e.problem, e.rel).toBe(parsed.error === 'empty_report' ? 'no test cases in this report' : `not valid JUnit XML: ${parsed.message}`);
    }
    await td.settled(120_000);
    for (const d of delivered) {
      const expected = countFinalStatuses(d.run.executions);
      // A run over 2000 executions goes as several OTLP parts of one trace: the run shows up with
      // the first part processed and is complete once the last one is.
      const complete = async (): Promise<any> => (await runsOn(d.branch)).find((r) => r.counts.total === expected.total);
      const item = (await td.waitFor(complete, 30_000).catch(() => undefined)) ?? (await waitRuns(d.branch))[0];
      expect(item.counts, d.rel).toEqual(expected);
      // The reporter sends the run's status: a retried failure that finally passed (JUnit retries
      // all point at the first attempt) does not fail the run.
      expect(item.status, d.rel).toBe(item.counts.failed > 0 ? 'failed' : 'passed');
    }
  }, 240_000);
});

describe('buffering and replay', () => {
  it('server down: buffered with a warning; the next invocation replays it exactly once', async () => {
    const bufferDir = path.join(dir('buffer'), 'buf');
    const branch = branchName('buffered');
    const cwd = dir('buffered');
    await td.stop();
    const down = logger();
    const result = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branch, { SERVICE_BUFFER_DIR: bufferDir }), cwd, log: down.log });
    expect(result).toMatchObject({ delivered: false, buffered: true, replayed: 0 });
    const warning = down.lines.find((l) => l.startsWith('warning: results not delivered'));
    expect(warning, down.lines.join('\n')).toContain('ECONNREFUSED');
    expect(warning).toContain('after 4 tries');
    expect(warning).toContain('sent again by the next `flakehouse report`');
    const buffered = fs.readdirSync(bufferDir).filter((f) => f.endsWith('.run.json'));
    expect(buffered).toHaveLength(1);
    const entry = JSON.parse(fs.readFileSync(path.join(bufferDir, buffered[0]!), 'utf8'));
    expect(entry).toMatchObject({ version: 1, idempotencyKey: result.idempotencyKey, endpoint: td.url, transport: 'otlp' });
    expect(JSON.stringify(entry)).not.toContain(td.token);
    const copy = fs.readFileSync(path.join(bufferDir, buffered[0]!));

    td = await td.restart();
    expect(td.url).toBe(`http://127.0.0.1:${port}`);
    const other = branchName('after-outage');
    const up = logger();
    const next = await sendRun(runOf(fixture('dorny/jest-junit-eslint.xml')), { env: envFor(other, { SERVICE_BUFFER_DIR: bufferDir }), cwd, log: up.log });
    expect(next, up.lines.join('\n')).toMatchObject({ delivered: true, replayed: 1 });
    expect(up.lines.some((l) => l.startsWith('replayed a buffered run'))).toBe(true);
    expect(fs.readdirSync(bufferDir).filter((f) => f.includes('.run.json'))).toEqual([]);
    const [replayedRun] = await waitRuns(branch);
    expect(replayedRun.counts).toEqual(countFinalStatuses(runOf(fixture('dorny/jest-junit.xml')).executions));
    await waitRuns(other);

    // The same entry arriving again (say, two machines shared a buffer) is stored once.
    fs.writeFileSync(path.join(bufferDir, buffered[0]!), copy);
    const third = logger();
    const again = await sendRun(runOf(fixture('dorny/jest-junit-eslint.xml')), { env: envFor(branchName('third'), { SERVICE_BUFFER_DIR: bufferDir }), cwd, log: third.log });
    expect(again.replayed).toBe(1);
    expect(third.lines.some((l) => l.includes('already stored'))).toBe(true);
    await drained();
    expect(await runsOn(branch)).toHaveLength(1);
    // And with nothing buffered there is nothing to replay.
    const fourth = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branchName('fourth'), { SERVICE_BUFFER_DIR: bufferDir }), cwd, log: () => {} });
    expect(fourth.replayed).toBe(0);
    expect(await runsOn(branch)).toHaveLength(1);
  }, 120_000);

  it('a buffered run for another endpoint is left in place', async () => {
    const bufferDir = path.join(dir('foreign'), 'buf');
    const deadPort = await freePort();
    const r = await sendRun(runOf(fixture('dorny/jest-junit.xml')), {
      env: envFor(branchName('foreign'), { SERVICE_BUFFER_DIR: bufferDir, SERVICE_ENDPOINT: `http://127.0.0.1:${deadPort}` }),
      cwd: dir('foreign'),
      log: () => {},
    });
    expect(r.buffered).toBe(true);
    const { lines, log } = logger();
    const next = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branchName('foreign2'), { SERVICE_BUFFER_DIR: bufferDir }), cwd: dir('foreign'), log });
    expect(next).toMatchObject({ delivered: true, replayed: 0 });
    expect(lines.some((l) => l.includes('1 buffered run(s)') && l.includes('another endpoint or project'))).toBe(true);
    expect(fs.readdirSync(bufferDir).filter((f) => f.endsWith('.run.json'))).toHaveLength(1);
  }, 60_000);
});

interface PeerRequest {
  at: number;
  method: string;
  path: string;
}

/** A real HTTP peer in front of the daemon: answers from `script` or forwards to the daemon. */
async function startPeer(script: (n: number, req: http.IncomingMessage) => { status: number; headers?: Record<string, string>; body?: unknown } | 'forward') {
  const requests: PeerRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ at: Date.now(), method: req.method!, path: req.url! });
      const answer = script(requests.length, req);
      if (answer === 'forward') {
        const headers: Record<string, string> = {};
        for (const h of ['authorization', 'content-type', 'content-encoding']) if (req.headers[h]) headers[h] = String(req.headers[h]);
        fetch(`${td.url}${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) }).then(
          async (r) => {
            res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
            res.end(Buffer.from(await r.arrayBuffer()));
          },
          () => {
            res.writeHead(502);
            res.end();
          },
        );
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return { url, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('retries against a real HTTP peer', () => {
  for (const status of [503, 429]) {
    it(`${status} with Retry-After, then accepted: one run, the wait honoured`, async () => {
      const peer = await startPeer((n, req) =>
        req.url === '/v1/traces' && n === 1 ? { status, headers: { 'retry-after': '1' }, body: { error: status === 503 ? 'backpressure' : 'rate_limited' } } : 'forward',
      );
      try {
        const branch = branchName(`retry-${status}`);
        const { lines, log } = logger();
        const result = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branch, { SERVICE_ENDPOINT: peer.url }), cwd: dir('retry'), log });
        expect(result, lines.join('\n')).toMatchObject({ delivered: true, buffered: false });
        const traces = peer.requests.filter((r) => r.path === '/v1/traces');
        expect(traces).toHaveLength(2);
        // Retry-After: 1 is a lower bound our code enforces; nothing here depends on speed.
        expect(traces[1]!.at - traces[0]!.at).toBeGreaterThanOrEqual(950);
        expect(lines.some((l) => l.includes(`${status} ${status === 503 ? 'backpressure' : 'rate_limited'}`) && l.includes('retrying in 1.0 s'))).toBe(true);
        await waitRuns(branch);
      } finally {
        await peer.close();
      }
    }, 60_000);
  }

  it('500 then accepted is retried; a 400 is final, not retried and not buffered', async () => {
    const peer500 = await startPeer((n, req) => (req.url === '/v1/ingest' && n === 1 ? { status: 500, body: { error: 'internal' } } : 'forward'));
    try {
      const branch = branchName('retry-500');
      const r = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branch, { SERVICE_ENDPOINT: peer500.url, SERVICE_TRANSPORT: 'json' }), cwd: dir('r500'), log: () => {} });
      expect(r.delivered).toBe(true);
      expect(peer500.requests.filter((x) => x.path === '/v1/ingest')).toHaveLength(2);
      await waitRuns(branch);
    } finally {
      await peer500.close();
    }
    const peer400 = await startPeer(() => ({ status: 400, body: { error: 'invalid_payload', issues: [{ path: 'executions.0.title', message: 'too short' }] } }));
    try {
      const bufferDir = path.join(dir('r400'), 'buf');
      const { lines, log } = logger();
      const r = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branchName('r400'), { SERVICE_ENDPOINT: peer400.url, SERVICE_BUFFER_DIR: bufferDir }), cwd: dir('r400'), log });
      expect(r).toMatchObject({ delivered: false, buffered: false });
      expect(peer400.requests.filter((x) => x.path === '/v1/traces')).toHaveLength(1);
      expect(lines).toContain(`warning: results refused by ${peer400.url}: 400 invalid_payload: executions.0.title: too short`);
      // Nothing buffered (the directory holds at most last-report.json, the commit for `summary`).
      expect(fs.existsSync(bufferDir) ? fs.readdirSync(bufferDir).filter((n) => n !== 'last-report.json') : []).toEqual([]);
    } finally {
      await peer400.close();
    }
  }, 60_000);

  it('always 503: buffered after the bounded retries; --strict makes it an error', async () => {
    const peer = await startPeer(() => ({ status: 503, headers: { 'retry-after': '0' }, body: { error: 'backpressure' } }));
    try {
      const bufferDir = path.join(dir('always503'), 'buf');
      const env = envFor(branchName('always503'), { SERVICE_ENDPOINT: peer.url, SERVICE_BUFFER_DIR: bufferDir });
      const soft = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env, cwd: dir('always503'), log: () => {} });
      expect(soft).toMatchObject({ delivered: false, buffered: true });
      expect(peer.requests.filter((r) => r.path === '/v1/traces')).toHaveLength(4);
      const strict = sendRun(runOf(fixture('dorny/jest-junit.xml')), { env, cwd: dir('always503'), strict: true, log: () => {} });
      await expect(strict).rejects.toBeInstanceOf(ReportDeliveryError);
      await expect(strict).rejects.toThrow(/results not delivered to .*503 backpressure/);
    } finally {
      await peer.close();
    }
  }, 60_000);
});

describe('flakehouse report (in process)', () => {
  it('exit 0 with a warning when the server is unreachable; 1 with --strict; 2 for a bad setting with --strict', async () => {
    const deadPort = await freePort();
    const cwd = dir('cli');
    const env = envFor(branchName('cli'), { SERVICE_ENDPOINT: `http://127.0.0.1:${deadPort}`, SERVICE_BUFFER_DIR: path.join(cwd, 'buf') });
    const file = fixture('dorny/jest-junit.xml');
    expect(await main(['report', file], env, cwd)).toBe(0);
    expect(await main(['report', '--strict', file], env, cwd)).toBe(1);
    expect(await main(['report', file], { ...env, SERVICE_SAMPLE_RATE: 'often' }, cwd)).toBe(0);
    expect(await main(['report', '--strict', file], { ...env, SERVICE_SAMPLE_RATE: 'often' }, cwd)).toBe(2);
    expect(await main(['report'], env, cwd)).toBe(2);
    expect(await main(['report', 'nothing-here/*.xml'], env, cwd)).toBe(0);
    expect(await main(['report', '--strict', 'nothing-here/*.xml'], env, cwd)).toBe(1);
  }, 60_000);
});

describe('sampling', () => {
  it('SERVICE_SAMPLE_RATE=0 drops passing runs only', async () => {
    const cwd = dir('sampling');
    const passing = branchName('sample-pass');
    const failing = branchName('sample-fail');
    const flaky = branchName('sample-flaky');
    const pass = await sendRun(runOf(fixture('mikepenz/tests__utils__target__surefire-reports__TEST-action.surefire.report.calc.AllOkTest.xml')), {
      env: envFor(passing, { SERVICE_SAMPLE_RATE: '0' }),
      cwd,
      log: () => {},
    });
    expect(pass).toMatchObject({ delivered: false, buffered: false, skipped: 'sampled' });
    const fail = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(failing, { SERVICE_SAMPLE_RATE: '0' }), cwd, log: () => {} });
    expect(fail.delivered).toBe(true);
    const flake = await sendRun(runOf(fixture('mikepenz/maven_surefire_flaky__surefire-report.xml')), { env: envFor(flaky, { SERVICE_SAMPLE_RATE: '0' }), cwd, log: () => {} });
    expect(flake.delivered).toBe(true);
    await waitRuns(failing);
    await waitRuns(flaky);
    await drained();
    expect(await runsOn(passing)).toEqual([]);
  }, 60_000);
});

describe('CODEOWNERS and routing sync', () => {
  async function storedCodeowners(): Promise<string | undefined> {
    const rows = await td.daemon.store.query<{ content: string }>(`SELECT content FROM ${td.daemon.store.table('codeowners')} FINAL LIMIT 1`);
    return rows[0]?.content;
  }

  it('finds .github/CODEOWNERS walking up to the repository root and PUTs it', async () => {
    const repo = dir('repo');
    fs.mkdirSync(path.join(repo, '.git'));
    fs.mkdirSync(path.join(repo, '.github'));
    fs.mkdirSync(path.join(repo, 'packages/web'), { recursive: true });
    const content = `# owners ${randomBytes(4).toString('hex')}\n/packages/web/ @acme/web\n`;
    fs.writeFileSync(path.join(repo, '.github/CODEOWNERS'), content);
    const run = { ...runOf(fixture('dorny/jest-junit.xml')), rootDir: path.join(repo, 'packages/web') };
    const { lines, log } = logger();
    const r = await sendRun(run, { env: envFor(branchName('owners')), cwd: repo, log });
    expect(r.delivered).toBe(true);
    expect(lines).toContain('synced owners from .github/CODEOWNERS');
    expect(await storedCodeowners()).toBe(content.trim());
  }, 60_000);

  it('SERVICE_CODEOWNERS_FILE wins; a CODEOWNERS above the repository root is not used', async () => {
    const outer = dir('outer');
    fs.writeFileSync(path.join(outer, 'CODEOWNERS'), '* @outsider\n');
    const repo = path.join(outer, 'repo');
    fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
    const before = await storedCodeowners();
    const quiet = logger();
    await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branchName('noco')), cwd: repo, log: quiet.log });
    expect(quiet.lines.some((l) => l.includes('owners'))).toBe(false);
    expect(await storedCodeowners()).toBe(before);
    const explicit = `* @acme/explicit-${randomBytes(3).toString('hex')}`;
    fs.writeFileSync(path.join(repo, 'OWNERS.txt'), explicit);
    const { lines, log } = logger();
    await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branchName('explicit-owners'), { SERVICE_CODEOWNERS_FILE: 'OWNERS.txt' }), cwd: repo, log });
    expect(lines).toContain('synced owners from OWNERS.txt');
    expect(await storedCodeowners()).toBe(explicit);
  }, 60_000);

  it('an empty CODEOWNERS file in the repository clears the owners on purpose (?allowEmpty=true)', async () => {
    expect((await td.request('PUT', '/v1/codeowners', { body: { content: '* @acme/before-empty' } })).status).toBe(200);
    const repo = dir('empty-owners');
    fs.mkdirSync(path.join(repo, '.git'));
    fs.writeFileSync(path.join(repo, 'CODEOWNERS'), '\n');
    const { lines, log } = logger();
    await sendRun({ ...runOf(fixture('dorny/jest-junit.xml')), rootDir: repo }, { env: envFor(branchName('empty-owners')), cwd: repo, log });
    expect(lines).toContain('synced owners from CODEOWNERS (empty: every owner cleared)');
    expect(await storedCodeowners()).toBe('');
  }, 60_000);

  it('service.yml channels become config channels; a later sync replaces them and leaves dashboard channels alone', async () => {
    const cwd = dir('routing');
    const yml = (channels: string): string => `project: default\nnotifications:\n  channels:\n${channels}`;
    fs.writeFileSync(
      path.join(cwd, 'service.yml'),
      yml(
        '    - kind: slack\n      target: https://hooks.slack.com/services/T0/B0/abc\n      events: [flaky_detected, quarantine_changed]\n' +
          '    - kind: email\n      target: qa@acme.dev\n',
      ),
    );
    const { lines, log } = logger();
    const r = await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branchName('routing')), cwd, log });
    expect(r.delivered).toBe(true);
    expect(lines).toContain('synced 2 notification channel(s) from service.yml');
    const first = (await td.request('GET', '/v1/notifications/channels')).json.items;
    const configRows = first.filter((c: any) => c.source === 'config').map((c: any) => [c.kind, c.target, c.events]);
    expect(configRows.sort()).toEqual([
      ['email', 'qa@acme.dev', []],
      ['slack', 'https://hooks.slack.com/services/T0/B0/abc', ['flaky_detected', 'quarantine_changed']],
    ]);
    const slackId = first.find((c: any) => c.kind === 'slack').id;

    // A dashboard channel, as the settings layer writes it.
    const projectId = (await td.daemon.store.query<{ id: string }>(`SELECT id FROM ${td.daemon.store.table('projects')} FINAL WHERE slug = 'default'`))[0]!.id;
    await td.daemon.store.insert(
      'notification_channels',
      [{ project_id: projectId, id: randomUUIDLike(), source: 'settings', kind: 'webhook', target: 'https://hooks.acme.dev/flaky', events: [], signing_secret: 'whsec_test', created_at: Date.now(), updated_at: Date.now(), version: Date.now() * 1000, deleted: 0 }],
      `test-settings-channel-${randomBytes(4).toString('hex')}`,
    );

    fs.writeFileSync(path.join(cwd, 'service.yml'), yml('    - kind: slack\n      target: https://hooks.slack.com/services/T0/B0/abc\n'));
    await sendRun(runOf(fixture('dorny/jest-junit.xml')), { env: envFor(branchName('routing2')), cwd, log: () => {} });
    const second = (await td.request('GET', '/v1/notifications/channels')).json.items;
    expect(second.map((c: any) => [c.source, c.kind, c.target, c.events, c.signed])).toEqual([
      ['config', 'slack', 'https://hooks.slack.com/services/T0/B0/abc', [], false],
      ['settings', 'webhook', 'https://hooks.acme.dev/flaky', [], true],
    ]);
    // Same kind and target: the same channel (id), updated in place.
    expect(second[0].id).toBe(slackId);
    expect(JSON.stringify(second)).not.toContain('whsec_test');
  }, 60_000);
});

describe('PUT /v1/notifications/routing', () => {
  it('answers {ok, channels}; is strict, names the offending path, caps at 50 and refuses duplicates', async () => {
    const put = (body: unknown, token?: string) => td.request('PUT', '/v1/notifications/routing', { body, ...(token ? { token } : {}) });
    const ok = await put({ channels: [{ kind: 'discord', target: 'https://discord.com/api/webhooks/1/x', events: ['suite_regressed', 'ai_budget_spent'] }] });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({ ok: true, channels: 1 });

    const unknownKey = await put({ channels: [{ kind: 'webhook', target: 'https://hooks.acme.dev/x', secret: 's3cr3t' }] });
    expect(unknownKey.status).toBe(400);
    expect(unknownKey.json.error).toBe('invalid_payload');
    expect(unknownKey.json.issues).toEqual([{ path: 'channels.0.secret', message: 'unknown key' }]);

    const topLevel = await put({ channels: [], extra: true });
    expect(topLevel.json.issues).toEqual([{ path: 'extra', message: 'unknown key' }]);

    const badTarget = await put({ channels: [{ kind: 'slack', target: 'not a url' }, { kind: 'email', target: 'nobody' }, { kind: 'sms', target: '+1' }] });
    expect(badTarget.status).toBe(400);
    expect(badTarget.json.issues.map((i: any) => i.path)).toEqual(['channels.0.target', 'channels.1.target', 'channels.2.kind']);

    const badEvent = await put({ channels: [{ kind: 'slack', target: 'https://hooks.slack.com/x', events: ['run_finished'] }] });
    expect(badEvent.json.issues[0].path).toBe('channels.0.events.0');

    const many = Array.from({ length: 51 }, (_, i) => ({ kind: 'webhook', target: `https://hooks.acme.dev/${i}` }));
    const tooMany = await put({ channels: many });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.issues).toEqual([{ path: 'channels', message: 'at most 50 channels' }]);
    expect((await put({ channels: many.slice(0, 50) })).json).toEqual({ ok: true, channels: 50 });

    const dup = await put({ channels: [many[0], { ...many[0], events: ['rca_ready'] }] });
    expect(dup.status).toBe(400);
    expect(dup.json.issues).toEqual([{ path: 'channels.1', message: 'duplicate of channels.0 (same kind and target)' }]);

    const readOnly = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    expect(readOnly.status).toBe(201);
    const forbidden = await put({ channels: [] }, readOnly.json.token);
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.error).toBe('insufficient_scope');

    expect((await put({ channels: [] })).json).toEqual({ ok: true, channels: 0 });
    const left = (await td.request('GET', '/v1/notifications/channels')).json.items;
    expect(left.filter((c: any) => c.source === 'config')).toEqual([]);
  }, 60_000);
});

function randomUUIDLike(): string {
  const h = randomBytes(16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

// POST /v1/ingest/junit over real HTTP against the real daemon (chDB + lmdb queue): every fixture
// report is accepted (202) or refused with a clear 400, never a 5xx; accepted reports become runs
// whose counts and executions match what the parser reads from the file.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countFinalStatuses } from '../../src/domain/records.js';
import { parseJUnit } from '../../client/src/contract/junit/parse.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/junit');
const fixtureFiles = ['dorny', 'mikepenz', 'vitest', 'jest', 'playwright'].flatMap((dir) =>
  readdirSync(path.join(FIXTURES, dir))
    .filter((f) => f.endsWith('.xml'))
    .sort()
    .map((f) => `${dir}/${f}`),
);

/** One branch per fixture, so each fixture's run can be found with `GET /v1/runs?branch=`. */
function branchOf(rel: string): string {
  return `fx-${rel.replace(/[^A-Za-z0-9._-]/g, '_')}`;
}

function key(label: string): string {
  return `junit-${label}-${randomBytes(6).toString('hex')}`;
}

const resource = (branch: string) => ({ ciProvider: 'local', commitSha: 'abcdef1', branch, trigger: 'push' });

interface Posted {
  rel: string;
  branch: string;
  status: number;
  json: any;
}

let td: TestDaemon;
const posted: Posted[] = [];

beforeAll(async () => {
  // Polling the read API counts against the per-project rate limit; this file is not about it.
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
});

afterAll(async () => {
  await td?.close();
});

async function listAllRuns(query = ''): Promise<any[]> {
  const items: any[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const qs = new URLSearchParams(query);
    qs.set('limit', '100');
    if (cursor) qs.set('cursor', cursor);
    const res = await td.request('GET', `/v1/runs?${qs.toString()}`);
    expect(res.status).toBe(200);
    for (const it of res.json.items) {
      expect(seen.has(it.id)).toBe(false);
      seen.add(it.id);
      items.push(it);
    }
    cursor = res.json.nextCursor;
    if (cursor === null) return items;
  }
  throw new Error('runs listing did not end');
}

async function runOnBranch(branch: string): Promise<any> {
  const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
  expect(res.status).toBe(200);
  expect(res.json.items.length).toBeLessThanOrEqual(1);
  return res.json.items[0];
}

describe('POST /v1/ingest/junit with every fixture', () => {
  it('finds the fixtures and gives each a distinct branch', () => {
    expect(fixtureFiles.length).toBeGreaterThanOrEqual(60);
    expect(new Set(fixtureFiles.map(branchOf)).size).toBe(fixtureFiles.length);
  });

  it('answers 202 or a clear 400 for each fixture, matching the parser', async () => {
    for (const rel of fixtureFiles) {
      const xml = readFileSync(path.join(FIXTURES, rel), 'utf8');
      const branch = branchOf(rel);
      const res = await td.request('POST', '/v1/ingest/junit', {
        body: { idempotencyKey: key(branch.slice(0, 60)), resource: resource(branch), xml },
      });
      posted.push({ rel, branch, status: res.status, json: res.json });
      const parsed = parseJUnit(xml, { now: Date.now() });
      if (res.status === 202) {
        expect(parsed.ok, rel).toBe(true);
        if (!parsed.ok) continue;
        expect(res.json, rel).toMatchObject({ acceptedExecutions: parsed.executions.length, deduplicated: false });
        expect(typeof res.json.receiptId, rel).toBe('string');
      } else {
        expect(res.status, `${rel}: ${res.text}`).toBe(400);
        expect(['invalid_junit_xml', 'empty_report'], rel).toContain(res.json?.error);
        expect(typeof res.json.message, rel).toBe('string');
        expect(res.json.message.length, rel).toBeGreaterThan(0);
        // The server refuses exactly what the parser refuses, for the same reason.
        expect(parsed.ok, rel).toBe(false);
        if (!parsed.ok) expect(res.json.error, rel).toBe(parsed.error);
      }
    }
    const accepted = posted.filter((p) => p.status === 202);
    const refused = posted.filter((p) => p.status === 400);
    expect(accepted.length + refused.length).toBe(fixtureFiles.length);
    // Known refusals: NUnit's <test-run> (2), the corrupt report, and the empty ones.
    expect(refused.map((p) => p.rel).sort()).toEqual(
      [
        'dorny/dotnet-nunit.xml',
        'dorny/empty__java-junit.xml',
        'dorny/empty__jest-junit-empty-testsuite.xml',
        'dorny/empty__jest-junit.xml',
        'dorny/empty__phpunit-empty.xml',
        'dorny/external__nunit-sample.xml',
        'mikepenz/corrupt-junit__e2e-tests__corrupt__target__sf-reports__TEST-test.CorruptTest.xml',
        'mikepenz/cunit__testEmpty.xml',
      ].sort(),
    );
    const receiptIds = accepted.map((p) => p.json.receiptId as string);
    expect(new Set(receiptIds).size).toBe(receiptIds.length);
  }, 120_000);

  it('turns every accepted report into exactly one run', async () => {
    const accepted = posted.filter((p) => p.status === 202);
    expect(accepted.length).toBeGreaterThan(50);
    await td.settled(100_000);
    const fixtureRuns = await td.waitFor(async () => {
      const runs = (await listAllRuns()).filter((r) => String(r.branch).startsWith('fx-'));
      return runs.length >= accepted.length ? runs : undefined;
    }, 100_000);
    expect(fixtureRuns.length).toBe(accepted.length);
    expect(new Set(fixtureRuns.map((r) => r.branch))).toEqual(new Set(accepted.map((p) => p.branch)));
    // Refused reports left nothing behind.
    for (const p of posted.filter((x) => x.status === 400)) expect(fixtureRuns.some((r) => r.branch === p.branch), p.rel).toBe(false);
  }, 120_000);

  it('stores counts, status and executions as parsed, for each accepted report', async () => {
    for (const p of posted.filter((x) => x.status === 202)) {
      const parsed = parseJUnit(readFileSync(path.join(FIXTURES, p.rel), 'utf8'), { now: Date.now() });
      if (!parsed.ok) throw new Error(`${p.rel} no longer parses`);
      const run = await runOnBranch(p.branch);
      expect(run, p.rel).toBeDefined();
      expect(run, p.rel).toMatchObject({
        branch: p.branch,
        commitSha: 'abcdef1',
        ciProvider: 'local',
        prNumber: null,
        status: parsed.runStatus,
        counts: countFinalStatuses(parsed.executions),
      });
      const detail = await td.request('GET', `/v1/runs/${run.id}`);
      expect(detail.status, p.rel).toBe(200);
      expect(detail.json.trigger, p.rel).toBe('push');
      expect(detail.json.executions.length, p.rel).toBe(parsed.executions.length);
    }
  }, 120_000);
});

describe('run details of selected fixtures', () => {
  async function detailOf(rel: string): Promise<any> {
    expect(posted.find((p) => p.rel === rel)?.status, rel).toBe(202);
    const run = await runOnBranch(branchOf(rel));
    expect(run, rel).toBeDefined();
    const res = await td.request('GET', `/v1/runs/${run.id}`);
    expect(res.status).toBe(200);
    expect(res.json.id).toBe(run.id);
    return res.json;
  }

  it('surefire flakyFailure: one flaky test with its failed first attempt', async () => {
    const d = await detailOf('mikepenz/maven_surefire_flaky__surefire-report.xml');
    expect(d.status).toBe('passed');
    expect(d.counts).toEqual({ total: 1, passed: 0, failed: 0, skipped: 0, flaky: 1 });
    expect(d.executions).toHaveLength(2);
    const attempts = d.executions.map((e: any) => ({ title: e.title, status: e.status, attempt: e.attempt }));
    expect(attempts).toEqual([
      { title: 'createWebhook', status: 'fail', attempt: 1 },
      { title: 'createWebhook', status: 'flaky', attempt: 2 },
    ]);
    const [first, last] = d.executions;
    expect(first.suite).toBe('io.sodadata.dependson.soda.integrations.msteams.MicrosoftTeamsCrudTest');
    expect(first.filePath).toBe('io/sodadata/dependson/soda/integrations/msteams/MicrosoftTeamsCrudTest');
    expect(first.errorMessage).toContain('Expected: <false>');
    expect(last.errorMessage).toBeNull();
    // Both attempts are the same test.
    expect(first.testIdentityId).toBe(last.testIdentityId);
    expect(d.durationMs).toBe(683);
  });

  it('Apache Pulsar report: 808 executions of 670 tests, TestNG repeats read as attempts', async () => {
    const d = await detailOf('dorny/external__java__pulsar-test-report.xml');
    expect(d.status).toBe('failed');
    // 670 distinct (classname, name) pairs among 808 <testcase> elements.
    expect(d.counts).toEqual({ total: 670, passed: 663, failed: 1, skipped: 6, flaky: 0 });
    expect(d.executions).toHaveLength(808);
    const failed = d.executions.filter((e: any) => e.status === 'fail');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ title: 'testVersionStrings', suite: 'org.apache.pulsar.AddMissingPatchVersionTest', attempt: 2 });
    expect(failed[0].errorMessage).toBe('expected [1.2.1] but found [1.2.0]');
    expect(d.executions.filter((e: any) => e.status === 'skip')).toHaveLength(14);
    expect(Math.max(...d.executions.map((e: any) => e.attempt))).toBe(32);
  });

  it('jest-junit: 6 tests, 4 failures, 1 skip', async () => {
    const d = await detailOf('dorny/jest-junit.xml');
    expect(d.status).toBe('failed');
    expect(d.counts).toEqual({ total: 6, passed: 1, failed: 4, skipped: 1, flaky: 0 });
    expect(d.startedAt).toBe('2020-10-27T21:39:41.000Z');
    expect(d.executions).toHaveLength(6);
    expect(d.executions.every((e: any) => e.attempt === 1)).toBe(true);
    const byTitle = new Map<string, any>(d.executions.map((e: any) => [e.title, e]));
    expect(byTitle.get('Passing test')).toMatchObject({ status: 'pass', suite: 'Test 1', errorMessage: null, durationMs: 1 });
    expect(byTitle.get('Failing test')).toMatchObject({ status: 'fail', suite: 'Test 1 › Test 1.1' });
    expect(byTitle.get('Failing test').errorMessage).toBe('Error: expect(received).toBeTruthy()');
    expect(byTitle.get('Timeout test')).toMatchObject({ status: 'fail', suite: '__tests__\\second.test.js' });
    expect(d.executions.filter((e: any) => e.status === 'skip')).toHaveLength(1);
  });
});

describe('POST /v1/ingest/junit refusals and encodings', () => {
  it('refuses a DOCTYPE with entity declarations (billion laughs) without expanding it', async () => {
    const xml = `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<testsuite name="s"><testcase name="&lol2;" classname="c"/></testsuite>`;
    const res = await td.request('POST', '/v1/ingest/junit', { body: { idempotencyKey: key('doctype'), resource: resource('doctype'), xml } });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_junit_xml');
    expect(res.json.message).toMatch(/DOCTYPE/);
  });

  it('refuses an external entity (XXE) declaration', async () => {
    const xml = `<?xml version="1.0"?>
<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<testsuite name="s"><testcase name="t" classname="c"><failure>&xxe;</failure></testcase></testsuite>`;
    const res = await td.request('POST', '/v1/ingest/junit', { body: { idempotencyKey: key('xxe'), resource: resource('xxe'), xml } });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_junit_xml');
    expect(res.text).not.toContain('root:');
  });

  it('refuses an undeclared entity reference with its position', async () => {
    const xml = `<testsuite name="s">\n<testcase name="a&nbsp;b" classname="c"/>\n</testsuite>`;
    const res = await td.request('POST', '/v1/ingest/junit', { body: { idempotencyKey: key('entity'), resource: resource('entity'), xml } });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_junit_xml');
    expect(res.json.message).toMatch(/line 2/);
  });

  it('refuses a body without xml naming the path', async () => {
    const res = await td.request('POST', '/v1/ingest/junit', { body: { idempotencyKey: key('noxml'), resource: resource('noxml') } });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_payload');
    expect(res.json.issues.map((i: any) => i.path)).toContain('xml');
  });

  it('refuses an invalid resource naming the path', async () => {
    const res = await td.request('POST', '/v1/ingest/junit', {
      body: { idempotencyKey: key('badres'), resource: { ...resource('badres'), commitSha: 'not-a-sha' }, xml: '<testsuite><testcase name="t"/></testsuite>' },
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_payload');
    expect(res.json.issues.map((i: any) => i.path)).toContain('resource.commitSha');
  });

  it('accepts a gzip-compressed JSON body and stores its run', async () => {
    const xml = `<testsuite name="gz" timestamp="2024-05-01T10:00:00Z">
  <testcase classname="gz.Suite" name="passes" time="0.5"/>
  <testcase classname="gz.Suite" name="fails" time="0.25"><failure message="nope">trace</failure></testcase>
</testsuite>`;
    const body = gzipSync(Buffer.from(JSON.stringify({ idempotencyKey: key('gzip'), resource: resource('gzip-json'), xml })));
    const res = await td.request('POST', '/v1/ingest/junit', {
      body: body,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ acceptedExecutions: 2, deduplicated: false });
    await td.settled();
    const run = await td.waitFor(() => runOnBranch('gzip-json'), 20_000);
    expect(run).toMatchObject({ status: 'failed', startedAt: '2024-05-01T10:00:00.000Z', counts: { total: 2, passed: 1, failed: 1, skipped: 0, flaky: 0 } });
    const d = await td.request('GET', `/v1/runs/${run.id}`);
    expect(d.json.executions.find((e: any) => e.title === 'fails').errorMessage).toBe('nope');
  });

  it('a replayed report is deduplicated and not stored twice', async () => {
    const xml = '<testsuite name="r"><testcase classname="r.S" name="t" time="0.1"/></testsuite>';
    const body = { idempotencyKey: key('replay'), resource: resource('replay'), xml };
    const a = await td.request('POST', '/v1/ingest/junit', { body });
    const b = await td.request('POST', '/v1/ingest/junit', { body: { ...body, xml: xml.replace('name="t"', 'name="other"') } });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(a.json.deduplicated).toBe(false);
    expect(b.json).toEqual({ receiptId: a.json.receiptId, acceptedExecutions: 1, deduplicated: true });
    await td.settled();
    const run = await td.waitFor(() => runOnBranch('replay'), 20_000);
    const d = await td.request('GET', `/v1/runs/${run.id}`);
    // The first payload wins.
    expect(d.json.executions.map((e: any) => e.title)).toEqual(['t']);
    expect((await listAllRuns('branch=replay')).length).toBe(1);
  });
});

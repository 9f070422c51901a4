// A run's merge base (resource.mergeBase: where a PR's branch forked from its base branch) end to end
// against the real daemon: the native batch, JUnit and OTLP receivers take it, it is stored on the run,
// shown by GET /v1/runs/:runId and exported; an OTLP run assembled from several requests keeps it; a
// bad one is a 400 naming `resource.mergeBase`; and the reporter finds it in a real git checkout.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendRun } from '../../client/src/reporter/send.js';
import type { ReporterRun } from '../../client/src/reporter/types.js';
import { makeForkedRepo } from '../helpers/git-fork.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const MERGE_BASE = '9F3C1AB2D4E5F60718293A4B5C6D7E8F90A1B2C3';
const STORED = MERGE_BASE.toLowerCase();

let td: TestDaemon;
let tmp: string;

beforeAll(async () => {
  td = await startTestDaemon();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fh-merge-base-it-'));
}, 60_000);

afterAll(async () => {
  await td?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const uniqueBranch = (label: string): string => `mb-${label}-${randomBytes(3).toString('hex')}`;

/** The detail of the one run on `branch`, once the queue has processed it. */
async function runOn(branch: string): Promise<any> {
  await td.settled();
  const id = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
    return res.json?.items?.[0]?.id as string | undefined;
  }, 20_000);
  const detail = await td.request('GET', `/v1/runs/${id}`);
  expect(detail.status, detail.text).toBe(200);
  return detail.json;
}

describe('resource.mergeBase over the receivers', () => {
  it('native batch: stored lowercase, shown in the run detail and the export; absent or null → null', async () => {
    const pr = uniqueBranch('native');
    const push = uniqueBranch('native-none');
    const nulled = uniqueBranch('native-null');
    await td.ingest(
      nativeBatch({ resource: { branch: pr, baseBranch: 'main', prNumber: 7, trigger: 'pull_request', mergeBase: MERGE_BASE } }),
      nativeBatch({ resource: { branch: push } }),
      nativeBatch({ resource: { branch: nulled, mergeBase: null } }),
    );
    const detail = await runOn(pr);
    expect(detail).toMatchObject({ branch: pr, mergeBase: STORED });
    expect((await runOn(push)).mergeBase).toBeNull();
    expect((await runOn(nulled)).mergeBase).toBeNull();

    const exported = await fetch(`${td.url}/v1/export`, { headers: { authorization: `Bearer ${td.token}` } });
    expect(exported.status).toBe(200);
    const runs = gunzipSync(Buffer.from(await exported.arrayBuffer()))
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { dataset?: string; data?: Record<string, unknown> })
      .filter((l) => l.dataset === 'runs');
    expect(runs.find((l) => l.data!.branch === pr)?.data).toMatchObject({ id: detail.id, merge_base: STORED });
    expect(runs.find((l) => l.data!.branch === push)?.data).toMatchObject({ merge_base: '' });
  });

  it('a mergeBase that is not 7 to 40 hex characters is a 400 invalid_payload naming resource.mergeBase, on both JSON routes', async () => {
    for (const bad of ['main', 'abc123', 'g'.repeat(40), 'a'.repeat(41), 1234567]) {
      const native = await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { mergeBase: bad } }) });
      expect(native.status, String(bad)).toBe(400);
      expect(native.json.error).toBe('invalid_payload');
      expect(native.json.issues.map((i: { path: string }) => i.path)).toEqual(['resource.mergeBase']);
      const junit = await td.request('POST', '/v1/ingest/junit', {
        body: { idempotencyKey: `junit-bad-${randomBytes(4).toString('hex')}`, resource: { ciProvider: 'jenkins', commitSha: 'abcdef1', branch: 'main', trigger: 'push', mergeBase: bad }, xml: '<testsuite name="s"><testcase name="t"/></testsuite>' },
      });
      expect(junit.status, String(bad)).toBe(400);
      expect(junit.json.issues.map((i: { path: string }) => i.path)).toEqual(['resource.mergeBase']);
    }
    const res = await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { mergeBase: 'main' } }) });
    expect(res.json.issues).toEqual([{ path: 'resource.mergeBase', message: 'expected 7 to 40 hex characters' }]);
  });

  it('JUnit: the report resource takes it', async () => {
    const branch = uniqueBranch('junit');
    const res = await td.request('POST', '/v1/ingest/junit', {
      body: {
        idempotencyKey: `junit-${randomBytes(6).toString('hex')}`,
        resource: { ciProvider: 'jenkins', commitSha: 'abcdef1', branch, baseBranch: 'main', trigger: 'pull_request', mergeBase: MERGE_BASE },
        xml: '<testsuite name="s"><testcase classname="s" name="t" time="0.01"/></testsuite>',
      },
    });
    expect(res.status, res.text).toBe(202);
    expect((await runOn(branch)).mergeBase).toBe(STORED);
  });

  it('OTLP: vcs.ref.base.revision, kept when a later request of the same trace does not repeat it', async () => {
    const branch = uniqueBranch('otlp');
    const traceId = randomBytes(16).toString('hex');
    const runSpanId = randomBytes(8).toString('hex');
    const t = Date.parse('2026-11-20T10:00:00Z');
    const nanos = (ms: number): string => `${ms}000000`;
    const request = (attributes: Record<string, string>, spans: Record<string, unknown>[]) => ({
      resourceSpans: [
        {
          resource: { attributes: Object.entries({ 'vcs.ref.head.name': branch, 'vcs.ref.head.revision': 'abcdef1234', ...attributes }).map(([key, v]) => ({ key, value: { stringValue: v } })) },
          scopeSpans: [{ spans: spans.map((s) => ({ traceId, kind: 1, startTimeUnixNano: nanos(t), endTimeUnixNano: nanos(t + 50), ...s })) }],
        },
      ],
    });
    // First the test cases with the merge base (no run span yet), processed before the next part arrives ...
    const cases = await td.request('POST', '/v1/traces', {
      body: request({ 'vcs.ref.base.name': 'main', 'vcs.ref.base.revision': MERGE_BASE }, [
        { spanId: randomBytes(8).toString('hex'), parentSpanId: runSpanId, name: 'test.case', attributes: [{ key: 'test.title', value: { stringValue: 'adds' } }] },
      ]),
    });
    expect(cases.status, cases.text).toBe(202);
    await td.settled();
    // ... then the run span, from a resource that does not say it: the stored run keeps it.
    const runSpan = await td.request('POST', '/v1/traces', { body: request({}, [{ spanId: runSpanId, name: 'test.run', endTimeUnixNano: nanos(t + 100) }]) });
    expect(runSpan.status, runSpan.text).toBe(202);
    await td.settled();
    const detail = await runOn(branch);
    expect(detail).toMatchObject({ mergeBase: STORED, finishedAt: new Date(t + 100).toISOString() });
    expect(detail.executions).toHaveLength(1);
  });
});

describe('the reporter', () => {
  it('sends the merge base of a pull request run from its git checkout; none without a base branch; SERVICE_MERGE_BASE wins', async () => {
    const repo = makeForkedRepo(fs.mkdtempSync(path.join(tmp, 'repo-')));
    const now = Date.now();
    const run: ReporterRun = {
      executions: [{ filePath: 'src/cart.test.ts', suite: 'cart', title: 'adds an item', status: 'pass', attempt: 1, startedAt: now, durationMs: 3 }],
      startedAt: now,
      rootDir: repo.dir,
    };
    const send = async (branch: string, extra: Record<string, string>): Promise<void> => {
      const lines: string[] = [];
      const env = {
        SERVICE_TOKEN: td.token,
        SERVICE_ENDPOINT: td.url,
        SERVICE_BUFFER_DIR: path.join(tmp, 'buffer'),
        GITHUB_ACTIONS: 'true',
        GITHUB_SHA: 'abcdef1234567890abcdef1234567890abcdef12',
        GITHUB_REF_NAME: branch,
        ...extra,
      };
      const result = await sendRun(run, { env, cwd: repo.dir, log: (l) => lines.push(l) });
      expect(result.delivered, lines.join('\n')).toBe(true);
    };
    const pullRequest = (branch: string) => ({ GITHUB_EVENT_NAME: 'pull_request', GITHUB_HEAD_REF: branch, GITHUB_BASE_REF: 'main' });

    const pr = uniqueBranch('reporter-pr');
    await send(pr, pullRequest(pr)); // OTLP, the default transport
    const push = uniqueBranch('reporter-push');
    await send(push, { GITHUB_EVENT_NAME: 'push' });
    const explicit = uniqueBranch('reporter-explicit');
    await send(explicit, { ...pullRequest(explicit), SERVICE_MERGE_BASE: MERGE_BASE, SERVICE_TRANSPORT: 'json' });

    expect(await runOn(pr)).toMatchObject({ branch: pr, mergeBase: repo.fork });
    expect((await runOn(push)).mergeBase).toBeNull();
    expect((await runOn(explicit)).mergeBase).toBe(STORED);
  });
});

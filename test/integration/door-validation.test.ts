// Values the worker or ClickHouse would reject are refused at the door (issue 11): each poison gets
// 400 invalid_payload naming its path (lone surrogates are stored as U+FFFD instead), nothing is
// accepted and then lost, and valid batches sent around the poisons are stored. A job that fails
// once is parked dead at once (max attempts 1), so a poison that slipped through shows as dead.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

type Res = Awaited<ReturnType<TestDaemon['request']>>;

let td: TestDaemon;

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000', SERVICE_QUEUE_MAX_ATTEMPTS: '1' } });
});

afterAll(async () => {
  await td?.close();
});

const hex = (n: number): string => randomBytes(n).toString('hex');
const branchName = (label: string): string => `${label}-${hex(4)}`;

function expectRefused(res: Res, path: string): void {
  expect(res.status, res.text).toBe(400);
  expect(res.json.error).toBe('invalid_payload');
  const paths = (res.json.issues ?? []).map((i: { path: string }) => i.path);
  expect(paths, res.text).toContain(path);
}

async function runsOn(branch: string): Promise<any[]> {
  const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}&limit=100`);
  expect(res.status, res.text).toBe(200);
  return res.json.items;
}

/** Waits until a run on `branch` is stored and returns it with its executions. */
async function storedRun(branch: string): Promise<any> {
  await td.settled();
  const [run] = await td.waitFor(async () => {
    const items = await runsOn(branch);
    return items.length > 0 ? items : undefined;
  }, 20_000);
  const res = await td.request('GET', `/v1/runs/${run.id}`);
  expect(res.status, res.text).toBe(200);
  return res.json;
}

async function deadJobs(): Promise<number> {
  const res = await td.request('GET', '/v1/admin/stats', { token: td.adminToken });
  expect(res.status, res.text).toBe(200);
  return res.json.queue.dead;
}

function otlpBody(opts: { branch: string; caseAttrs?: unknown[]; resourceAttrs?: unknown[]; start?: string | number; end?: string | number }): unknown {
  const traceId = hex(16);
  const runSpan = hex(8);
  const t0 = 1_795_255_200_000_000_000n;
  return {
    resourceSpans: [
      {
        resource: {
          attributes: [
            { key: 'vcs.ref.head.revision', value: { stringValue: 'abcdef1234' } },
            { key: 'vcs.ref.head.name', value: { stringValue: opts.branch } },
            { key: 'ci.provider', value: { stringValue: 'github_actions' } },
            ...(opts.resourceAttrs ?? []),
          ],
        },
        scopeSpans: [
          {
            spans: [
              { traceId, spanId: runSpan, name: 'test.run', startTimeUnixNano: String(t0), endTimeUnixNano: String(t0 + 1_000_000_000n) },
              {
                traceId,
                spanId: hex(8),
                parentSpanId: runSpan,
                name: 'test.case',
                startTimeUnixNano: opts.start ?? String(t0 + 100_000_000n),
                endTimeUnixNano: opts.end ?? String(t0 + 200_000_000n),
                attributes: [
                  { key: 'test.case.name', value: { stringValue: 'cart > adds an item' } },
                  { key: 'code.file.path', value: { stringValue: 'src/cart.test.ts' } },
                  { key: 'test.case.result.status', value: { stringValue: 'pass' } },
                  ...(opts.caseAttrs ?? []),
                ],
              },
            ],
          },
        ],
      },
    ],
  };
}

function junitBody(branch: string, xml: string): unknown {
  return {
    idempotencyKey: `junit-${hex(8)}`,
    resource: { ciProvider: 'jenkins', commitSha: 'abcdef1234', branch, trigger: 'push' },
    xml,
  };
}

/** JSON of an object nested `depth` levels, built as text (JSON.stringify itself recurses). */
function nestedJson(depth: number): string {
  return `${'{"a":'.repeat(depth)}{"leaf":1}${'}'.repeat(depth)}`;
}

/** A native batch as JSON text with `params` of its single execution nested `depth` levels. */
function deepParamsBody(depth: number, branch = branchName('deep')): string {
  const exec = { filePath: 'a.ts', suite: '', title: 't', status: 'pass', startedAt: Date.now(), durationMs: 1, params: { PARAMS: 1 } };
  return JSON.stringify(nativeBatch({ resource: { branch }, executions: [exec] })).replace('{"PARAMS":1}', nestedJson(depth));
}

describe('lone surrogates are stored as U+FFFD (defect 1)', () => {
  it('native: a title, a suite, an error message and an attribute key with lone surrogates', async () => {
    const branch = branchName('surrogate-native');
    const batch = nativeBatch({
      resource: { branch },
      executions: [
        {
          filePath: 'src/a.test.ts',
          suite: 'suite \udc00',
          title: 'renders \ud800 emoji',
          status: 'fail',
          startedAt: Date.parse('2026-11-20T10:00:00Z'),
          durationMs: 5,
          error: { message: 'bad \ud83d' },
          attributes: { 'k\ud800': 'v\udfff' },
          params: { 'p\ud800': ['x\udc00'] },
        },
      ],
    });
    const res = await td.request('POST', '/v1/ingest', { body: batch });
    expect(res.status, res.text).toBe(202);
    const run = await storedRun(branch);
    expect(run.executions).toHaveLength(1);
    expect(run.executions[0].title).toBe('renders \ufffd emoji');
    expect(run.executions[0].suite).toBe('suite \ufffd');
    expect(run.executions[0].errorMessage).toBe('bad \ufffd');
    expect(await deadJobs()).toBe(0);
  });

  it('OTLP: a case attribute and a title with lone surrogates', async () => {
    const branch = branchName('surrogate-otlp');
    const body = otlpBody({
      branch,
      caseAttrs: [
        { key: 'test.title', value: { stringValue: 'adds \ud800 item' } },
        { key: 'browser', value: { stringValue: 'chrome \udc00' } },
      ],
    });
    const res = await td.request('POST', '/v1/traces', { body });
    expect(res.status, res.text).toBe(202);
    const run = await storedRun(branch);
    expect(run.executions.map((e: any) => e.title)).toEqual(['adds \ufffd item']);
    expect(await deadJobs()).toBe(0);
  });

  it('JUnit: a test case name with a lone surrogate (as a character reference in the XML string)', async () => {
    const branch = branchName('surrogate-junit');
    const xml = `<testsuite name="s"><testcase classname="c" name="case \ud800 one" time="0.5"/></testsuite>`;
    const res = await td.request('POST', '/v1/ingest/junit', { body: junitBody(branch, xml) });
    expect(res.status, res.text).toBe(202);
    const run = await storedRun(branch);
    expect(run.executions.map((e: any) => e.title)).toEqual(['case \ufffd one']);
    expect(await deadJobs()).toBe(0);
  });
});

describe('times outside the storable window are refused (defect 1)', () => {
  it('native: run.startedAt 1e300 and as a 23-digit string, an execution startedAt, a span startedAt', async () => {
    expectRefused(await td.request('POST', '/v1/ingest', { body: nativeBatch({ run: { startedAt: 1e300 } }) }), 'run.startedAt');
    expectRefused(
      await td.request('POST', '/v1/ingest', { body: nativeBatch({ run: { startedAt: '99999999999999999999999' } }) }),
      'run.startedAt',
    );
    expectRefused(await td.request('POST', '/v1/ingest', { body: nativeBatch({ run: { finishedAt: '+275760-09-13T00:00:00.000Z' } }) }), 'run.finishedAt');
    const exec = (over: Record<string, unknown>) => ({ filePath: 'a.ts', suite: '', title: 't', status: 'pass', startedAt: Date.now(), durationMs: 1, ...over });
    expectRefused(
      await td.request('POST', '/v1/ingest', { body: nativeBatch({ executions: [exec({}), exec({ startedAt: 8.64e15 })] }) }),
      'executions.1.startedAt',
    );
    expectRefused(
      await td.request('POST', '/v1/ingest', { body: nativeBatch({ executions: [exec({ startedAt: '1969-12-31T23:59:59Z' })] }) }),
      'executions.0.startedAt',
    );
    const span = { spanId: 's1', name: 'step', kind: 'step', status: 'ok', startedAt: 1e20, durationMs: 1 };
    expectRefused(
      await td.request('POST', '/v1/ingest', { body: nativeBatch({ executions: [exec({ spans: [span] })] }) }),
      'executions.0.spans.0.startedAt',
    );
  });

  it('native: an execution that would end past the window (huge durationMs) is refused', async () => {
    const exec = { filePath: 'a.ts', suite: '', title: 't', status: 'pass', startedAt: Date.now(), durationMs: 1e300 };
    expectRefused(await td.request('POST', '/v1/ingest', { body: nativeBatch({ executions: [exec] }) }), 'executions.0.durationMs');
  });

  it('OTLP: startTimeUnixNano 1e30 (number and string) is refused naming the span field', async () => {
    const path = 'resourceSpans.0.scopeSpans.0.spans.1.startTimeUnixNano';
    expectRefused(await td.request('POST', '/v1/traces', { body: otlpBody({ branch: branchName('otlp-time'), start: 1e30 }) }), path);
    expectRefused(
      await td.request('POST', '/v1/traces', { body: otlpBody({ branch: branchName('otlp-time'), start: '1000000000000000000000000000000' }) }),
      path,
    );
    expectRefused(
      await td.request('POST', '/v1/traces', { body: otlpBody({ branch: branchName('otlp-time'), end: '9999999999999999999' }) }),
      'resourceSpans.0.scopeSpans.0.spans.1.endTimeUnixNano',
    );
  });

  it('JUnit: time="1e300" and a timestamp past the window are read as unusable (0 / now), not refused', async () => {
    // Real reports carry such values (container-structure-test writes nanoseconds as seconds);
    // the sender cannot fix them, so they get the contract's fallbacks instead of a 400.
    const branch = branchName('junit-time');
    const before = Date.now();
    const xml = '<testsuite name="s" timestamp="2999-01-01T00:00:00"><testcase name="a" time="0.25"/><testcase name="b" time="1e300"/></testsuite>';
    const res = await td.request('POST', '/v1/ingest/junit', { body: junitBody(branch, xml) });
    expect(res.status, res.text).toBe(202);
    const run = await storedRun(branch);
    const byTitle = [...run.executions].sort((x: any, y: any) => x.title.localeCompare(y.title));
    expect(byTitle.map((e: any) => [e.title, e.durationMs])).toEqual([
      ['a', 250],
      ['b', 0],
    ]);
    expect(Date.parse(run.startedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(run.startedAt)).toBeLessThan(Date.UTC(2100, 0, 1));
    expect(await deadJobs()).toBe(0);
  });
});

describe('integers that would wrap in their column are refused (defect 3)', () => {
  it('native: prNumber 1e15, shardIndex 5e15, shardTotal 70000, attempt 70000, durationMs 2^32', async () => {
    expectRefused(await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { prNumber: 1e15 } }) }), 'resource.prNumber');
    expectRefused(await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { shardIndex: 5e15 } }) }), 'resource.shardIndex');
    expectRefused(await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { shardTotal: 70_000 } }) }), 'resource.shardTotal');
    const exec = (over: Record<string, unknown>) => ({ filePath: 'a.ts', suite: '', title: 't', status: 'pass', startedAt: Date.now(), durationMs: 1, ...over });
    expectRefused(await td.request('POST', '/v1/ingest', { body: nativeBatch({ executions: [exec({ attempt: 70_000 })] }) }), 'executions.0.attempt');
    expectRefused(await td.request('POST', '/v1/ingest', { body: nativeBatch({ executions: [exec({ durationMs: 2 ** 32 })] }) }), 'executions.0.durationMs');
  });

  it('native: the largest values each column holds are stored as sent', async () => {
    const branch = branchName('int-max');
    const exec = { filePath: 'a.ts', suite: '', title: 't', status: 'pass', startedAt: Date.now(), durationMs: 2 ** 32 - 1, attempt: 65_535 };
    const res = await td.request('POST', '/v1/ingest', {
      body: nativeBatch({ resource: { branch, prNumber: 2 ** 32 - 1, shardIndex: 65_535, shardTotal: 65_535 }, executions: [exec] }),
    });
    expect(res.status, res.text).toBe(202);
    const run = await storedRun(branch);
    expect(run.prNumber).toBe(2 ** 32 - 1);
    expect(run.executions[0].attempt).toBe(65_535);
    expect(run.executions[0].durationMs).toBe(2 ** 32 - 1);
  });

  it('OTLP: a PR number and an attempt that do not fit are refused', async () => {
    const pr = await td.request('POST', '/v1/traces', {
      body: otlpBody({ branch: branchName('otlp-int'), resourceAttrs: [{ key: 'vcs.change.id', value: { intValue: '1000000000000000' } }] }),
    });
    expectRefused(pr, 'resource.prNumber');
    const attempt = await td.request('POST', '/v1/traces', {
      body: otlpBody({ branch: branchName('otlp-int'), caseAttrs: [{ key: 'test.attempt', value: { intValue: 5e15 } }] }),
    });
    expectRefused(attempt, 'executions.0.attempt');
  });
});

describe('deep nesting is refused with 400, not a 500 (defect 4)', () => {
  it('native: params nested 5,000 levels', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: deepParamsBody(5000), headers: { 'content-type': 'application/json' } });
    expectRefused(res, 'executions.0.params');
    expect(res.json.issues[0].message).toMatch(/deep/);
  });

  it('OTLP: test.params JSON nested 5,000 levels', async () => {
    const res = await td.request('POST', '/v1/traces', {
      body: otlpBody({ branch: branchName('otlp-deep'), caseAttrs: [{ key: 'test.params', value: { stringValue: nestedJson(5000) } }] }),
    });
    expectRefused(res, 'executions.0.params');
  });

  it('native: an attribute value nested past the limit is refused naming it (5,000 levels too: a 400, not a 500)', async () => {
    const branch = branchName('deep-attr');
    const body = (depth: number) =>
      JSON.stringify(nativeBatch({ resource: { branch }, executions: [{ filePath: 'a.ts', suite: '', title: 't', status: 'pass', startedAt: Date.now(), durationMs: 1, attributes: { k: 'DEEP' } }] })).replace(
        '"DEEP"',
        nestedJson(depth),
      );
    for (const depth of [100, 5000]) {
      expectRefused(await td.request('POST', '/v1/ingest', { body: body(depth), headers: { 'content-type': 'application/json' } }), 'executions.0.attributes.k');
    }
    // nestedJson(30) is 31 levels of objects: the most an attribute value may have (the record is the 32nd).
    const ok = await td.request('POST', '/v1/ingest', { body: body(30), headers: { 'content-type': 'application/json' } });
    expect(ok.status, ok.text).toBe(202);
    const run = await storedRun(branch);
    expect(run.executions).toHaveLength(1);
    expect(await deadJobs()).toBe(0);
  });

  it('params at the depth limit are stored', async () => {
    const branch = branchName('deep-ok');
    const res = await td.request('POST', '/v1/ingest', { body: deepParamsBody(30, branch), headers: { 'content-type': 'application/json' } });
    expect(res.status, res.text).toBe(202);
    const run = await storedRun(branch);
    expect(run.executions).toHaveLength(1);
  });
});

describe('around the poisons', () => {
  it('valid batches sent between refused ones are all stored and no job is dead', async () => {
    const branch = branchName('around');
    const poisons = [
      nativeBatch({ resource: { branch, prNumber: 1e15 } }),
      nativeBatch({ resource: { branch }, run: { startedAt: 1e300 } }),
      nativeBatch({ resource: { branch, shardIndex: 5e15 } }),
    ];
    const good = [nativeBatch({ resource: { branch } }), nativeBatch({ resource: { branch } }), nativeBatch({ resource: { branch } })];
    for (let i = 0; i < 3; i++) {
      expect((await td.request('POST', '/v1/ingest', { body: good[i] })).status).toBe(202);
      expect((await td.request('POST', '/v1/ingest', { body: poisons[i] })).status).toBe(400);
    }
    await td.settled();
    await td.waitFor(async () => (await runsOn(branch)).length === 3 || undefined, 20_000);
    expect(await deadJobs()).toBe(0);
  });

  it('OTLP: one bad trace in a request refuses the whole request (nothing of it is enqueued)', async () => {
    const branch = branchName('otlp-all-or-nothing');
    const good = otlpBody({ branch }) as any;
    const bad = otlpBody({ branch, resourceAttrs: [{ key: 'test.shard.index', value: { intValue: 70_000 } }] }) as any;
    const body = { resourceSpans: [...good.resourceSpans, ...bad.resourceSpans] };
    expectRefused(await td.request('POST', '/v1/traces', { body }), 'resource.shardIndex');
    // A later valid request on the same branch is the only run there.
    expect((await td.request('POST', '/v1/traces', { body: otlpBody({ branch }) })).status).toBe(202);
    await storedRun(branch);
    expect(await runsOn(branch)).toHaveLength(1);
  });
});

// Flakemetry's own clients, unchanged, pointed at Flakehouse (issue 12). Each case sends what one of
// its clients sends (the bodies are written here from reading its source: the SDK's recorder and
// IngestClient, `flakemetry junit` / `import`, the Jest reporter, the artifact uploader, the
// pr-comment and gate actions, `flakemetry flaky`) to the real daemon, chDB and an S3-compatible store.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertComment } from '../../client/src/cli/pr.js';
import { REASON_CODES } from '../../src/domain/score.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startHttpSink } from '../helpers/peers.js';
import { presignedUrlAccepts, startTestS3, type TestS3 } from '../helpers/s3.js';

const HOUR = 3_600_000;
const sha = (): string => randomBytes(20).toString('hex');
const key = (label: string): string => `${label}-${randomBytes(6).toString('hex')}`;

let s3: TestS3;
let td: TestDaemon;

beforeAll(async () => {
  s3 = await startTestS3();
  td = await startTestDaemon({ env: { ...s3.env, SERVICE_RATE_LIMIT_MAX: '100000' } });
}, 60_000);

afterAll(async () => {
  await td?.close();
  await s3?.close();
});

interface StoredExecution {
  title: string;
  status: string;
  attempt: number;
  retry_of: string | null;
  error_type: string;
  error_message: string;
  error_stack: string;
  params: string;
  artifacts: string;
  attributes: string;
  spans: string;
  trace_id: string;
  pr_number: number | null;
}

async function storedExecutions(commitSha: string): Promise<StoredExecution[]> {
  const store = td.daemon.store;
  return store.query<StoredExecution>(
    `SELECT title, status, attempt, retry_of, error_type, error_message, error_stack, params, artifacts, attributes, spans, trace_id, pr_number
     FROM ${store.table('executions')} WHERE commit_sha = {sha:String} ORDER BY started_at, title`,
    { sha: commitSha },
  );
}

async function runOf(commitSha: string): Promise<any> {
  const item = await td.waitFor(async () => (await td.request('GET', `/v1/runs?limit=100`)).json.items.find((r: any) => r.commitSha === commitSha));
  return (await td.request('GET', `/v1/runs/${item.id}`)).json;
}

describe('POST /v1/ingest: null is absent, as in Flakemetry’s `.nullish()` contract', () => {
  it('`flakemetry junit`: a <failure> without a type attribute or text sends error.type and error.stack null', async () => {
    // TestRunRecorder.toIngestBatch after the contract's zod parse: passes carry no error; the
    // JUnit mapping gives failures `type: null` without a type attribute and `stack: null` without text.
    const commitSha = sha();
    const at = '2026-11-20T10:00:00.000Z';
    await td.ingest({
      contractVersion: '0.1.0',
      idempotencyKey: key('fm-junit'),
      resource: { ciProvider: 'github_actions', ciRunId: '123', commitSha, branch: 'main', trigger: 'push' },
      run: { status: 'failed', startedAt: at, finishedAt: '2026-11-20T10:00:05.000Z' },
      executions: [
        { filePath: 'tests/test_api.py', suite: 'tests.test_api', title: 'test_ok', status: 'pass', attempt: 1, startedAt: at, durationMs: 12 },
        { filePath: 'tests/test_api.py', suite: 'tests.test_api', title: 'test_bare', status: 'fail', attempt: 1, startedAt: at, durationMs: 3, error: { type: null, message: 'assert 1 == 2', stack: null } },
        { filePath: 'tests/test_api.py', suite: 'tests.test_api', title: 'test_typed', status: 'fail', attempt: 1, startedAt: at, durationMs: 4, error: { type: 'AssertionError', message: 'boom', stack: 'Traceback\n  line 3' } },
      ],
    });
    const rows = await storedExecutions(commitSha);
    expect(rows.map((r) => [r.title, r.status, r.error_type, r.error_message, r.error_stack])).toEqual([
      ['test_bare', 'fail', '', 'assert 1 == 2', ''],
      ['test_ok', 'pass', '', '', ''],
      ['test_typed', 'fail', 'AssertionError', 'boom', 'Traceback\n  line 3'],
    ]);
  });

  it('`flakemetry import`: junitToIngestBatch sends `error: null` on every passing case', async () => {
    const commitSha = sha().slice(0, 40);
    const at = '2026-10-01T08:00:00.000Z';
    await td.ingest({
      contractVersion: '0.1.0',
      idempotencyKey: `junit-import-${randomBytes(16).toString('hex')}`,
      resource: { ciProvider: 'local', commitSha, branch: 'main', trigger: 'manual' },
      run: { status: 'passed', startedAt: at, finishedAt: at },
      executions: [
        { filePath: 'com/acme/CartTest', suite: 'com.acme.CartTest', title: 'adds', status: 'pass', attempt: 1, startedAt: at, durationMs: 5, error: null },
        { filePath: 'com/acme/CartTest', suite: 'com.acme.CartTest', title: 'skips', status: 'skip', attempt: 1, startedAt: at, durationMs: 0, error: null },
      ],
    });
    const run = await runOf(commitSha);
    expect(run.counts).toMatchObject({ total: 2, passed: 1, skipped: 1 });
    expect(run.executions.map((e: any) => e.errorMessage)).toEqual([null, null]);
  });

  it('the Jest reporter’s JSON transport: a failing test sends `type: null`', async () => {
    const commitSha = sha();
    const at = Date.parse('2026-11-20T11:00:00Z');
    await td.ingest({
      contractVersion: '0.1.0',
      idempotencyKey: key('fm-jest'),
      resource: { ciProvider: 'github_actions', ciRunId: '77', commitSha, branch: 'feature/x', prNumber: 9, trigger: 'pull_request' },
      run: { status: 'failed', startedAt: new Date(at).toISOString(), finishedAt: new Date(at + 900).toISOString() },
      executions: [
        {
          filePath: 'src/cart.test.js',
          suite: 'cart > totals',
          title: 'sums',
          status: 'fail',
          attempt: 1,
          startedAt: new Date(at).toISOString(),
          durationMs: 7,
          error: { type: null, message: 'expect(received).toBe(expected) Expected: 3 Received: 4', stack: 'Error: expect(received).toBe(expected)\n    at Object.<anonymous> (src/cart.test.js:5:18)' },
        },
      ],
    });
    const [row] = await storedExecutions(commitSha);
    expect(row).toMatchObject({ status: 'fail', error_type: '', pr_number: 9 });
    expect(row!.error_stack).toContain('cart.test.js:5:18');
  });

  it('takes null in every optional field, nested JSON attributes, spans without kind or status, and a forward retryOfIndex', async () => {
    const commitSha = sha();
    const at = Date.parse('2026-11-20T12:00:00Z');
    const res = await td.request('POST', '/v1/ingest', {
      body: {
        contractVersion: '0.1.0',
        idempotencyKey: key('fm-nulls'),
        resource: { ciProvider: 'github_actions', ciRunId: null, commitSha, branch: 'main', prNumber: null, trigger: 'push', shardIndex: null, shardTotal: null },
        run: { status: 'passed', startedAt: at, finishedAt: null, traceId: null },
        executions: [
          {
            filePath: 'e2e/checkout.spec.ts',
            suite: 'checkout',
            title: 'pays',
            params: null,
            status: 'pass',
            attempt: 1,
            retryOfIndex: 1, // points forward: Flakemetry ignores the link
            startedAt: at,
            durationMs: 40,
            error: null,
            artifacts: [{ name: 'trace', contentType: 'application/zip', path: 'test-results/trace.zip', key: null, sizeBytes: null }],
            attributes: { browser: 'chromium', viewport: { width: 1280, height: 720 }, tags: ['@smoke', null], retries: 0, headless: true, note: null },
            traceId: null,
            spanId: 'x0c',
            spans: [
              { spanId: 'x0s0', parentSpanId: 'x0c', name: 'page.goto', kind: 'browser', status: 'ok', startedAt: at, durationMs: 10, attributes: { url: '/cart', nested: { a: [1, 2] } }, error: null },
              { spanId: 'x0s1', parentSpanId: null, name: 'expect.toBeVisible', startedAt: at + 10, durationMs: 3, attributes: null, error: null },
            ],
          },
          { filePath: 'e2e/checkout.spec.ts', suite: 'checkout', title: 'refunds', params: { currency: 'EUR', amount: null }, status: 'pass', attempt: null, retryOfIndex: null, startedAt: at + 50, durationMs: 20, error: null, artifacts: null, attributes: null, traceId: null, spanId: null, spans: null },
        ],
      },
    });
    expect(res.status, res.text).toBe(202);
    await td.waitFor(async () => (await storedExecutions(commitSha)).length === 2);
    const [pays, refunds] = await storedExecutions(commitSha);
    expect(pays!.retry_of ?? '').toBe('');
    expect(pays!.pr_number).toBeNull();
    expect(JSON.parse(pays!.artifacts)).toEqual([{ name: 'trace', contentType: 'application/zip', path: 'test-results/trace.zip' }]);
    // Nested values are kept as their JSON text; null values are left out.
    expect(JSON.parse(pays!.attributes)).toEqual({ browser: 'chromium', viewport: '{"width":1280,"height":720}', tags: '["@smoke",null]', retries: 0, headless: true });
    const spans = JSON.parse(pays!.spans);
    expect(spans).toEqual([
      { spanId: 'x0s0', parentSpanId: 'x0c', name: 'page.goto', kind: 'browser', status: 'ok', startedAt: at, durationMs: 10, attributes: { url: '/cart', nested: '{"a":[1,2]}' } },
      // Flakemetry's defaults for a span that names neither.
      { spanId: 'x0s1', name: 'expect.toBeVisible', kind: 'other', status: 'unset', startedAt: at + 10, durationMs: 3 },
    ]);
    // params are identity: kept whole, nulls inside included.
    expect(JSON.parse(refunds!.params)).toEqual({ currency: 'EUR', amount: null });
    expect([refunds!.artifacts, refunds!.attributes, refunds!.spans, refunds!.trace_id]).toEqual(['', '', '', '']);
    expect(refunds!.attempt).toBe(1); // attempt: null is the first attempt
    const run = await runOf(commitSha);
    expect(run.counts).toMatchObject({ total: 2, passed: 2, flaky: 0 });
    // finishedAt null = left out: the end of the last execution, as for a batch without it.
    expect(run.finishedAt).toBe(new Date(at + 70).toISOString());
  });

  it('still refuses null where Flakemetry does (a required field) and names the path', async () => {
    const res = await td.request('POST', '/v1/ingest', {
      body: {
        contractVersion: '0.1.0',
        idempotencyKey: key('fm-required'),
        resource: { ciProvider: 'local', commitSha: 'abcdef1', branch: null, trigger: 'push' },
        run: { status: 'passed', startedAt: Date.now() },
        executions: [{ filePath: 'a', suite: 'a', title: 't', status: 'fail', startedAt: Date.now(), durationMs: 1, error: { type: null, message: null } }],
      },
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_payload');
    expect(res.json.issues.map((i: { path: string }) => i.path).sort()).toEqual(['executions.0.error.message', 'resource.branch']);
  });

  it('a nested attribute value deeper than the door allows is a 400 naming it, even one too deep for the stack', async () => {
    for (const depth of [40, 100_000]) {
      const res = await td.request('POST', '/v1/ingest', {
        body: `{"contractVersion":"0.1.0","idempotencyKey":"${key('fm-deep')}","resource":{"ciProvider":"local","commitSha":"abcdef1","branch":"main","trigger":"push"},"run":{"status":"passed","startedAt":1700000000000},"executions":[{"filePath":"a","suite":"a","title":"t","status":"pass","startedAt":1700000000000,"durationMs":1,"attributes":{"deep":${'['.repeat(depth)}${']'.repeat(depth)}}}]}`,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, String(depth)).toBe(400);
      expect(res.json.issues.map((i: { path: string }) => i.path), String(depth)).toEqual(['executions.0.attributes.deep']);
    }
  });

  it('a contractVersion major we do not know is refused with the majors we take and what to do', async () => {
    const res = await td.request('POST', '/v1/ingest', {
      body: { contractVersion: '2.0.0', idempotencyKey: key('fm-v2'), resource: { ciProvider: 'local', commitSha: 'abcdef1', branch: 'main', trigger: 'push' }, run: { status: 'passed', startedAt: Date.now() }, executions: [] },
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('unsupported_contract_version');
    expect(res.json.message).toContain('contractVersion 2.0.0 is not supported');
    expect(res.json.message).toContain('majors 0 and 1');
    expect(res.json.message).toContain('Send contractVersion 0.1.0');
  });
});

describe('POST /v1/artifacts/presign: the Flakemetry SDK reads items[].uploadUrl', () => {
  it('answers uploadUrl, takes the SDK’s PUT (content-type only) and stores the bytes the run then serves', async () => {
    const idempotencyKey = key('fm-artifacts');
    const shot = new Uint8Array(Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(4000)]));
    // uploadArtifacts(): presign, then for each item match by (executionIndex, name) and PUT item.uploadUrl.
    const presign = await td.request('POST', '/v1/artifacts/presign', {
      body: { idempotencyKey, artifacts: [{ executionIndex: 0, name: 'screenshot', contentType: 'image/png', sizeBytes: shot.byteLength }] },
    });
    expect(presign.status, presign.text).toBe(200);
    const item = presign.json.items[0];
    expect(item).toMatchObject({ executionIndex: 0, name: 'screenshot' });
    expect(typeof item.uploadUrl).toBe('string');
    expect(item.uploadUrl).toBe(item.url);
    // The SDK sends content-type itself and fetch adds content-length: both signed, both match.
    expect(presignedUrlAccepts(item.uploadUrl, 'PUT', { 'content-type': 'image/png', 'content-length': String(shot.byteLength) }, s3.secretAccessKey)).toBe(true);
    const put = await fetch(item.uploadUrl, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: shot });
    expect(put.ok).toBe(true);

    // Then the batch, with ref.key and ref.sizeBytes set by the uploader.
    const commitSha = sha();
    const at = Date.parse('2026-11-20T13:00:00Z');
    await td.ingest({
      contractVersion: '0.1.0',
      idempotencyKey,
      resource: { ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push' },
      run: { status: 'failed', startedAt: at, finishedAt: at + 100 },
      executions: [
        {
          filePath: 'e2e/login.spec.ts',
          suite: 'login',
          title: 'shows the form',
          status: 'fail',
          attempt: 1,
          startedAt: at,
          durationMs: 90,
          error: { message: 'locator not visible' },
          artifacts: [{ name: 'screenshot', contentType: 'image/png', path: 'test-results/login/shot.png', key: item.key, sizeBytes: shot.byteLength }],
        },
      ],
    });
    const run = await runOf(commitSha);
    const artifact = run.executions[0].artifacts[0];
    expect(artifact).toMatchObject({ name: 'screenshot', key: item.key, sizeBytes: shot.byteLength });
    const got = await fetch(artifact.url);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.from(shot))).toBe(true);
  });
});

describe('PR comment, gate, flaky board: what Flakemetry’s actions and CLI read', () => {
  const pr = { prNumber: 31, trigger: 'pull_request', branch: 'feature/compat', baseBranch: 'main' };
  const flappyFile = 'src/flappy.test.ts';
  let prCommit = '';
  let flappyId = '';
  let stableId = '';

  beforeAll(async () => {
    // main: `flappy` fails then passes on a retry in every run; `stable` always passes.
    const now = Date.now();
    const batches = [];
    for (let r = 0; r < 6; r++) {
      const at = now - (10 - r) * HOUR;
      batches.push({
        contractVersion: '0.1.0',
        idempotencyKey: key(`fm-main-${r}`),
        resource: { ciProvider: 'github_actions', commitSha: sha(), branch: 'main', trigger: 'push' },
        run: { status: 'passed', startedAt: at },
        executions: [
          { filePath: flappyFile, suite: 'flappy', title: 'sometimes', status: 'fail', startedAt: at, durationMs: 5, error: { type: null, message: 'timeout', stack: null } },
          { filePath: flappyFile, suite: 'flappy', title: 'sometimes', status: 'pass', attempt: 2, retryOfIndex: 0, startedAt: at + 10, durationMs: 5, error: null },
          { filePath: 'src/stable.test.ts', suite: 'stable', title: 'always', status: 'pass', startedAt: at, durationMs: 5, error: null },
        ],
      });
    }
    // The PR: `fresh` fails for the first time, `flappy` fails again.
    prCommit = sha();
    const at = now - HOUR;
    batches.push({
      contractVersion: '0.1.0',
      idempotencyKey: key('fm-pr'),
      resource: { ciProvider: 'github_actions', ciRunId: null, commitSha: prCommit, ...pr, shardIndex: null, shardTotal: null },
      run: { status: 'failed', startedAt: at, finishedAt: null },
      executions: [
        { filePath: flappyFile, suite: 'flappy', title: 'sometimes', status: 'fail', startedAt: at, durationMs: 5, error: { type: null, message: 'timeout', stack: null } },
        { filePath: 'src/fresh.test.ts', suite: 'fresh', title: 'new behaviour', status: 'fail', startedAt: at, durationMs: 5, error: { type: 'AssertionError', message: 'expected 2, got 3', stack: null } },
        { filePath: 'src/stable.test.ts', suite: 'stable', title: 'always', status: 'pass', startedAt: at, durationMs: 5, error: null },
      ],
    });
    await td.ingest(...batches);
    const detail = await runOf(prCommit);
    for (const e of detail.executions) {
      if (e.title === 'sometimes') flappyId = e.testIdentityId;
      if (e.title === 'always') stableId = e.testIdentityId;
    }
  }, 120_000);

  it('summary and gate markdown carry Flakemetry’s markers, so its actions keep one sticky comment', async () => {
    const summary = await td.request('GET', `/v1/runs/summary?commitSha=${prCommit}`);
    expect(summary.status).toBe(200);
    // comment.mjs: `comments.find((c) => c.body.includes('<!-- flakemetry:pr-comment -->'))`.
    expect(summary.json.markdown.startsWith('<!-- service:pr-comment -->\n<!-- flakemetry:pr-comment -->\n')).toBe(true);
    const gate = await td.request('GET', `/v1/runs/gate?commitSha=${prCommit}&baseBranch=main&strictness=new`);
    expect(gate.json.markdown.startsWith('<!-- service:pr-gate -->\n<!-- flakemetry:pr-gate -->\n')).toBe(true);
  });

  it('topReason is the reason’s message (as Flakemetry sends it), topReasonCode its code', async () => {
    const summary = await td.request('GET', `/v1/runs/summary?commitSha=${prCommit}`);
    const flappy = summary.json.summary.tests.find((t: any) => t.title === 'sometimes');
    expect(REASON_CODES).toContain(flappy.topReasonCode);
    expect(flappy.topReasonCode).not.toBe('STABLE');
    expect(typeof flappy.topReason).toBe('string');
    expect(flappy.topReason).not.toBe(flappy.topReasonCode);
    expect(flappy.topReason).toMatch(/ /); // a sentence, not a code
  });

  it('`flakehouse comment` updates the comment Flakemetry’s action left instead of posting another', async () => {
    // GitHub's issue-comment API: the thread holds a comment by Flakemetry's pr-comment action.
    const legacy = { id: 4242, body: '<!-- flakemetry:pr-comment -->\n\n### Flakemetry — test report\n\nold', html_url: 'https://github.test/acme/shop/pull/31#c1' };
    const gh = await startHttpSink((req) => {
      if (req.method === 'GET') return { status: 200, body: [{ id: 1, body: 'LGTM', html_url: 'x' }, legacy] };
      if (req.method === 'PATCH') return { status: 200, body: { ...legacy, body: req.json.body } };
      return { status: 201, body: { id: 9999, body: req.json.body, html_url: 'y' } };
    });
    try {
      const body = (await td.request('GET', `/v1/runs/summary?commitSha=${prCommit}`)).json.markdown;
      const r = await upsertComment({ apiUrl: gh.url, token: 'ghs_x', repository: 'acme/shop', prNumber: 31 }, body);
      expect(r).toMatchObject({ action: 'updated', id: 4242 });
      expect(gh.requests.map((q) => `${q.method} ${q.path}`)).toEqual(['GET /repos/acme/shop/issues/31/comments?per_page=100', 'PATCH /repos/acme/shop/issues/comments/4242']);
      expect(gh.requests[1]!.json.body).toContain('<!-- flakemetry:pr-comment -->');
    } finally {
      await gh.close();
    }
  });

  it('an unknown gate strictness is `new` (200), so the gate action still blocks a new failure', async () => {
    // gate.mjs passes FLAKEMETRY_STRICTNESS through as is and reads any non-2xx as "not processed yet".
    for (const strictness of ['strict', 'NEW', '']) {
      const res = await td.request('GET', `/v1/runs/gate?commitSha=${prCommit}&baseBranch=main&strictness=${encodeURIComponent(strictness)}`);
      expect(res.status, strictness).toBe(200);
      expect(res.json.gate, strictness).toMatchObject({ strictness: 'new', verdict: 'block', newFailures: 1 });
    }
  });

  it('/v1/flaky lists quarantined and score-0 tests by default, so `flakemetry flaky --quarantined` finds them', async () => {
    const q = await td.request('POST', `/v1/tests/${flappyId}/quarantine`, { body: { decision: 'quarantined', reason: 'flaky on CI' } });
    expect(q.status).toBe(200);
    // fetchFlaky(): GET /v1/flaky?limit=20 (no includeQuarantined), then keeps rows with quarantined.
    const board = await td.request('GET', '/v1/flaky?limit=20');
    expect(board.status).toBe(200);
    const items = board.json.items as { testIdentityId: string; score: number; quarantined: boolean }[];
    expect(items.filter((i) => i.quarantined).map((i) => i.testIdentityId)).toEqual([flappyId]);
    // Every scored test, stable ones (score 0) at the bottom.
    const stable = items.find((i) => i.testIdentityId === stableId);
    expect(stable).toMatchObject({ score: 0, quarantined: false });
    expect(items.at(-1)!.score).toBe(0);
    expect(items.map((i) => i.score)).toEqual([...items.map((i) => i.score)].sort((a, b) => b - a));
    // Opting out still works.
    const hidden = await td.request('GET', '/v1/flaky?limit=20&includeQuarantined=false');
    expect(hidden.json.items.map((i: { testIdentityId: string }) => i.testIdentityId)).not.toContain(flappyId);
    const scoredOnly = await td.request('GET', '/v1/flaky?limit=20&minScore=0.01');
    expect(scoredOnly.json.items.map((i: { testIdentityId: string }) => i.testIdentityId)).not.toContain(stableId);
  });
});

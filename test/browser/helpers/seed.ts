// The history the browser suite looks at, ingested through the real API (native batches and a
// JUnit report) into a real daemon: tests that flip (a retry flake, a commit flake), a test broken
// from run 18 on with one error message (an error cluster, analysed once by a local fake of the
// Anthropic Messages API; its newest failure on main carries a screenshot and a trace uploaded to a
// local S3 server through presigned URLs), owners from CODEOWNERS, reruns of the same commit, and a
// PR run whose gate blocks on a new failure. Times are relative to now, so every health window holds them.
import { createHash } from 'node:crypto';
import type { TestDaemon } from '../../helpers/daemon.js';
import type { HttpSink, SinkRequest } from '../../helpers/peers.js';

export const MAIN_RUNS = 24;
/** The first main run the broken test fails in; it fails in every run after. */
export const BROKEN_FROM_RUN = 18;
export const PR_NUMBER = 42;
export const PR_COMMIT = 'feedface00000000000000000000000000c0ffee';
export const PR_BRANCH = 'feature/coupon-rework';
export const BROKEN_MESSAGE = 'AssertionError: expected cart total 90 to be 80 after applying coupon SAVE10';
const BROKEN_STACK = [
  BROKEN_MESSAGE,
  '    at applyCoupon (/home/runner/work/shop/shop/src/checkout/cart.ts:41:11)',
  '    at Object.<anonymous> (/home/runner/work/shop/shop/src/checkout/cart.test.ts:12:5)',
].join('\n');
export const RCA_ANSWER = {
  summary: 'The coupon discount is applied twice.',
  likelyCause: 'applyCoupon runs on every re-render of the cart.',
  suggestedAction: 'Make applyCoupon idempotent.',
  confidence: 0.82,
};
export const CODEOWNERS = ['* @shop/core', 'src/checkout/ @shop/payments', 'src/search/ @shop/search'].join('\n');

const HOUR = 3_600_000;

interface Exec {
  filePath: string;
  suite: string;
  title: string;
  status: 'pass' | 'fail' | 'skip' | 'flaky';
  attempt?: number;
  retryOfIndex?: number;
  startedAt: number;
  durationMs: number;
  error?: { message: string; stack?: string };
}

const STABLE: [string, string, string][] = [
  ['src/catalogue/list.test.ts', 'catalogue', 'lists the products'],
  ['src/catalogue/list.test.ts', 'catalogue', 'paginates the products'],
  ['src/auth/session.test.ts', 'session', 'logs in'],
  ['src/auth/session.test.ts', 'session', 'logs out'],
  ['src/checkout/cart.test.ts', 'cart', 'adds an item'],
  ['src/checkout/cart.test.ts', 'cart', 'removes an item'],
];
export const RETRY_FLAKE = { filePath: 'src/checkout/payment.test.ts', suite: 'payment', title: 'charges the card' };
export const COMMIT_FLAKE = { filePath: 'src/search/query.test.ts', suite: 'search', title: 'ranks exact matches first' };
export const BROKEN = { filePath: 'src/checkout/cart.test.ts', suite: 'cart', title: 'applies a coupon' };
export const NEW_FAILURE = { filePath: 'src/checkout/cart.test.ts', suite: 'cart', title: 'splits a coupon across items' };

export interface SeededHistory {
  t0: number;
  runCount: number;
  prNumber: number;
  prCommit: string;
  prBranch: string;
  /** Test identity ids by title. */
  testIds: Record<string, string>;
  /** The newest failing execution of the broken test on main: it has the RCA report and ARTIFACTS. */
  brokenExecutionId: string;
  rcaSummary: string;
}

/** The commit of main run r (the broken test fails from BROKEN_FROM_RUN on: its state's since-commit). */
export function commitOf(r: number): string {
  return createHash('sha1').update(`browser-commit-${r}`).digest('hex');
}

/** A 24×16 PNG (one colour): small, but a real image the browser decodes. */
export const SCREENSHOT_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAGklEQVR42mM4pqFBFcQwatCoQaMGjRpEGQIAcVihEAkFpQYAAAAASUVORK5CYII=',
  'base64',
);
export const ARTIFACTS = [
  { name: 'failure.png', contentType: 'image/png', body: SCREENSHOT_PNG },
  // An empty zip archive (its end-of-central-directory record alone), as a trace download.
  { name: 'trace.zip', contentType: 'application/zip', body: Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]) },
];

/** Run r (1-based) on main; a rerun repeats run r's commit ten minutes later. */
function mainRun(t0: number, r: number, rerun: boolean): Record<string, unknown> {
  const at = t0 + r * HOUR + (rerun ? 600_000 : 0);
  const executions: Exec[] = [];
  const push = (t: { filePath: string; suite: string; title: string }, status: Exec['status'], extra: Partial<Exec> = {}): number => {
    executions.push({ ...t, status, startedAt: at + executions.length, durationMs: 20 + executions.length * 3, ...extra });
    return executions.length - 1;
  };
  for (const [filePath, suite, title] of STABLE) push({ filePath, suite, title }, 'pass');
  // Fails on its first attempt every third run and passes on the retry.
  if (r % 3 === 0) {
    const first = push(RETRY_FLAKE, 'fail', { error: { message: 'TimeoutError: card processor did not answer within 5000 ms' } });
    push(RETRY_FLAKE, 'pass', { attempt: 2, retryOfIndex: first });
  } else push(RETRY_FLAKE, 'pass');
  // Fails on every fourth commit and passes when the same commit is run again.
  push(COMMIT_FLAKE, !rerun && r % 4 === 0 ? 'fail' : 'pass', !rerun && r % 4 === 0 ? { error: { message: 'expected "shoes" to be ranked before "shoe horn"' } } : {});
  push(BROKEN, r >= BROKEN_FROM_RUN ? 'fail' : 'pass', r >= BROKEN_FROM_RUN ? { error: { message: BROKEN_MESSAGE, stack: BROKEN_STACK } } : {});
  const failed = executions.some((e, i) => e.status === 'fail' && !executions.some((x) => x.retryOfIndex === i));
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `browser-main-${r}${rerun ? '-rerun' : ''}`,
    resource: { ciProvider: 'github_actions', commitSha: commitOf(r), branch: 'main', trigger: 'push', repository: 'shop/shop' },
    run: { status: failed ? 'failed' : 'passed', startedAt: at, finishedAt: at + 90_000 },
    executions,
  };
}

/** The PR's run: the broken test and a new test fail, the retry flake flakes. */
function prRun(t0: number): Record<string, unknown> {
  const at = t0 + (MAIN_RUNS + 1) * HOUR;
  const executions: Exec[] = STABLE.map(([filePath, suite, title], i) => ({ filePath, suite, title, status: 'pass', startedAt: at + i, durationMs: 25 }));
  executions.push({ ...RETRY_FLAKE, status: 'fail', startedAt: at + 10, durationMs: 5000, error: { message: 'TimeoutError: card processor did not answer within 5000 ms' } });
  executions.push({ ...RETRY_FLAKE, status: 'pass', attempt: 2, retryOfIndex: executions.length - 1, startedAt: at + 11, durationMs: 40 });
  executions.push({ ...COMMIT_FLAKE, status: 'pass', startedAt: at + 12, durationMs: 30 });
  executions.push({ ...BROKEN, status: 'fail', startedAt: at + 13, durationMs: 30, error: { message: BROKEN_MESSAGE, stack: BROKEN_STACK } });
  executions.push({ ...NEW_FAILURE, status: 'fail', startedAt: at + 14, durationMs: 30, error: { message: 'TypeError: Cannot read properties of undefined (reading "share")' } });
  return {
    contractVersion: '0.1.0',
    idempotencyKey: 'browser-pr-42',
    resource: { ciProvider: 'github_actions', commitSha: PR_COMMIT, branch: PR_BRANCH, prNumber: PR_NUMBER, baseBranch: 'main', trigger: 'pull_request', repository: 'shop/shop' },
    run: { status: 'failed', startedAt: at, finishedAt: at + 120_000 },
    executions,
  };
}

/** A JUnit report from another job: a surefire flaky retry and a skipped case. */
function junitReport(t0: number): Record<string, unknown> {
  const stamp = new Date(t0 + (MAIN_RUNS + 2) * HOUR).toISOString().replace(/\.\d+Z$/, '');
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="api.OrdersTest" timestamp="${stamp}" tests="3" failures="0" skipped="1">
    <testcase classname="api.OrdersTest" name="creates an order" time="0.120" file="src/api/orders.test.ts"/>
    <testcase classname="api.OrdersTest" name="cancels an order" time="0.340" file="src/api/orders.test.ts">
      <flakyFailure message="connection reset by peer" type="java.net.SocketException">java.net.SocketException: connection reset by peer</flakyFailure>
    </testcase>
    <testcase classname="api.OrdersTest" name="refunds an order" time="0" file="src/api/orders.test.ts"><skipped/></testcase>
  </testsuite>
</testsuites>`;
  return {
    idempotencyKey: 'browser-junit-orders',
    resource: { ciProvider: 'github_actions', commitSha: commitOf(MAIN_RUNS + 2), branch: 'main', trigger: 'push', repository: 'shop/shop' },
    xml,
  };
}

function promptOf(r: SinkRequest): string {
  const body = r.json as { system?: string; messages?: { content: string }[] } | undefined;
  return [body?.system ?? '', ...(body?.messages ?? []).map((m) => m.content)].join('\n');
}

/** The Anthropic Messages API as the RCA exporter calls it: one forced tool call per request. */
export function fakeAnthropic(req: SinkRequest): { status: number; body: unknown } {
  const answer = promptOf(req).includes('coupon')
    ? RCA_ANSWER
    : { summary: 'A slow dependency.', likelyCause: 'The test waits on a network call.', suggestedAction: 'Stub the dependency.', confidence: 0.4 };
  return {
    status: 200,
    body: {
      id: 'msg_browser',
      type: 'message',
      role: 'assistant',
      model: 'claude-test-model',
      content: [{ type: 'tool_use', id: 'toolu_browser', name: 'record_root_cause', input: answer }],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 812, output_tokens: 96 },
    },
  };
}

/** The daemon's environment for an RCA answered by `llm`. */
export function rcaEnv(llm: HttpSink): Record<string, string> {
  return {
    SERVICE_AI_PROVIDER: 'anthropic',
    SERVICE_AI_API_KEY: 'sk-ant-test-key-0123456789',
    SERVICE_AI_ENDPOINT: llm.url,
    SERVICE_AI_MODEL: 'claude-test-model',
    SERVICE_AI_TIMEOUT_MS: '20000',
  };
}

async function expectStatus(td: TestDaemon, method: string, urlPath: string, body: unknown, want: number): Promise<Record<string, any>> {
  const res = await td.request(method, urlPath, { body });
  if (res.status !== want) throw new Error(`seed: ${method} ${urlPath}: expected ${want}, got ${res.status} ${res.text}`);
  return res.json as Record<string, any>;
}

/** Uploads ARTIFACTS for the broken test's newest failure on main and puts their refs on it. */
async function attachArtifacts(td: TestDaemon, batches: Record<string, unknown>[]): Promise<void> {
  const batch = batches.filter((b) => (b.resource as { branch: string }).branch === 'main').at(-1)!;
  const executions = batch.executions as Exec[];
  const executionIndex = executions.findIndex((e) => e.title === BROKEN.title && e.status === 'fail');
  if (executionIndex < 0) throw new Error('seed: the newest main run has no failure of the broken test');
  const presign = await expectStatus(td, 'POST', '/v1/artifacts/presign', {
    idempotencyKey: batch.idempotencyKey,
    artifacts: ARTIFACTS.map((a) => ({ executionIndex, name: a.name, contentType: a.contentType, sizeBytes: a.body.length })),
  }, 200);
  const refs = [];
  for (const [i, a] of ARTIFACTS.entries()) {
    const item = presign.items[i] as { url: string; key: string; headers: Record<string, string> };
    const put = await fetch(item.url, { method: 'PUT', headers: item.headers, body: a.body });
    if (!put.ok) throw new Error(`seed: uploading ${a.name}: ${put.status} ${await put.text()}`);
    refs.push({ name: a.name, contentType: a.contentType, path: `test-results/${a.name}`, key: item.key, sizeBytes: a.body.length });
  }
  (executions[executionIndex] as Exec & { artifacts?: unknown[] }).artifacts = refs;
}

export async function seedHistory(td: TestDaemon): Promise<SeededHistory> {
  const t0 = Math.floor(Date.now() / HOUR) * HOUR - (MAIN_RUNS + 4) * HOUR;
  await expectStatus(td, 'PUT', '/v1/codeowners', { content: CODEOWNERS }, 200);
  const batches: Record<string, unknown>[] = [];
  for (let r = 1; r <= MAIN_RUNS; r++) {
    batches.push(mainRun(t0, r, false));
    if (r % 4 === 0) batches.push(mainRun(t0, r, true));
  }
  batches.push(prRun(t0));
  await attachArtifacts(td, batches);
  await td.ingest(...batches);
  await expectStatus(td, 'POST', '/v1/ingest/junit', junitReport(t0), 202);
  const runCount = batches.length + 1;
  await td.waitFor(async () => {
    const runs = await td.request('GET', '/v1/runs?limit=100');
    return td.daemon.queue.depth() === 0 && runs.json?.items?.length === runCount;
  }, 60_000);

  const testIds: Record<string, string> = {};
  const runs = (await td.request('GET', '/v1/runs?limit=100')).json.items as { id: string; prNumber: number | null }[];
  for (const run of runs) {
    const detail = await td.request('GET', `/v1/runs/${run.id}`);
    for (const e of detail.json.executions as { title: string; testIdentityId: string }[]) testIds[e.title] ??= e.testIdentityId;
  }
  // The newest failing execution of the broken test on main (the PR's run is newer but on a branch).
  const broken = await td.request('GET', `/v1/tests/${testIds[BROKEN.title]}?historyLimit=200`);
  const failing = (broken.json.history as { executionId: string; status: string; branch: string }[]).filter((h) => h.status === 'fail' && h.branch === 'main');
  const brokenExecutionId = failing.at(-1)!.executionId;
  const report = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/executions/${brokenExecutionId}/rca`);
    return res.status === 200 ? (res.json as { summary: string } | null) : null;
  }, 60_000);
  return { t0, runCount, prNumber: PR_NUMBER, prCommit: PR_COMMIT, prBranch: PR_BRANCH, testIds, brokenExecutionId, rcaSummary: report.summary };
}

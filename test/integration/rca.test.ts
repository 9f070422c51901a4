// AI root-cause analysis end to end: histories ingested through the real API, real chDB, and local
// HTTP servers speaking the Anthropic Messages API (POST /v1/messages) and Ollama's chat API
// (POST /api/chat). A new error cluster reaches the model once; the same failure again reuses the
// analysis; the model never sees a secret; invalid answers are retried once; a tiny budget pauses
// RCA with one ai.budget_spent; a stalled model holds up no run; no provider, no calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { analysisId } from '../../src/store/rca.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startHttpSink, type HttpSink, type SinkRequest } from '../helpers/peers.js';

// Tests poll the report route; the per-project rate limit is not what they are about.
const BASE_ENV = { SERVICE_RATE_LIMIT_MAX: '0' };
const T0 = Date.parse('2026-11-10T08:00:00Z');
const FILE = 'src/checkout/cart.test.ts';
const STACK = [
  'AssertionError: expected values to match',
  '    at applyCoupon (/home/runner/work/shop/shop/src/checkout/cart.ts:41:11)',
  '    at Object.<anonymous> (/home/runner/work/shop/shop/src/checkout/cart.test.ts:12:5)',
  '    at processTicksAndRejections (node:internal/process/task_queues:95:5)',
].join('\n');

// Planted in the error message: none may reach the model.
const SECRETS = {
  urlPassword: 's3cr3tPassw0rd',
  bearer: 'tok9Xq2LmZ7vB4nR8sT1',
  awsKeyId: 'AKIAIOSFODNN7EXAMPLE',
  github: 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8',
};
const MESSAGE_A = (total: number, want: number): string =>
  `AssertionError: expected cart total ${total} to be ${want} after applying coupon SAVE10 (POST https://deploy:${SECRETS.urlPassword}@api.internal/v1/cart ` +
  `with Authorization: Bearer ${SECRETS.bearer}, AWS key ${SECRETS.awsKeyId}, GITHUB_TOKEN=${SECRETS.github})`;
// Similar to A (estimated Jaccard ≈ 0.41, below the 0.5 threshold): its own cluster, with A's analysis as a similar past one.
const MESSAGE_C = 'AssertionError: expected order total 91 to be 80 after removing coupon SAVE10 (POST https://api.internal/v1/order)';

type Status = 'pass' | 'fail';
interface Exec {
  title: string;
  status: Status;
  message?: string;
  stack?: string;
}

let runSeq = 0;
function run(executions: Exec[], tag: string): Record<string, unknown> {
  const r = ++runSeq;
  const at = T0 + r * 600_000;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `rca-${tag}-${process.pid}-${r}`,
    resource: { ciProvider: 'github_actions', commitSha: r % 2 === 0 ? 'abc1234' : 'def5678', branch: 'main', trigger: 'push' },
    run: { status: executions.some((e) => e.status === 'fail') ? 'failed' : 'passed', startedAt: at },
    executions: executions.map((e, i) => ({
      filePath: FILE,
      suite: 'cart',
      title: e.title,
      status: e.status,
      startedAt: at + i,
      durationMs: 20,
      ...(e.status === 'fail' ? { error: { message: e.message ?? 'failed', stack: e.stack ?? STACK } } : {}),
    })),
  };
}

const nonEmpty = <T>(list: T[]): T[] | null => (list.length > 0 ? list : null);
const pass = (...titles: string[]): Exec[] => titles.map((title) => ({ title, status: 'pass' }));

/** The newest failing execution of `title`. */
async function failingExecution(td: TestDaemon, title: string): Promise<string> {
  const runs = await td.request('GET', '/v1/runs?limit=20');
  for (const r of runs.json.items as { id: string }[]) {
    const detail = await td.request('GET', `/v1/runs/${r.id}`);
    const e = detail.json.executions.find((x: { title: string; status: string }) => x.title === title && x.status === 'fail');
    if (e) return e.id as string;
  }
  throw new Error(`no failing execution of ${title}`);
}

async function waitForReport(td: TestDaemon, executionId: string): Promise<Record<string, any>> {
  return td.waitFor(async () => {
    const res = await td.request('GET', `/v1/executions/${executionId}/rca`);
    expect(res.status).toBe(200);
    return res.json as Record<string, any> | null;
  }, 20_000);
}

async function analyses(td: TestDaemon): Promise<{ cluster_id: string; status: string; error: string; calls: number; input_tokens: number; output_tokens: number }[]> {
  const s = td.daemon.store;
  return s.query(`SELECT cluster_id, status, error, calls, input_tokens, output_tokens FROM ${s.table('rca_analyses')} FINAL ORDER BY queued_at`);
}

const ANSWER_A = { summary: 'The coupon discount is applied twice.', likelyCause: 'applyCoupon runs on every re-render.', suggestedAction: 'Make applyCoupon idempotent.', confidence: 0.82 };
const ANSWER_C = { summary: 'Removing a coupon leaves the discount.', likelyCause: 'Stale cart cache.', suggestedAction: 'Invalidate the cart cache on removal.', confidence: 0.6 };
const ANSWER_RETRY = { summary: 'The database was not up yet.', likelyCause: 'A race with the container start.', suggestedAction: 'Wait for readiness.', confidence: 0.5 };

function anthropicMessage(content: unknown[], usage = { input_tokens: 812, output_tokens: 96 }): { status: number; body: unknown } {
  return {
    status: 200,
    body: { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-test-model', content, stop_reason: 'tool_use', stop_sequence: null, usage },
  };
}
const toolUse = (input: unknown): unknown => ({ type: 'tool_use', id: 'toolu_01', name: 'record_root_cause', input });

/** The text the model was given (system + user), from either wire format. */
function promptOf(r: SinkRequest): string {
  const body = r.json as { system?: string; messages: { content: string }[] };
  return [body.system ?? '', ...body.messages.map((m) => m.content)].join('\n');
}

describe('AI RCA with the Anthropic Messages API', () => {
  let llm: HttpSink;
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  let execA1 = '';
  let reportA: Record<string, any>;

  beforeAll(async () => {
    llm = await startHttpSink((r) => {
      const text = promptOf(r);
      if (text.includes('MARK_RETRY')) return text.includes('not valid') ? anthropicMessage([toolUse(ANSWER_RETRY)], { input_tokens: 500, output_tokens: 50 }) : anthropicMessage([{ type: 'text', text: 'Probably flaky, not sure.' }], { input_tokens: 400, output_tokens: 20 });
      if (text.includes('MARK_BROKEN')) return anthropicMessage([toolUse({ summary: 'x', likelyCause: 'y', suggestedAction: 'z', confidence: 7 })], { input_tokens: 300, output_tokens: 30 });
      if (text.includes('removing coupon')) return anthropicMessage([toolUse(ANSWER_C)]);
      return anthropicMessage([toolUse(ANSWER_A)]);
    });
    td = await startTestDaemon({
      env: {
        ...BASE_ENV,
        SERVICE_AI_PROVIDER: 'anthropic',
        SERVICE_AI_API_KEY: 'sk-ant-test-key-0123456789',
        SERVICE_AI_ENDPOINT: llm.url,
        SERVICE_AI_MODEL: 'claude-test-model',
        SERVICE_AI_TIMEOUT_MS: '20000',
      },
    });
    td.daemon.runtime.onEvent((e) => events.push(e));
  });

  afterAll(async () => {
    await td?.close();
    await llm?.close();
  });

  it('a failing execution with a new signature: one model call, and its report at GET /v1/executions/:id/rca', async () => {
    const t = ['applies a coupon', 'adds an item'];
    await td.ingest(run(pass(...t), 'a'), run(pass(...t), 'a'), run([{ title: t[0]!, status: 'fail', message: MESSAGE_A(90, 80) }, ...pass(t[1]!)], 'a'));
    execA1 = await failingExecution(td, t[0]!);
    reportA = await waitForReport(td, execA1);
    expect(llm.requests).toHaveLength(1);
    expect(reportA).toMatchObject({
      executionId: execA1,
      summary: ANSWER_A.summary,
      likelyCause: ANSWER_A.likelyCause,
      suggestedAction: ANSWER_A.suggestedAction,
      confidence: 0.82,
      similarPast: [],
      llmModel: 'claude-test-model',
      tokenCost: 812 + 96,
    });
    expect(reportA.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(reportA.signatureId).toMatch(/^[0-9a-f]{16}$/);
    expect(reportA.clusterId).toBe(reportA.signatureId);
    expect(Number.isNaN(Date.parse(reportA.createdAt))).toBe(false);
    // Announced once, as a domain event through the outbox.
    const created = await td.waitFor(async () => nonEmpty(events.filter((e) => e.type === 'rca.created')));
    expect(created).toHaveLength(1);
    expect(created[0]!.data).toMatchObject({ executionId: execA1, clusterId: reportA.clusterId, signatureId: reportA.signatureId, summary: ANSWER_A.summary, llmModel: 'claude-test-model' });
    // The procedure API serves the same report.
    const proc = await td.request('GET', `/trpc/rca.get?input=${encodeURIComponent(JSON.stringify({ executionId: execA1 }))}`);
    expect(proc.json.result.data).toEqual(reportA);
  });

  it('sends the error, the top frames and the history, through a forced tool call, and no secret', () => {
    const r = llm.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.path).toBe('/v1/messages');
    // The SDK authenticates with the key (as x-api-key or a bearer token, depending on its version).
    expect(String(r.headers['x-api-key'] ?? r.headers.authorization)).toMatch(/^(Bearer )?sk-ant-test-key-0123456789$/);
    expect(r.json.model).toBe('claude-test-model');
    expect(r.json.tool_choice).toEqual({ type: 'tool', name: 'record_root_cause' });
    expect(r.json.tools[0].input_schema.required).toEqual(['summary', 'likelyCause', 'suggestedAction', 'confidence']);
    const text = promptOf(r);
    expect(text).toContain('expected cart total 90 to be 80 after applying coupon SAVE10');
    expect(text).toContain(`Test: ${FILE} › cart › applies a coupon`);
    expect(text).toContain('1. applyCoupon (src/checkout/cart.ts)');
    expect(text).toContain('2. Object.<anonymous> (src/checkout/cart.test.ts)');
    expect(text).toMatch(/Sequence \(oldest → newest[^)]*\): PPF\n/);
    expect(text).toContain('https://deploy:[REDACTED]@api.internal/v1/cart');
    for (const [name, secret] of Object.entries(SECRETS)) expect(r.body, name).not.toContain(secret);
    expect(r.body).not.toContain('sk-ant-test-key');
  });

  it('the same signature again: no model call, the same analysis', async () => {
    await td.ingest(run([{ title: 'applies a coupon', status: 'fail', message: MESSAGE_A(95, 85) }, ...pass('adds an item')], 'a'));
    const execA2 = await failingExecution(td, 'applies a coupon');
    expect(execA2).not.toBe(execA1);
    // Queuing happens before run.processed reaches anyone (ingest waited for it): nothing was queued.
    expect(await analyses(td)).toHaveLength(1);
    const report = await td.request('GET', `/v1/executions/${execA2}/rca`);
    expect(report.json).toEqual({ ...reportA, id: report.json.id, executionId: execA2 });
    expect(report.json.id).not.toBe(reportA.id);
    expect(llm.requests).toHaveLength(1);
    // Run detail and the test page say which executions have a report: the failures, not the passes.
    const runs = await td.request('GET', '/v1/runs?limit=1');
    const detail = await td.request('GET', `/v1/runs/${runs.json.items[0].id}`);
    expect(detail.json.executions.map((e: { status: string; hasRca: boolean }) => [e.status, e.hasRca])).toEqual([
      ['fail', true],
      ['pass', false],
    ]);
    const testId = detail.json.executions[0].testIdentityId as string;
    const page = await td.request('GET', `/v1/tests/${testId}?historyLimit=10`);
    expect(page.json.history.map((h: { status: string; hasRca: boolean }) => `${h.status}:${h.hasRca}`)).toEqual(['pass:false', 'pass:false', 'fail:true', 'fail:true']);
  });

  it('a similar new cluster gets its own analysis, shown the earlier one', async () => {
    await td.ingest(run([{ title: 'removes a coupon', status: 'fail', message: MESSAGE_C }, ...pass('applies a coupon')], 'a'));
    const execC = await failingExecution(td, 'removes a coupon');
    const report = await waitForReport(td, execC);
    expect(llm.requests).toHaveLength(2);
    expect(report.clusterId).not.toBe(reportA.clusterId);
    expect(report.summary).toBe(ANSWER_C.summary);
    const projectId = String((await td.daemon.store.query<{ id: string }>(`SELECT id FROM ${td.daemon.store.table('projects')} FINAL LIMIT 1`))[0]!.id);
    expect(report.similarPast).toEqual([{ rcaId: analysisId(projectId, reportA.clusterId), executionId: execA1, summary: ANSWER_A.summary, createdAt: reportA.createdAt }]);
    const text = promptOf(llm.requests[1]!);
    expect(text).toMatch(/1\. \(similarity 0\.\d\d\) AssertionError: expected cart total <num> to be <num> after applying coupon/);
    expect(text).toContain(`Summary: ${ANSWER_A.summary}`);
    expect(text).toContain(`Suggested action: ${ANSWER_A.suggestedAction}`);
  });

  it('an invalid answer is retried once; invalid twice is recorded as failed, and nothing breaks', async () => {
    const before = llm.requests.length;
    await td.ingest(
      run(
        [
          { title: 'loads the cart', status: 'fail', message: 'MARK_RETRY connection refused: database on port 5432', stack: '' },
          { title: 'prices the cart', status: 'fail', message: 'MARK_BROKEN TypeError: cannot read properties of undefined (reading price)', stack: '' },
        ],
        'a',
      ),
    );
    const done = await td.waitFor(async () => {
      const rows = await analyses(td);
      return rows.filter((r) => r.status !== 'pending').length === 4 ? rows : null;
    }, 20_000);
    expect(llm.requests.length - before).toBe(4);
    const retried = llm.requests.slice(before).filter((r) => r.body.includes('MARK_RETRY'));
    expect(retried).toHaveLength(2);
    expect(promptOf(retried[1]!)).toContain('Your previous answer was not valid (no JSON object in the answer)');
    const byStatus = done.slice(-2).map((r) => ({ status: r.status, calls: Number(r.calls), tokens: Number(r.input_tokens) + Number(r.output_tokens), error: r.error }));
    expect(byStatus).toContainEqual({ status: 'done', calls: 2, tokens: 400 + 20 + 500 + 50, error: '' });
    const failed = byStatus.find((r) => r.status === 'failed')!;
    expect(failed).toMatchObject({ calls: 2, tokens: 2 * 330 });
    expect(failed.error).toMatch(/^invalid_output: confidence/);
    // The failed cluster has no report; the retried one has.
    const broken = await failingExecution(td, 'prices the cart');
    expect((await td.request('GET', `/v1/executions/${broken}/rca`)).json).toBeNull();
    const runs = await td.request('GET', '/v1/runs?limit=1');
    const detail = await td.request('GET', `/v1/runs/${runs.json.items[0].id}`);
    expect(Object.fromEntries(detail.json.executions.map((e: { title: string; hasRca: boolean }) => [e.title, e.hasRca]))).toEqual({ 'loads the cart': true, 'prices the cart': false });
    const ok = await waitForReport(td, await failingExecution(td, 'loads the cart'));
    expect(ok).toMatchObject({ summary: ANSWER_RETRY.summary, tokenCost: 970 });
    // Every call was counted against the project's day.
    const s = td.daemon.store;
    const [usage] = await s.query<{ calls: number; tokens: number }>(`SELECT count() AS calls, sum(input_tokens + output_tokens) AS tokens FROM ${s.table('ai_token_usage')} FINAL`);
    expect(Number(usage!.calls)).toBe(6);
    expect(Number(usage!.tokens)).toBe(2 * 908 + 970 + 660);
  });
});

describe('AI RCA with the Ollama chat API', () => {
  let llm: HttpSink;
  let td: TestDaemon;

  beforeAll(async () => {
    llm = await startHttpSink(() => ({
      status: 200,
      body: {
        model: 'llama-test',
        created_at: new Date().toISOString(),
        message: { role: 'assistant', content: JSON.stringify(ANSWER_A) },
        done: true,
        done_reason: 'stop',
        prompt_eval_count: 700,
        eval_count: 80,
      },
    }));
    td = await startTestDaemon({ env: { ...BASE_ENV, SERVICE_AI_PROVIDER: 'ollama', SERVICE_AI_ENDPOINT: llm.url, SERVICE_AI_MODEL: 'llama-test', SERVICE_AI_TIMEOUT_MS: '20000' } });
  });

  afterAll(async () => {
    await td?.close();
    await llm?.close();
  });

  it('asks /api/chat for JSON in the answer schema and stores the validated report', async () => {
    await td.ingest(run(pass('applies a coupon'), 'o'), run([{ title: 'applies a coupon', status: 'fail', message: MESSAGE_A(90, 80) }], 'o'));
    const exec = await failingExecution(td, 'applies a coupon');
    const report = await waitForReport(td, exec);
    expect(report).toMatchObject({ executionId: exec, summary: ANSWER_A.summary, confidence: 0.82, llmModel: 'llama-test', tokenCost: 780 });
    expect(llm.requests).toHaveLength(1);
    const r = llm.requests[0]!;
    expect(r.path).toBe('/api/chat');
    expect(r.json).toMatchObject({ model: 'llama-test', stream: false });
    expect(r.json.format.required).toEqual(['summary', 'likelyCause', 'suggestedAction', 'confidence']);
    expect(r.json.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
    expect(r.headers.authorization).toBeUndefined();
    const text = promptOf(r);
    expect(text).toContain('expected cart total 90 to be 80');
    expect(text).toContain('1. applyCoupon (src/checkout/cart.ts)');
    expect(text).toMatch(/: PF\n/);
    for (const [name, secret] of Object.entries(SECRETS)) expect(r.body, name).not.toContain(secret);
  });
});

describe('AI RCA daily token budget', () => {
  let llm: HttpSink;
  let slack: HttpSink;
  let td: TestDaemon;
  const events: DomainEvent[] = [];

  beforeAll(async () => {
    // Each call reports 3,050 tokens: one call spends the 3,000-token budget.
    llm = await startHttpSink(() => anthropicMessage([toolUse(ANSWER_A)], { input_tokens: 2900, output_tokens: 150 }));
    slack = await startHttpSink();
    td = await startTestDaemon({
      env: {
        ...BASE_ENV,
        SERVICE_AI_PROVIDER: 'anthropic',
        SERVICE_AI_API_KEY: 'sk-test',
        SERVICE_AI_ENDPOINT: llm.url,
        SERVICE_AI_DAILY_TOKEN_BUDGET: '3000',
        // The notify exporter picks both events up from the outbox.
        SERVICE_SLACK_WEBHOOK: `${slack.url}/services/T0/B0/X`,
        SERVICE_ALLOW_PRIVATE_WEBHOOKS: 'true',
      },
    });
    td.daemon.runtime.onEvent((e) => events.push(e));
  });

  afterAll(async () => {
    await td?.close();
    await llm?.close();
    await slack?.close();
  });

  it('pauses RCA for the project once spent, with exactly one ai_budget_spent', async () => {
    await td.ingest(run([{ title: 'applies a coupon', status: 'fail', message: MESSAGE_A(90, 80) }], 'b'));
    await waitForReport(td, await failingExecution(td, 'applies a coupon'));
    const spent = await td.waitFor(async () => nonEmpty(events.filter((e) => e.type === 'ai.budget_spent')));
    const today = new Date().toISOString().slice(0, 10);
    expect(spent).toHaveLength(1);
    expect(spent[0]!.data).toEqual({ day: today, dailyTokenBudget: 3000, tokensSpent: 3050 });
    // New clusters keep coming: queued, not analysed, no second notice.
    await td.ingest(
      run([{ title: 'loads the cart', status: 'fail', message: 'connection refused: database on port 5432', stack: '' }], 'b'),
      run([{ title: 'prices the cart', status: 'fail', message: 'TypeError: cannot read properties of undefined (reading price)', stack: '' }], 'b'),
    );
    const rows = await analyses(td);
    expect(rows.map((r) => r.status)).toEqual(['done', 'pending', 'pending']);
    expect(llm.requests).toHaveLength(1);
    expect(events.filter((e) => e.type === 'ai.budget_spent')).toHaveLength(1);
    const s = td.daemon.store;
    const notices = await s.query<{ day: string; budget: number; spent: number }>(`SELECT toString(day) AS day, budget, spent FROM ${s.table('ai_budget_notices')} FINAL`);
    expect(notices.map((n) => ({ ...n, budget: Number(n.budget), spent: Number(n.spent) }))).toEqual([{ day: today, budget: 3000, spent: 3050 }]);
    // Notified: one rca_ready and one ai_budget_spent.
    const messages = await td.waitFor(async () => {
      const m = slack.requests.map((r) => r.body);
      return m.some((b) => b.includes('AI budget spent')) && m.some((b) => b.includes('Root-cause analysis ready')) ? m : null;
    });
    expect(messages.filter((b) => b.includes('AI budget spent'))).toHaveLength(1);
    expect(messages.filter((b) => b.includes('Root-cause analysis ready'))).toHaveLength(1);
    expect(messages.find((b) => b.includes('Root-cause analysis ready'))).toContain(ANSWER_A.summary);
  });
});

describe('AI RCA with a stalled model', () => {
  let llm: HttpSink;
  let td: TestDaemon;

  beforeAll(async () => {
    llm = await startHttpSink(() => 'hang');
  });

  afterAll(async () => {
    await td?.close();
    await llm?.close();
  });

  it('delays no run; after the timeout the analysis is recorded as failed', async () => {
    const env = { ...BASE_ENV, SERVICE_AI_PROVIDER: 'ollama', SERVICE_AI_ENDPOINT: llm.url, SERVICE_AI_TIMEOUT_MS: '600000' };
    td = await startTestDaemon({ env });
    await td.ingest(run([{ title: 'applies a coupon', status: 'fail', message: MESSAGE_A(90, 80) }, ...pass('adds an item')], 's'));
    await td.waitFor(async () => llm.open === 1);
    // The model holds its request open; runs go on being processed and are queryable as usual.
    const receipts = await td.ingest(
      run(pass('applies a coupon', 'adds an item'), 's'),
      run([{ title: 'adds an item', status: 'fail', message: 'TypeError: cart is undefined', stack: '' }, ...pass('applies a coupon')], 's'),
      run(pass('applies a coupon', 'adds an item'), 's'),
    );
    expect(receipts).toHaveLength(3);
    const runs = await td.request('GET', '/v1/runs?limit=10');
    expect(runs.json.items).toHaveLength(4);
    const flaky = await td.request('GET', '/v1/flaky?limit=10');
    expect(flaky.status).toBe(200);
    expect(llm.open).toBe(1);
    expect(llm.requests).toHaveLength(1);
    expect((await analyses(td)).map((r) => r.status)).toEqual(['pending', 'pending']);

    // Stopping cuts the request short and leaves the analysis queued; with a short ceiling after
    // the restart, both stall again and are recorded as timed out.
    td = await td.restart({ env: { SERVICE_AI_TIMEOUT_MS: '200' } });
    const rows = await td.waitFor(async () => {
      const r = await analyses(td);
      return r.every((x) => x.status === 'failed') ? r : null;
    }, 20_000);
    expect(rows.map((r) => ({ status: r.status, error: r.error, calls: Number(r.calls) }))).toEqual([
      { status: 'failed', error: 'timeout', calls: 0 },
      { status: 'failed', error: 'timeout', calls: 0 },
    ]);
    expect(llm.requests).toHaveLength(3);
    const exec = await failingExecution(td, 'adds an item');
    expect((await td.request('GET', `/v1/executions/${exec}/rca`)).json).toBeNull();
  });
});

describe('AI RCA off', () => {
  let llm: HttpSink;

  beforeAll(async () => {
    llm = await startHttpSink(() => anthropicMessage([toolUse(ANSWER_A)]));
  });

  afterAll(async () => {
    await llm?.close();
  });

  for (const [name, env] of [
    ['no provider (whatever ai.rca says)', { SERVICE_AI_RCA: 'true' }],
    ['ai.rca false', { SERVICE_AI_PROVIDER: 'anthropic', SERVICE_AI_API_KEY: 'sk-test', SERVICE_AI_RCA: 'false' }],
  ] as const) {
    it(`${name}: failures reach no model and have no report`, async () => {
      const td = await startTestDaemon({ env: { ...BASE_ENV, ...env, SERVICE_AI_ENDPOINT: llm.url } });
      try {
        await td.ingest(run([{ title: 'applies a coupon', status: 'fail', message: MESSAGE_A(90, 80) }], 'off'));
        const exec = await failingExecution(td, 'applies a coupon');
        const res = await td.request('GET', `/v1/executions/${exec}/rca`);
        expect(res.status).toBe(200);
        expect(res.json).toBeNull();
        // Queuing happens before run.processed reaches anyone: nothing was queued, so nothing will be asked.
        expect(await analyses(td)).toEqual([]);
        expect(llm.requests).toHaveLength(0);
      } finally {
        await td.close();
      }
    });
  }
});

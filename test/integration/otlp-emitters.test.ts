// Real emitters' documented span shapes (test/fixtures/otlp/) posted to POST /v1/traces on the real
// daemon, read back from GET /v1/runs/:id (docs/contract.md §4, issue 29).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

let td: TestDaemon;

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
});

afterAll(async () => {
  await td?.close();
});

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(`../fixtures/otlp/${name}.json`, import.meta.url), 'utf8'));
}

/** Posts a fixture and returns the stored run's detail, found by its commit. */
async function ingest(name: string, commitSha: string, executions: number): Promise<any> {
  const res = await td.request('POST', '/v1/traces', { body: fixture(name) });
  expect(res.status).toBe(202);
  expect(res.json).toMatchObject({ acceptedExecutions: executions, deduplicated: false });
  expect(res.json.partialSuccess).toBeUndefined();
  await td.settled();
  const item = await td.waitFor(async () => (await td.request('GET', '/v1/runs?limit=100')).json.items.find((r: any) => r.commitSha === commitSha), 20_000);
  const detail = await td.request('GET', `/v1/runs/${item.id}`);
  expect(detail.status).toBe(200);
  return detail.json;
}

const rows = (run: any) => run.executions.map((e: any) => [e.filePath, e.suite, e.title, e.status]);

describe('POST /v1/traces from real emitters, no configuration', () => {
  it('pytest-opentelemetry: session → run, node ids → file/suite/title/params, service.version → commit', async () => {
    const run = await ingest('pytest-opentelemetry', '3f786850e387550fdab836ed7e6dc881de23001b', 3);
    expect(run).toMatchObject({ status: 'failed', branch: 'local', ciProvider: 'other', counts: { total: 3, passed: 2, failed: 1 } });
    expect(rows(run)).toEqual([
      ['tests/test_cart.py', 'TestCart', 'test_adds', 'pass'],
      ['tests/test_cart.py', 'TestCart', 'test_adds', 'fail'],
      ['tests/test_checkout.py', '', 'test_pays_by_card', 'pass'],
    ]);
    // `[small]` and `[large]` are params: two tests of the same title.
    expect(run.executions[0].testIdentityId).not.toBe(run.executions[1].testIdentityId);
    expect(run.executions[1].errorMessage).toBe('assert 3 == 4');
    const [stored] = await storedParams(run.id);
    expect(JSON.parse(stored!.params)).toEqual({ id: 'large' });
  });

  it('test semantic conventions: the suite span is the run (test.suite.run.status), cases inherit test.suite.name', async () => {
    const run = await ingest('semconv-test', '9c1185a5c5e9fc54612808977ee8f548b2258d31', 2);
    expect(run).toMatchObject({ status: 'failed', branch: 'main', counts: { total: 2, passed: 1, failed: 1 } });
    expect(rows(run)).toEqual([
      ['src/test/java/org/example/CartTest.java', 'org.example.CartTest', 'addsItem', 'pass'],
      ['src/test/java/org/example/CartTest.java', 'org.example.CartTest', 'removesItem', 'fail'],
    ]);
    expect(run.executions[1].errorMessage).toBe('expected: <0> but was: <1>');
  });

  it('CI/CD and VCS conventions: pipeline and ref attributes fill the run resource', async () => {
    const run = await ingest('cicd-vcs', '0beec7b5ea3f0fdbc95d0dd47f3c5bc275da8a33', 2);
    expect(run).toMatchObject({
      status: 'passed',
      branch: 'feature/cart-totals',
      prNumber: 123,
      ciProvider: 'github_actions',
      mergeBase: '62cdb7020ff920e5aa642c3d4066950dd1f01f4d',
    });
    expect(rows(run)).toEqual([
      ['src/cart.test.ts', 'cart totals', 'sums line items', 'pass'],
      ['src/cart.test.ts', 'cart totals', 'applies tax', 'pass'],
    ]);
    // Not in the run detail: read the stored row.
    const store = td.daemon.store;
    const [row] = await store.query<Record<string, string>>(
      `SELECT ci_run_id, ci_job_url, repository, base_branch FROM ${store.table('runs')} FINAL WHERE id = {id:UUID}`,
      { id: run.id },
    );
    expect(row).toEqual({
      ci_run_id: '9876543210',
      ci_job_url: 'https://github.com/acme/shop/actions/runs/9876543210',
      repository: 'acme/shop',
      base_branch: 'main',
    });
  });
});

async function storedParams(runId: string): Promise<{ params: string }[]> {
  const store = td.daemon.store;
  return store.query<{ params: string }>(
    `SELECT params FROM ${store.table('executions')} WHERE run_id = {id:UUID} AND status = 'fail'`,
    { id: runId },
  );
}

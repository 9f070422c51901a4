// The operator processors (filter, attributes, sample) over real ingest: a daemon started with a
// pipeline file that places one of them after normalize, batches posted to /v1/ingest, and what is
// stored read back through GET /v1/runs/:id (and the tables, for what the API does not show).
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(os.tmpdir(), 'fh-operators-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** pipelines/default.yaml with `yaml` (one processor's definition) defined and listed after normalize. */
function pipelineWith(type: string, yaml: string): string {
  const text = readFileSync(path.join(REPO_ROOT, 'pipelines/default.yaml'), 'utf8')
    .replace('processors:\n  normalize: {}\n', `processors:\n  normalize: {}\n${yaml}`)
    .replace('processors: [normalize, identity,', `processors: [normalize, ${type}, identity,`);
  const file = path.join(dir, `${type}.yaml`);
  writeFileSync(file, text);
  return file;
}

async function start(file: string): Promise<TestDaemon> {
  // One thread: the pipeline runs these sources, not a CLI build made before they existed.
  return startTestDaemon({ pipelineFile: file, env: { SERVICE_PIPELINE_THREAD: 'false' } });
}

/** The run of a branch (each test uses its own) with its executions, once it is stored. */
async function runOf(td: TestDaemon, branch: string): Promise<{ id: string; prNumber: number | null; counts: Record<string, number>; executions: { title: string; status: string; attempt: number }[] }> {
  const list = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
    return res.json.items.length > 0 ? res.json.items : undefined;
  });
  return (await td.request('GET', `/v1/runs/${list[0].id}`)).json;
}

const exec = (title: string, status: string, extra: Record<string, unknown> = {}) => ({
  filePath: 'src/a.test.ts',
  suite: 'A',
  title,
  status,
  startedAt: Date.parse('2026-11-20T10:00:00Z'),
  durationMs: 5,
  ...extra,
});

describe('filter', () => {
  let td: TestDaemon;
  afterAll(async () => td?.close());

  it('drops matching executions and recounts the run; drops whole runs', async () => {
    td = await start(
      pipelineWith(
        'filter',
        `  filter:
    runs:
      exclude: [{ branch: "dependabot/*" }]
    executions:
      exclude:
        - { file: "e2e/**" }
        - { title: "/^canary/i", status: [skip] }
        - { attributes: { tag: slow } }
`,
      ),
    );
    await td.ingest(
      nativeBatch({
        resource: { branch: 'filter-main' },
        executions: [
          exec('kept pass', 'pass'),
          exec('kept fail', 'fail', { error: { message: 'boom' } }),
          exec('Canary skipped', 'skip'),
          exec('canary passing', 'pass'),
          exec('in e2e', 'fail', { filePath: './e2e/login.test.ts', error: { message: 'x' } }),
          exec('slow one', 'pass', { attributes: { tag: 'slow' } }),
          exec('fast one', 'pass', { attributes: { tag: 'fast' } }),
        ],
      }),
    );
    const run = await runOf(td, 'filter-main');
    expect(run.executions.map((e) => e.title).sort()).toEqual(['canary passing', 'fast one', 'kept fail', 'kept pass']);
    // Recounted over what is left: the filtered skip and e2e failure are not part of the run.
    expect(run.counts).toMatchObject({ total: 4, passed: 3, failed: 1, skipped: 0 });

    // A dependabot run is dropped whole: nothing is stored, its job is still acknowledged.
    const res = await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 3, resource: { branch: 'dependabot/npm_and_yarn/lodash-4.17.21' } }) });
    expect(res.status).toBe(202);
    await td.settled();
    await td.ingest(nativeBatch({ n: 1, resource: { branch: 'filter-after' } }));
    expect((await td.request('GET', '/v1/runs?branch=dependabot%2Fnpm_and_yarn%2Flodash-4.17.21')).json.items).toEqual([]);
    expect(td.daemon.queue.depth()).toBe(0);
  });
});

describe('attributes', () => {
  let td: TestDaemon;
  afterAll(async () => td?.close());

  it('sets, renames, hashes, deletes attributes and maps a CI key into the resource', async () => {
    td = await start(
      pipelineWith(
        'attributes',
        `  attributes:
    actions:
      - { action: map, from: ci.pipeline.id, to: resource.ciRunId }
      - { action: map, from: ci.pr, to: resource.prNumber }
      - { action: rename, from: CI_JOB_NAME, to: ci.job }
      - { action: hash, key: user.email }
      - { action: delete, key: ci.token }
      - { action: set, key: team, value: payments }
`,
      ),
    );
    const attributes = { 'ci.pipeline.id': 'pipe-77', 'ci.pr': '42', CI_JOB_NAME: 'unit', 'user.email': 'dev@example.com', 'ci.token': 'secret' };
    await td.ingest(nativeBatch({ resource: { branch: 'attributes-main' }, executions: [exec('one', 'pass', { attributes }), exec('two', 'pass')] }));
    const run = await runOf(td, 'attributes-main');
    expect(run.prNumber).toBe(42);
    const store = td.daemon.store;
    const runs = await store.query<{ ci_run_id: string }>(`SELECT ci_run_id FROM ${store.table('runs')} WHERE id = {id:UUID}`, { id: run.id });
    expect(runs.map((r) => r.ci_run_id)).toEqual(['pipe-77']);
    const rows = await store.query<{ title: string; attributes: string }>(
      `SELECT title, attributes FROM ${store.table('executions')} WHERE run_id = {id:UUID} ORDER BY title`,
      { id: run.id },
    );
    const byTitle = Object.fromEntries(rows.map((r) => [r.title, JSON.parse(r.attributes) as Record<string, unknown>]));
    expect(byTitle.one).toEqual({
      'ci.pipeline.id': 'pipe-77',
      'ci.pr': '42',
      'ci.job': 'unit',
      'user.email': createHash('sha256').update('dev@example.com').digest('hex'),
      team: 'payments',
    });
    expect(byTitle.two).toEqual({ team: 'payments' });
  });
});

describe('sample', () => {
  let td: TestDaemon;
  afterAll(async () => td?.close());

  it('keeps failing and flaky tests whole, a share of passing ones, and the counts of all', async () => {
    td = await start(pipelineWith('sample', '  sample: { percentage: 30 }\n'));
    const passing = Array.from({ length: 40 }, (_, i) => exec(`pass ${i}`, 'pass'));
    await td.ingest(
      nativeBatch({
        resource: { branch: 'sample-main' },
        executions: [
          ...passing,
          exec('broken', 'fail', { error: { message: 'boom' } }),
          exec('flaky', 'fail', { error: { message: 'flake' } }),
          exec('flaky', 'pass', { attempt: 2, retryOfIndex: 41 }),
          exec('skipped', 'skip'),
        ],
      }),
    );
    const run = await runOf(td, 'sample-main');
    // Counted before the sample: every test, as sent.
    expect(run.counts).toEqual({ total: 43, passed: 40, failed: 1, skipped: 1, flaky: 1 });
    const titles = run.executions.map((e) => e.title);
    expect(titles.filter((t) => t === 'flaky')).toHaveLength(2);
    expect(titles).toEqual(expect.arrayContaining(['broken', 'skipped']));
    const keptPasses = titles.filter((t) => t.startsWith('pass ')).length;
    expect(keptPasses).toBeGreaterThan(0);
    expect(keptPasses).toBeLessThan(30);
    // The stored retry still points at its first attempt.
    const flakyAttempts = run.executions.filter((e) => e.title === 'flaky').map((e) => e.attempt).sort();
    expect(flakyAttempts).toEqual([1, 2]);

  });
});

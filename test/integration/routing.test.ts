// The `routing` connector over real ingest: pipelines/examples/routing.yaml with the nightly
// pipeline also filtering, runs posted to /v1/ingest, and what each routed pipeline stored read
// back through GET /v1/runs/:id. Runs for both pipelines are leased together, so the routed
// batches' writes must deduplicate apart (their own tokens) for both to be stored.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { DomainEvent } from '../../src/domain/events.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** The example, with a filter in the nightly pipeline that drops titles starting `noisy`. */
function pipelineFile(dir: string): string {
  const text = readFileSync(path.join(REPO_ROOT, 'pipelines/examples/routing.yaml'), 'utf8')
    .replace('processors:\n  normalize: {}\n', 'processors:\n  normalize: {}\n  filter:\n    executions:\n      exclude: [{ title: "noisy*" }]\n')
    .replace('processors: [identity, clustering, scoring, rollups]', 'processors: [filter, identity, clustering, scoring, rollups]');
  expect(text).toContain('processors: [filter, identity');
  const file = path.join(dir, 'routing.yaml');
  writeFileSync(file, text);
  return file;
}

const started = Date.parse('2026-11-20T10:00:00Z');
const exec = (title: string) => ({ filePath: 'src/r.test.ts', suite: 'R', title, status: 'pass', startedAt: started, durationMs: 5 });

describe('routing connector', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fh-routing-'));
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  beforeAll(async () => {
    td = await startTestDaemon({ pipelineFile: pipelineFile(dir), env: { SERVICE_PIPELINE_THREAD: 'false' } });
    td.daemon.runtime.onEvent((e) => events.push(e));
  });
  afterAll(async () => {
    await td?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function runOf(branch: string): Promise<{ counts: { total: number }; executions: { title: string }[] }> {
    const list = await td.waitFor(async () => {
      const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
      return res.json.items.length > 0 ? res.json.items : undefined;
    });
    return (await td.request('GET', `/v1/runs/${list[0].id}`)).json;
  }

  it('sends each run to the pipeline of the first route it matches, within one lease, each stored once', async () => {
    const executions = [exec('noisy one'), exec('kept one'), exec('noisy two')];
    const nightly = nativeBatch({ resource: { branch: 'route-nightly', trigger: 'schedule' }, executions });
    const push = nativeBatch({ resource: { branch: 'route-push', trigger: 'push' }, executions });
    // Held, so both runs are leased together and go through both routed pipelines in one lease.
    const receipts: string[] = [];
    await td.daemon.runtime.exclusive(async () => {
      for (const body of [nightly, push]) {
        const res = await td.request('POST', '/v1/ingest', { body });
        expect(res.status).toBe(202);
        receipts.push(res.json.receiptId);
      }
    });
    await td.settled(20_000);

    const nightlyRun = await runOf('route-nightly');
    expect(nightlyRun.executions.map((e) => e.title)).toEqual(['kept one']);
    expect(nightlyRun.counts.total).toBe(1);
    const pushRun = await runOf('route-push');
    expect(pushRun.executions.map((e) => e.title).sort()).toEqual(['kept one', 'noisy one', 'noisy two']);
    expect(pushRun.counts.total).toBe(3);

    // One run.processed per run, from the pipeline it was routed to.
    await td.waitFor(async () => receipts.every((r) => events.some((e) => e.type === 'run.processed' && e.data.receiptId === r)));
    for (const r of receipts) expect(events.filter((e) => e.type === 'run.processed' && e.data.receiptId === r)).toHaveLength(1);

    // Each routed batch wrote under its own token: a lease id with the pipeline after it.
    const ids = await td.daemon.store.query<{ n: string }>(
      `SELECT count() AS n FROM ${td.database}.executions WHERE run_id IN (SELECT id FROM ${td.database}.runs WHERE branch IN ('route-nightly', 'route-push'))`,
    );
    expect(Number(ids[0]!.n)).toBe(4);
  });
});

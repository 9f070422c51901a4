// Reloading the pipeline file (Daemon.reloadPipeline, what SIGHUP calls): a real daemon started on
// a pipeline file in a scratch dir, the file rewritten, and what the pipeline stores read back
// through the API — on the pipeline thread and on one thread.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const DEFAULT = readFileSync(path.join(REPO_ROOT, 'pipelines/default.yaml'), 'utf8');
const dir = mkdtempSync(path.join(os.tmpdir(), 'fh-reload-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The default pipeline with a filter after normalize dropping executions titled `dropme…`. */
const FILTERED = DEFAULT.replace('processors:\n  normalize: {}\n', 'processors:\n  normalize: {}\n  filter:\n    executions:\n      exclude: [{ title: "/^dropme/" }]\n').replace(
  'processors: [normalize, identity,',
  'processors: [normalize, filter, identity,',
);
/** Invalid: an executions pipeline listing a processor that is not defined. */
const INVALID = DEFAULT.replace('processors: [normalize, identity,', 'processors: [normalize, nosuchprocessor, identity,');
/** Valid, but without the junit receiver (its route is bound). */
const NO_JUNIT = FILTERED.replace('  junit: {}     # POST /v1/ingest/junit\n', '').replace('receivers: [otlp, junit, native]', 'receivers: [otlp, native]');

const exec = (title: string, i: number) => ({ filePath: 'src/a.test.ts', suite: 'A', title, status: 'pass', startedAt: Date.parse('2026-11-20T10:00:00Z') + i, durationMs: 5 });
const batch = (branch: string) => nativeBatch({ resource: { branch }, executions: [exec('kept one', 0), exec('dropme please', 1)] });

/** Titles of the executions stored for the run of `branch`. */
async function titlesOf(td: TestDaemon, branch: string): Promise<string[]> {
  const list = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
    return res.json.items.length > 0 ? res.json.items : undefined;
  });
  const run = (await td.request('GET', `/v1/runs/${list[0].id}`)).json as { executions: { title: string }[] };
  return run.executions.map((e) => e.title).sort();
}

for (const thread of ['true', 'false']) {
  describe(`pipeline reload (SERVICE_PIPELINE_THREAD=${thread})`, () => {
    const file = path.join(dir, `pipeline-${thread}.yaml`);
    let td: TestDaemon;
    afterAll(async () => td?.close());

    it('swaps the processors for the new file’s; refuses an invalid file or changed receivers and keeps the running graph', async () => {
      writeFileSync(file, DEFAULT);
      td = await startTestDaemon({ pipelineFile: file, env: { SERVICE_PIPELINE_THREAD: thread }, threadFromSources: true });
      await td.ingest(batch(`before-${thread}`));
      expect(await titlesOf(td, `before-${thread}`)).toEqual(['dropme please', 'kept one']);

      writeFileSync(file, FILTERED);
      expect(await td.daemon.reloadPipeline()).toEqual({ ok: true });
      await td.ingest(batch(`filtered-${thread}`));
      expect(await titlesOf(td, `filtered-${thread}`)).toEqual(['kept one']);
      // The dashboard's pipeline view shows the running graph.
      const view = await td.request('GET', '/trpc/pipeline.graph', { token: td.adminToken });
      expect(view.status).toBe(200);
      expect(view.json.result.data.pipelines.find((p: { id: string }) => p.id === 'executions').processors).toContain('filter');

      writeFileSync(file, INVALID);
      const invalid = await td.daemon.reloadPipeline();
      expect(invalid.ok).toBe(false);
      if (invalid.ok) return;
      expect(invalid.error).toContain(path.basename(file));
      expect(invalid.error).toContain('nosuchprocessor');
      await td.ingest(batch(`after-invalid-${thread}`));
      expect(await titlesOf(td, `after-invalid-${thread}`)).toEqual(['kept one']);

      writeFileSync(file, NO_JUNIT);
      const receivers = await td.daemon.reloadPipeline();
      expect(receivers.ok).toBe(false);
      if (receivers.ok) return;
      expect(receivers.error).toMatch(/receivers/);
      expect(receivers.error).toContain('receivers.junit');
      await td.ingest(batch(`after-receivers-${thread}`));
      expect(await titlesOf(td, `after-receivers-${thread}`)).toEqual(['kept one']);
      // The junit receiver still answers.
      const junit = await td.request('POST', '/v1/ingest/junit', {
        body: { idempotencyKey: `junit-${thread}`, resource: { ciProvider: 'github_actions', commitSha: 'abcdef1234', branch: `junit-${thread}`, trigger: 'push' }, xml: '<testsuite name="s"><testcase name="t"/></testsuite>' },
      });
      expect(junit.status).toBe(202);
      await td.settled();
    });

    it('loses nothing queued: jobs accepted while the lease loop is held are processed by the new graph', async () => {
      writeFileSync(file, FILTERED);
      expect(await td.daemon.reloadPipeline()).toEqual({ ok: true });
      const branches = Array.from({ length: 6 }, (_, i) => `held-${thread}-${i}`);
      let held!: () => void;
      let release!: () => void;
      const holding = new Promise<void>((r) => (held = r));
      const hold = td.daemon.runtime.exclusive(
        () =>
          new Promise<void>((r) => {
            release = r;
            held();
          }),
      );
      await holding;
      for (const b of branches) {
        const res = await td.request('POST', '/v1/ingest', { body: batch(b) });
        expect(res.status).toBe(202);
      }
      expect(td.daemon.queue.depth()).toBe(branches.length);
      const counted = td.daemon.runtime.stats.executions;
      // Back to the default (no filter) while the jobs wait: the reload waits for the hold.
      writeFileSync(file, DEFAULT);
      const reloaded = td.daemon.reloadPipeline();
      // A window of 0.3 s in which the waiting reload must not let the jobs through (the behaviour
      // under test; there is no event to wait for).
      await new Promise((r) => setTimeout(r, 300));
      expect(td.daemon.queue.depth()).toBe(branches.length);
      release();
      await hold;
      expect(await reloaded).toEqual({ ok: true });
      await td.settled(60_000);
      for (const b of branches) expect(await titlesOf(td, b)).toEqual(['dropme please', 'kept one']);
      // The counters go on across the swap (/metrics reads them as monotonic counters). At least:
      // with the pipeline thread, counts of the work before `counted` was read may still arrive
      // (the thread posts them every 250 ms), so equality was a race; a reset would fall short.
      expect(counted).toBeGreaterThan(0);
      await td.waitFor(async () => td.daemon.runtime.stats.executions >= counted + 2 * branches.length, 60_000);
      const dead = await td.request('GET', '/v1/admin/dead-jobs', { token: td.adminToken });
      expect(dead.json.items).toEqual([]);
    });
  });
}

// POST /v1/splits against a real daemon: a history where one file takes 10× the others is split
// into balanced shards, all shards of a build get the one plan the first call stored (also after
// the timings changed), a later build is planned from the new timings, and bad input is refused
// with the path of the offending value.
import { randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/client.js';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { balanceRatio, splitByName } from '../../client/src/contract/split.js';
import { SplitPlanRepo } from '../../src/store/splits.js';
import { SplitTimings } from '../../src/store/split-timings.js';
import { createProject } from '../helpers/route-examples.js';
import { CHDB_PATH, nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const NORMAL = Array.from({ length: 20 }, (_, i) => `src/f${String(i).padStart(2, '0')}.test.ts`);
const HEAVY = 'src/heavy.test.ts';
const FILES = [...NORMAL, HEAVY];

let td: TestDaemon;
let runSeq = 0;

/** One run: every file has two tests of `perTest(file)` ms each (so a file takes twice that). */
function run(perTest: (file: string) => number): Record<string, unknown> {
  const started = Date.now() - 3_600_000 + runSeq++ * 60_000;
  return nativeBatch({
    run: { status: 'passed', startedAt: new Date(started).toISOString() },
    executions: FILES.flatMap((file, i) =>
      [0, 1].map((t) => ({ filePath: file, suite: file, title: `case ${t}`, status: 'pass', startedAt: started + i * 10 + t, durationMs: perTest(file) })),
    ),
  });
}

const split = (body: Record<string, unknown>, token?: string) => td.request('POST', '/v1/splits', { body, ...(token ? { token } : {}) });

function expectDisjointCover(shards: string[][], files: string[]): void {
  const all = shards.flat();
  expect(new Set(all).size).toBe(all.length);
  expect([...all].sort()).toEqual([...files].sort());
}

beforeAll(async () => {
  td = await startTestDaemon();
  // Two runs where the heavy file takes 10× each other file (20 s vs 2 s).
  await td.ingest(run((f) => (f === HEAVY ? 10_000 : 1_000)), run((f) => (f === HEAVY ? 10_000 : 1_000)));
}, 60_000);

afterAll(async () => td?.close());

describe('POST /v1/splits', () => {
  let firstPlan: { planId: string; shards: string[][] };

  it('gives the three shards of a build one plan: disjoint, covering every file, balanced by history', async () => {
    const answers = await Promise.all([0, 1, 2].map((index) => split({ buildId: 'build-1', total: 3, index, files: [...FILES].reverse() })));
    for (const a of answers) expect(a.status, a.text).toBe(200);
    const [a0, a1, a2] = answers.map((a) => a.json);
    expect(new Set([a0.planId, a1.planId, a2.planId]).size).toBe(1);
    expect(a1.shards).toEqual(a0.shards);
    expect(a2.shards).toEqual(a0.shards);
    expect(answers.map((a) => a.json.source).sort()).toEqual(['created', 'stored', 'stored']);
    expect([a0.files, a1.files, a2.files]).toEqual(a0.shards);
    expectDisjointCover([a0.files, a1.files, a2.files], FILES);

    // 60 s of work in all: the heavy file (20 s) alone, ten 2-second files on each other shard.
    const took = (f: string): number => (f === HEAVY ? 20_000 : 2_000);
    expect(a0.shards.find((s: string[]) => s.includes(HEAVY))).toEqual([HEAVY]);
    expect(balanceRatio(a0.shards, took)).toBeLessThanOrEqual(1.1);
    expect([...a0.estimatedMs].sort((x: number, y: number) => x - y)).toEqual([20_000, 20_000, 20_000]);
    expect(a0.unknownFiles).toEqual([]);
    // What a count split would do with the same files: the heavy file's shard has six more (1.6×).
    expect(balanceRatio(splitByName(FILES, 3), took)).toBeGreaterThan(1.5);
    firstPlan = a0;
  });

  it('keeps the stored plan for the rest of the build when the timings change; a new build follows them', async () => {
    // Three runs where f03 became the slow file and the heavy one got fast: the medians flip.
    await td.ingest(...[1, 2, 3].map(() => run((f) => (f === 'src/f03.test.ts' ? 10_000 : 1_000))));
    const timings = await new SplitTimings(td.daemon.store).fileDurations((await projectId()), FILES);
    expect(timings.get('src/f03.test.ts')).toEqual({ ms: 20_000, runs: 5 });
    expect(timings.get(HEAVY)).toEqual({ ms: 2_000, runs: 5 });

    const late = await split({ buildId: 'build-1', total: 3, index: 1, files: FILES });
    expect(late.status).toBe(200);
    expect(late.json).toMatchObject({ planId: firstPlan.planId, source: 'stored', shards: firstPlan.shards });

    const answers = await Promise.all([2, 0, 1].map((index) => split({ buildId: 'build-2', total: 3, index, files: FILES })));
    const plans = answers.map((a) => a.json);
    expect(new Set(plans.map((p) => p.planId)).size).toBe(1);
    expect(plans[0].planId).not.toBe(firstPlan.planId);
    for (const p of plans) expect(p.shards).toEqual(plans[0].shards);
    expectDisjointCover(plans[0].shards, FILES);
    expect(plans[0].shards.find((s: string[]) => s.includes('src/f03.test.ts'))).toEqual(['src/f03.test.ts']);
    expect(plans[0].shards.find((s: string[]) => s.includes(HEAVY))).toHaveLength(10);
  });

  it('plans each file list and shard count of a build on its own; unknown files at the median; no build id, nothing stored', async () => {
    const more = [...FILES, 'src/brand-new.test.ts'];
    const res = await split({ buildId: 'build-1', total: 3, files: more });
    expect(res.json.source).toBe('created');
    expect(res.json.planId).not.toBe(firstPlan.planId);
    expect(res.json.unknownFiles).toEqual(['src/brand-new.test.ts']);
    expect(res.json.defaultMs).toBe(2_000);
    expect(res.json.files).toBeUndefined();
    expectDisjointCover(res.json.shards, more);

    const four = await split({ buildId: 'build-1', total: 4, files: FILES });
    expect(four.json.source).toBe('created');
    expect(four.json.shards).toHaveLength(4);

    const loose = await split({ total: 2, index: 1, files: FILES });
    expect(loose.status).toBe(200);
    expect(loose.json).toMatchObject({ planId: null, buildId: null, source: 'computed', createdAt: null });
    expectDisjointCover(loose.json.shards, FILES);
    expect(loose.json.files).toEqual(loose.json.shards[1]);
  });

  it('agrees on the first writer across writers that do not share a lock (two processes)', async () => {
    const pid = await projectId();
    const key = { buildId: 'race', total: 2, filesHash: 'a'.repeat(64) };
    const planA = { shards: [['a'], ['b']], estimatedMs: [1, 1], unknownFiles: [], defaultMs: 1, timedRuns: 0 };
    const planB = { shards: [['b'], ['a']], estimatedMs: [1, 1], unknownFiles: [], defaultMs: 1, timedRuns: 0 };
    const [ra, rb] = await Promise.all([
      new SplitPlanRepo(td.daemon.store).findOrCreate(pid, key, async () => planA),
      new SplitPlanRepo(td.daemon.store).findOrCreate(pid, key, async () => planB),
    ]);
    const winner = await new SplitPlanRepo(td.daemon.store).find(pid, key);
    expect(winner).not.toBeNull();
    // Whoever says it lost returns the winner; whoever says it won is the winner.
    for (const r of [ra, rb]) expect(r.plan.planId === winner!.planId).toBe(true);
    expect([ra.created, rb.created].filter(Boolean)).toHaveLength(1);
  });

  it('computes a plan once when the calls of one key meet in this process', async () => {
    const pid = await projectId();
    const repo = new SplitPlanRepo(td.daemon.store);
    const key = { buildId: 'one-lock', total: 1, filesHash: 'b'.repeat(64) };
    let computed = 0;
    const compute = async () => {
      computed++;
      await new Promise((r) => setTimeout(r, 20));
      return { shards: [['a']], estimatedMs: [1], unknownFiles: [], defaultMs: 1, timedRuns: 0 };
    };
    const results = await Promise.all(Array.from({ length: 5 }, () => repo.findOrCreate(pid, key, compute)));
    expect(computed).toBe(1);
    expect(new Set(results.map((r) => r.plan.planId)).size).toBe(1);
    expect(results.map((r) => r.created)).toEqual([true, false, false, false, false]);
  });

  it('refuses bad input with the path of the value, and tokens without the ingest scope', async () => {
    const bad = async (body: Record<string, unknown>) => {
      const res = await split(body);
      expect(res.status, res.text).toBe(400);
      expect(res.json.error).toBe('invalid_payload');
      return res.json.issues.map((i: { path: string }) => i.path);
    };
    expect(await bad({ buildId: 'b', total: 0, files: ['a'] })).toEqual(['total']);
    expect(await bad({ buildId: 'b', total: 1001, files: ['a'] })).toEqual(['total']);
    expect(await bad({ buildId: 'b', total: 3, index: 3, files: ['a'] })).toEqual(['index']);
    expect(await bad({ buildId: 'b', total: 3, index: -1, files: ['a'] })).toEqual(['index']);
    expect(await bad({ buildId: 'b', total: 3, files: [] })).toEqual(['files']);
    expect(await bad({ buildId: 'b', total: 3, files: Array.from({ length: 10_001 }, (_, i) => `f${i}`) })).toEqual(['files']);
    expect(await bad({ buildId: 'b', total: 3, files: ['ok', ''] })).toEqual(['files.1']);
    expect(await bad({ buildId: 'x'.repeat(257), total: 3, files: ['a'] })).toEqual(['buildId']);

    const other = await createProject(td, 'split-scopes', [['read']]);
    const refused = await split({ buildId: 'b', total: 2, files: ['a'] }, other.tokens[0]);
    expect([refused.status, refused.json.error]).toEqual([403, 'insufficient_scope']);
  });
});

describe('migration 015', () => {
  it('loads the last 30 days of executions into file_run_durations, exactly once when retried, and the view keeps it up to date', async () => {
    const all = fileURLToPath(new URL('../../src/store/migrations/', import.meta.url));
    const before = mkdtempSync(path.join(tmpdir(), 'fh-migrations-'));
    for (const f of readdirSync(all)) if (/^\d+_/.test(f) && Number(f.split('_')[0]) < 15) copyFileSync(path.join(all, f), path.join(before, f));
    const own = await openStore({ chdbPath: CHDB_PATH, database: `t_${randomBytes(6).toString('hex')}` });
    try {
      await migrate(own, before);
      const project = randomUUID();
      const runA = randomUUID();
      const runB = randomUUID();
      const day = (daysAgo: number): string => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
      const at = (daysAgo: number): string => `${day(daysAgo)} 10:00:00.000`;
      const insert = async (rows: [string, string, number, number][]) =>
        own.command(
          `INSERT INTO ${own.table('executions')} (project_id, test_id, started_at, id, run_id, day, status, duration_ms, file_path)
           VALUES ${rows.map(([run, file, ms, ago]) => `('${project}', '${randomUUID()}', '${at(ago)}', '${randomUUID()}', '${run}', '${day(ago)}', 'pass', ${ms}, '${file}')`).join(', ')}`,
        );
      // Run A: a.test.ts 1 s + 0.5 s; run B: 3 s; a run 40 days ago is past the backfill's window.
      await insert([[runA, 'a.test.ts', 1_000, 2], [runA, 'a.test.ts', 500, 2], [runB, 'a.test.ts', 3_000, 1], [randomUUID(), 'old.test.ts', 9_000, 40]]);
      await migrate(own);
      const timings = new SplitTimings(own);
      expect(await timings.fileDurations(project, ['a.test.ts', 'old.test.ts'], { days: 60 })).toEqual(new Map([['a.test.ts', { ms: 2_250, runs: 2 }]]));

      // A retry of the migration (one that failed after its backfill) counts nothing twice.
      const m15 = loadMigrations(all).find((m) => m.version === 15)!;
      for (const stmt of m15.statements) await own.command(stmt.replaceAll('{db}', `\`${own.database}\``));
      expect((await timings.fileDurations(project, ['a.test.ts'])).get('a.test.ts')).toEqual({ ms: 2_250, runs: 2 });

      // New executions reach the table through the view.
      await insert([[randomUUID(), 'a.test.ts', 4_000, 0]]);
      expect((await timings.fileDurations(project, ['a.test.ts'])).get('a.test.ts')).toEqual({ ms: 3_000, runs: 3 });
    } finally {
      await own.command(`DROP DATABASE IF EXISTS \`${own.database}\``);
      await own.close();
      rmSync(before, { recursive: true, force: true });
    }
  });
});

async function projectId(): Promise<string> {
  const rows = await td.daemon.store.query<{ id: string }>(`SELECT toString(id) AS id FROM ${td.daemon.store.table('projects')} FINAL WHERE slug = 'default'`);
  return rows[0]!.id;
}

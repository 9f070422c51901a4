// The identity stage over a large report that arrives in parts (issue 40), against real chDB: the
// report's parts go through the real identity processor as consecutive leases, each written by the
// real clickhouse exporter before the next is resolved. A later part's stitch lookup must not read
// back the tests of the run's earlier parts (they ran in this run, so none can be a move or rename
// origin): that read grew with the run stored so far and made a report quadratic. The decisions it
// feeds (moved, renamed, new, a present runner-up blocking a rename, a copy beside its original)
// stay what they were; and the repository's filter keeps the rows an exact match or a rename's
// runner-up may need.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { buildRun } from '../../src/domain/records.js';
import { clickhouseExporterFactory } from '../../src/exporters/clickhouse.js';
import type { ExecutionsExporter, ExecutionsProcessor, Host } from '../../src/pipeline/component.js';
import { leaseSink } from '../../src/pipeline/lease-sink.js';
import { WorkBatch } from '../../src/pipeline/work-batch.js';
import { identityProcessorFactory } from '../../src/processors/identity.js';
import type { Job } from '../../src/queue/types.js';
import type { Store } from '../../src/store/client.js';
import { IdentityRepo, type StitchKey } from '../../src/store/identities.js';
import { openRepositories, type Repositories } from '../../src/store/repositories.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { openTestStore, dropTestStore } from '../helpers/daemon.js';
import { reportJobs } from '../helpers/report-jobs.js';

const T0 = Date.parse('2026-11-20T10:00:00Z');
const FILE = 'src/test/java/com/example/BigTest.java';
const SUITE = 'com.example.BigTest';

let store: Store;
const logger = createLogger('silent');

beforeAll(async () => {
  store = await openTestStore();
});

afterAll(() => dropTestStore(store));

/** Rows the stitch lookups returned, per lease: the spy calls the real repository. */
interface Lookups {
  candidates: number;
  competitors: number;
}

/**
 * One worker's identity processor and exporter over the store (a daemon's, as far as identity goes),
 * with the stitch lookups counted. Several on one database are several daemons.
 */
async function worker(): Promise<{ lease(jobs: Job[]): Promise<{ batch: WorkBatch; lookups: Lookups }>; stop(): Promise<void> }> {
  const repos: Repositories = openRepositories(store);
  let lookups: Lookups = { candidates: 0, competitors: 0 };
  const real = repos.identities;
  const stitchCandidates = real.stitchCandidates.bind(real);
  const presentCompetitors = real.presentCompetitors.bind(real);
  real.stitchCandidates = async (...args) => {
    const rows = await stitchCandidates(...args);
    lookups.candidates += rows.length;
    return rows;
  };
  real.presentCompetitors = async (...args) => {
    const rows = await presentCompetitors(...args);
    lookups.competitors += rows.length;
    return rows;
  };
  const host = { logger, extensions: { ids: [], repositories: () => repos } } as unknown as Host;
  const identity: ExecutionsProcessor = identityProcessorFactory.createExecutions!({}, { id: 'identity', logger });
  const exporter: ExecutionsExporter = clickhouseExporterFactory.createExecutions!({}, { id: 'clickhouse', logger });
  await identity.start(host);
  await exporter.start(host);
  let leases = 0;
  return {
    async lease(jobs) {
      lookups = { candidates: 0, competitors: 0 };
      const batch = new WorkBatch({
        leaseId: `lease-${randomUUID()}`,
        now: T0 + 3_600_000 + leases++,
        items: jobs.map((job) => ({
          job,
          run: buildRun({ projectId: job.projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt }),
          executions: [],
        })),
      });
      await identity.processBatch(batch);
      await exporter.exportBatch(batch, leaseSink(store, batch.leaseId));
      return { batch, lookups };
    },
    async stop() {
      await identity.shutdown();
      await exporter.shutdown();
    },
  };
}

const test = (title: string, filePath = FILE, suite = SUITE): ExecutionInput => ({ filePath, suite, title, status: 'pass', attempt: 1, startedAt: T0, durationMs: 3 });

/** A JUnit report's parts as the receiver makes them: one run (keyed by the report), one job per part. */
function report(projectId: string, parts: ExecutionInput[][], commitSha: string, key = `report-${randomUUID()}`): Job[] {
  return reportJobs(projectId, parts, { startedAt: T0, commitSha, key });
}

const sha = (): string => randomBytes(20).toString('hex');

/** The test id each title resolved to in the lease. */
function idsOf(batch: WorkBatch): Map<string, string> {
  return new Map(batch.items.flatMap((i) => i.executions.map((e) => [`${e.input.filePath}|${e.input.title}`, e.testId] as const)));
}

async function stitchRows(projectId: string): Promise<{ level: string; from_title: string; to_title: string; from_file_path: string; to_file_path: string }[]> {
  return store.query(
    `SELECT level, from_file_path, from_title, to_file_path, to_title FROM ${store.table('identity_stitches')} FINAL
     WHERE project_id = {projectId:UUID} ORDER BY to_file_path, to_title`,
    { projectId },
  );
}

describe('identity over a large report in parts (issue 40)', () => {
  it("reads back none of the run's earlier parts as stitch candidates: every part's lookup returns nothing, on any worker", async () => {
    const projectId = randomUUID();
    const perPart = 300;
    const partCount = 5;
    const parts = Array.from({ length: partCount }, (_, p) => Array.from({ length: perPart }, (_, i) => test(`test_${p * perPart + i}`)));
    const jobs = report(projectId, parts, sha());
    // Two daemons on one database take the parts in turn; the second starts (as after a restart) before its first lease.
    const a = await worker();
    const b = await worker();
    try {
      for (const [p, job] of jobs.entries()) {
        const { batch, lookups } = await (p % 2 === 0 ? a : b).lease([job]);
        expect(batch.identities, `part ${p + 1}: every test is new`).toHaveLength(perPart);
        expect(batch.stitches).toEqual([]);
        // The run's earlier parts are the same file, suite and params: candidates by name, all present.
        const stored = await store.query<{ n: string }>(
          `SELECT uniqExact(id) AS n FROM ${store.table('test_identities')} WHERE project_id = {projectId:UUID} AND file_path = {file:String} AND suite = {suite:String}`,
          { projectId, file: FILE, suite: SUITE },
        );
        expect(Number(stored[0]!.n)).toBe((p + 1) * perPart);
        // What reached the processor: nothing, however much of the run is stored.
        expect(lookups, `part ${p + 1}`).toEqual({ candidates: 0, competitors: 0 });
      }
    } finally {
      await a.stop();
      await b.stop();
    }
    const identities = await store.query<{ n: string }>(`SELECT uniqExact(id) AS n FROM ${store.table('test_identities')} WHERE project_id = {projectId:UUID}`, { projectId });
    expect(Number(identities[0]!.n)).toBe(perPart * partCount);
    expect(await stitchRows(projectId)).toEqual([]);
  });

  it("leaves out a run's earlier parts also when they ran in another run of the same commit (a shard)", async () => {
    const projectId = randomUUID();
    const commit = sha();
    const w = await worker();
    try {
      await w.lease(report(projectId, [Array.from({ length: 200 }, (_, i) => test(`shard1_${i}`))], commit));
      // Shard 2 of the same commit: its tests are new, and shard 1's ran on this commit.
      const { batch, lookups } = await w.lease(report(projectId, [Array.from({ length: 200 }, (_, i) => test(`shard2_${i}`))], commit));
      expect(batch.identities).toHaveLength(200);
      expect(lookups).toEqual({ candidates: 0, competitors: 0 });
    } finally {
      await w.stop();
    }
    expect(await stitchRows(projectId)).toEqual([]);
  });

  it('keeps every decision of a later run: moves, renames, a present runner-up that blocks a rename, a copy beside its original', async () => {
    const projectId = randomUUID();
    const OTHER = 'src/test/java/com/example/moved/BigTest.java';
    const filler = (from: number, n: number): ExecutionInput[] => Array.from({ length: n }, (_, i) => test(`filler_${from + i}`));
    const w = await worker();
    try {
      // Run 1 (its own commit): every test once.
      const run1 = await w.lease(
        report(
          projectId,
          [[test('saves the cart'), test('saves the cart twice'), test('removes an item'), test('applies a coupon'), test('refunds an order'), ...filler(0, 100)]],
          sha(),
        ),
      );
      const id1 = idsOf(run1.batch);
      // Run 2, another commit, in two parts (two leases). Part 1 runs the runner-up and the coupon test.
      const commit2 = sha();
      const run2 = report(
        projectId,
        [
          [test('saves the cart twice'), test('applies a coupon'), ...filler(0, 100)],
          [
            // Closest to 'saves the cart' (0.75), but 'saves the cart twice' (0.6, ran in part 1) is too close behind: new.
            test('saves the cart again'),
            // Clearly closest to 'removes an item', which has not run in this run: renamed (L3).
            test('removes an item quickly'),
            // A copy of 'applies a coupon', which ran in part 1: new.
            test('applies a coupon', OTHER),
            // 'refunds an order' has not run in this run: moved (L2).
            test('refunds an order', OTHER),
          ],
        ],
        commit2,
      );
      const part1 = await w.lease([run2[0]!]);
      expect(part1.batch.identities).toEqual([]);
      const part2 = await w.lease([run2[1]!]);
      const id2 = idsOf(part2.batch);
      expect(id2.get(`${FILE}|saves the cart again`)).not.toBe(id1.get(`${FILE}|saves the cart`));
      expect(id2.get(`${FILE}|saves the cart again`)).not.toBe(id1.get(`${FILE}|saves the cart twice`));
      expect(id2.get(`${FILE}|removes an item quickly`)).toBe(id1.get(`${FILE}|removes an item`));
      expect(id2.get(`${OTHER}|applies a coupon`)).not.toBe(id1.get(`${FILE}|applies a coupon`));
      expect(id2.get(`${OTHER}|refunds an order`)).toBe(id1.get(`${FILE}|refunds an order`));
      expect(part2.batch.identities.filter((i) => i.stitched !== true).map((i) => i.title).sort()).toEqual(['applies a coupon', 'saves the cart again']);
      // The runner-up that ran in part 1 was read for the rename decision, and only because a rename was possible.
      expect(part2.lookups.competitors).toBeGreaterThan(0);
    } finally {
      await w.stop();
    }
    expect((await stitchRows(projectId)).map((s) => [s.level, s.from_title, s.to_title, s.to_file_path])).toEqual([
      ['L3', 'removes an item', 'removes an item quickly', FILE],
      ['L2', 'refunds an order', 'refunds an order', OTHER],
    ]);
  });

  it("stitches a test of one run to a candidate that ran only in another run of the same lease", async () => {
    const projectId = randomUUID();
    const w = await worker();
    try {
      // Run P's first part is stored; its second part shares a lease with run Q (another commit).
      const p = report(projectId, [Array.from({ length: 50 }, (_, i) => test(`case_${i}`)), Array.from({ length: 50 }, (_, i) => test(`case_${50 + i}`))], sha());
      const first = await w.lease([p[0]!]);
      const q = report(projectId, [[test('case_7_renamed')]], sha());
      const { batch, lookups } = await w.lease([p[1]!, ...q]);
      // case_7 ran in run P, not in run Q: for Q's test it is no present candidate, and it is the clear rename origin.
      expect(idsOf(batch).get(`${FILE}|case_7_renamed`)).toBe(idsOf(first.batch).get(`${FILE}|case_7`));
      // Run P's stored part did not run in run Q: those candidates are read (with where they ran).
      expect(lookups.candidates).toBe(50);
    } finally {
      await w.stop();
    }
    expect((await stitchRows(projectId)).map((s) => [s.level, s.from_title, s.to_title])).toEqual([['L3', 'case_7', 'case_7_renamed']]);
  });
});

describe('IdentityRepo stitch lookups against stored rows', () => {
  const projectId = randomUUID();
  const run = randomUUID();
  const commit = sha();
  const repo = (): IdentityRepo => new IdentityRepo(store);
  let n = 0;

  /** One identity (its current name) that ran in `ranIn` (a run and its commit), or nowhere. */
  async function stored(filePath: string, suite: string, title: string, ranIn?: { run: string; commit: string }): Promise<string> {
    const id = randomUUID();
    const fp = `fp-${n++}`;
    await store.insert(
      'test_identities',
      [{ project_id: projectId, id, fingerprint: fp, file_path: filePath, suite, title, params: '', params_hash: '', first_seen_at: T0, version: T0, stitched: 0 }],
      `ids-${id}`,
    );
    if (ranIn) {
      await store.insert(
        'executions',
        [{ project_id: projectId, test_id: id, started_at: T0, id: randomUUID(), run_id: ranIn.run, day: '2026-11-20', status: 'pass', attempt: 1, file_path: filePath, suite, title, params: '', fingerprint: fp, commit_sha: ranIn.commit }],
        `ex-${id}`,
      );
    }
    return id;
  }

  const key = (title: string, filePath = FILE): StitchKey => ({ filePath: filePath.toLowerCase(), suite: SUITE, title, paramsHash: '' });
  const seen = { where: [{ runId: run, commitSha: commit }], exceptFingerprints: ['fp-new'] };

  it('returns the candidates that did not run everywhere, and those present that may be an exact match; the rest only as competitors', async () => {
    const here = { run, commit };
    const otherRun = { run: randomUUID(), commit: sha() };
    const absent = await stored(FILE, SUITE, 'absent test', otherRun);
    const never = await stored(FILE, SUITE, 'never ran');
    const present = await stored(FILE, SUITE, 'present test', here);
    const onCommit = await stored(FILE, SUITE, 'ran on the commit', { run: randomUUID(), commit });
    // Present, but named as a key: an exact match or a move, whatever its presence.
    const sameName = await stored('src/elsewhere/BigTest.java', SUITE, 'incoming test', here);
    // Present, with a title that trims to the key's: an exact match in the processor.
    const untrimmed = await stored(FILE, SUITE, 'incoming test\u00a0', here);
    const keys = [key('incoming test')];
    const found = await repo().stitchCandidates(projectId, keys, seen);
    expect(new Set(found.map((c) => c.id))).toEqual(new Set([absent, never, sameName, untrimmed]));
    expect(found.find((c) => c.id === absent)!.ranAt).toEqual([]);
    expect(found.find((c) => c.id === sameName)!.ranAt).toEqual([{ runId: run, commitSha: commit }]);

    // The competitors of a possible rename: the present ones left out, in the key's file.
    const competitors = await repo().presentCompetitors(projectId, keys, seen, keys);
    expect(new Set(competitors.map((c) => c.id))).toEqual(new Set([present, onCommit]));
    expect(competitors.find((c) => c.id === onCommit)!.ranAt.map((w) => w.commitSha)).toEqual([commit]);
    expect(await repo().presentCompetitors(projectId, keys, seen, [])).toEqual([]);
    // In the key's suite and params but another file: no competitor of its rename...
    const ascii = await stored('src/test/java/com/example/OtherTest.java', SUITE, 'other file', here);
    // ...unless SQL cannot tell its path as normalizeTestPath reads it (not plain ASCII): then the caller compares.
    const unicode = await stored('src/test/java/com/exämple/bigtest.java', SUITE, 'other file too', here);
    const wider = [...keys, key('x', 'src/test/java/com/example/OtherTest.java'), key('y', 'src/test/java/com/exämple/bigtest.java')];
    const found2 = await repo().presentCompetitors(projectId, wider, seen, keys);
    expect(new Set(found2.map((c) => c.id))).toEqual(new Set([present, onCommit, unicode]));
    expect(found2.map((c) => c.id)).not.toContain(ascii);
  });
});

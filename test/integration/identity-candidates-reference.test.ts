// The stitch candidate lookup (IdentityRepo.stitchCandidates / presentCompetitors) against a
// reference: the query as it was written before it was made cheaper for a lease full of new tests
// (issue 40: each key array passed once, and "ran at every one of the lease's runs" counted from the
// executions instead of checked per candidate), run on the same randomised stored identities and
// executions in real chDB. Both must return the same candidates with the same runs: identity
// decisions (which history a test inherits) are made from them. The data is drawn from a small
// vocabulary so that keys match, names change between versions, runs share commits, commits are
// unknown or placeholders, titles are untrimmed and paths are not plain ASCII.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isKnownCommit } from '../../src/domain/stitch.js';
import type { Store } from '../../src/store/client.js';
import { IdentityRepo, type SeenIn, type StitchCandidate, type StitchKey } from '../../src/store/identities.js';
import { openTestStore, dropTestStore } from '../helpers/daemon.js';

let store: Store;

beforeAll(async () => {
  store = await openTestStore();
});

afterAll(() => dropTestStore(store));

// src/store/identities.ts's patterns, as the reference was written against them.
const UNTRIMMED = '^[\\s\\x0B\\p{Z}\\x{FEFF}]|[\\s\\x0B\\p{Z}\\x{FEFF}]$';
const PLAIN_PATH = '^[!-.0-\\[\\]-~]([ -\\[\\]-~]*[!-\\[\\]-~])?$';

/** The candidate query before issue 40's rewrite (commit 9dbd48e), verbatim but for its packaging. */
async function reference(projectId: string, keys: readonly StitchKey[], seen: SeenIn, renameKeys: readonly StitchKey[] | null): Promise<StitchCandidate[]> {
  if (keys.length === 0) return [];
  const seenFile = new Set<string>();
  const fk = { files: [] as string[], fileSuites: [] as string[], fileParams: [] as string[] };
  for (const k of keys) {
    const file = k.filePath.toLowerCase();
    const id = `${file}\u0000${k.suite}\u0000${k.paramsHash}`;
    if (seenFile.has(id)) continue;
    seenFile.add(id);
    fk.files.push(file);
    fk.fileSuites.push(k.suite);
    fk.fileParams.push(k.paramsHash);
  }
  const ids = store.table('test_identities');
  const byTitle = 'SELECT arrayJoin(arrayZip({suites:Array(String)}, {titles:Array(String)}, {params:Array(String)}))';
  const byFile = 'SELECT arrayJoin(arrayZip({files:Array(String)}, {fileSuites:Array(String)}, {fileParams:Array(String)}))';
  const arms = `((suite, title, params_hash) IN (${byTitle}) OR (lower(file_path), suite, params_hash) IN (${byFile}))`;
  const matching = `SELECT id FROM ${ids} WHERE project_id = {projectId:UUID} AND ${arms}`;
  const everywhere =
    "(notEmpty({whereRuns:Array(UUID)}) AND arrayAll((r, s) -> arrayExists(x -> x.1 = r OR (s != '' AND x.2 = s), ran), {whereRuns:Array(UUID)}, {whereShas:Array(String)}))";
  const mayBeExact = '((suite, title, params_hash) IN (' + byTitle + ') OR match(title, {untrimmed:String}))';
  const keep =
    renameKeys === null
      ? `NOT ${everywhere} OR ${mayBeExact}`
      : `${everywhere} AND NOT ${mayBeExact}
         AND (suite, params_hash) IN (SELECT arrayJoin(arrayZip({renameSuites:Array(String)}, {renameParams:Array(String)})))
         AND (lower(file_path) IN {renameFiles:Array(String)} OR NOT (match(file_path, {plainPath:String}) AND NOT startsWith(file_path, './')))`;
  const known = [...new Set(seen.where.map((w) => w.commitSha).filter(isKnownCommit))];
  const rows = await store.query<{ id: string; file_path: string; suite: string; title: string; params_hash: string; ran: [string, string][] }>(
    `SELECT id, file_path, suite, title, params_hash, ran FROM (
       SELECT toString(c.id) AS id, c.file_path AS file_path, c.suite AS suite, c.title AS title, c.params_hash AS params_hash, p.ran AS ran
       FROM (
         SELECT id, file_path, suite, title, params_hash FROM (
           SELECT id, argMax(file_path, version) AS file_path, argMax(suite, version) AS suite, argMax(title, version) AS title,
                  argMax(params_hash, version) AS params_hash
           FROM ${ids}
           WHERE project_id = {projectId:UUID} AND id IN (${matching})
           GROUP BY id)
         WHERE ${arms}) AS c
       LEFT JOIN (
         SELECT test_id, groupUniqArray((run_id, commit_sha)) AS ran FROM ${store.table('executions')}
         WHERE project_id = {projectId:UUID} AND test_id IN (${matching})
           AND (run_id IN {runs:Array(UUID)} OR commit_sha IN {commits:Array(String)})
           AND fingerprint NOT IN {skipFps:Array(String)}
         GROUP BY test_id) AS p ON p.test_id = c.id)
     WHERE ${keep}`,
    {
      projectId,
      suites: keys.map((k) => k.suite),
      titles: keys.map((k) => k.title),
      params: keys.map((k) => k.paramsHash),
      ...fk,
      runs: [...new Set(seen.where.map((w) => w.runId))],
      commits: known,
      whereRuns: seen.where.map((w) => w.runId),
      whereShas: seen.where.map((w) => (isKnownCommit(w.commitSha) ? w.commitSha : '')),
      skipFps: seen.exceptFingerprints,
      untrimmed: UNTRIMMED,
      ...(renameKeys === null
        ? {}
        : {
            renameSuites: renameKeys.map((k) => k.suite),
            renameParams: renameKeys.map((k) => k.paramsHash),
            renameFiles: [...new Set(renameKeys.map((k) => k.filePath.toLowerCase()))],
            plainPath: PLAIN_PATH,
          }),
    },
  );
  return rows.map((r) => ({ id: r.id, filePath: r.file_path, suite: r.suite, title: r.title, paramsHash: r.params_hash, ranAt: r.ran.map(([runId, commitSha]) => ({ runId, commitSha })) }));
}

/** Candidates in one order, each with its runs in one order: the queries promise sets. */
function canonical(found: readonly StitchCandidate[]): string {
  const by = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return JSON.stringify(
    [...found].sort((a, b) => by(a.id, b.id)).map((c) => ({ ...c, ranAt: [...c.ranAt].sort((x, y) => by(`${x.runId} ${x.commitSha}`, `${y.runId} ${y.commitSha}`)) })),
  );
}

/** mulberry32: the same rounds on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FILES = ['src/a.test.ts', 'SRC/A.test.ts', 'src/b.test.ts', './src/a.test.ts', 'src/ä.test.ts', 'src\\c.test.ts', ' src/b.test.ts'];
const SUITES = ['S', 'S ', 'T', ''];
const TITLES = ['t1', 't2', 't3', 't1 ', ' t2', '\u00a0t1', 'x\ty', 'x\ny', "q'uote", 'back\\slash', 'ünï'];
const PARAMS = ['', 'h1', 'h2'];

describe('IdentityRepo stitch candidates agree with the reference query', () => {
  const repo = (): IdentityRepo => new IdentityRepo(store);

  it('on randomised identities, versions, executions, runs and commits', async () => {
    let nonEmpty = 0;
    let present = 0;
    for (let round = 0; round < 40; round++) {
      const rnd = random(round + 1);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
      const projectId = randomUUID();
      // Runs, each with its commit: some share one, some are unknown ('') or a placeholder.
      const commits = ['a'.repeat(40), 'b'.repeat(40), 'c'.repeat(40), '', '0000000'];
      const runs = Array.from({ length: 6 }, () => ({ runId: randomUUID(), commitSha: pick(commits) }));
      const fps = Array.from({ length: 6 }, (_, i) => `fp-${round}-${i}`);
      const identities: Record<string, unknown>[] = [];
      const executions: Record<string, unknown>[] = [];
      let version = 1;
      for (let i = 0; i < 30; i++) {
        const id = randomUUID();
        const versions = 1 + Math.floor(rnd() * 3);
        for (let v = 0; v < versions; v++) {
          identities.push({
            project_id: projectId,
            id,
            fingerprint: pick(fps),
            file_path: pick(FILES),
            suite: pick(SUITES),
            title: pick(TITLES),
            params: '',
            params_hash: pick(PARAMS),
            first_seen_at: 1_700_000_000_000,
            // Distinct: argMax over tied versions may take any of them.
            version: version++,
            stitched: versions > 1 ? 1 : 0,
          });
        }
        const ran = Math.floor(rnd() * 6);
        for (let e = 0; e < ran; e++) {
          const where = pick(runs);
          executions.push({
            project_id: projectId,
            test_id: id,
            started_at: 1_700_000_000_000 + e,
            id: randomUUID(),
            run_id: where.runId,
            day: '2023-11-14',
            status: 'pass',
            attempt: 1,
            file_path: 'f',
            suite: 's',
            title: 't',
            params: '',
            fingerprint: pick(fps),
            // Now and then on another commit than its run's.
            commit_sha: rnd() < 0.15 ? pick(commits) : where.commitSha,
          });
        }
      }
      await store.insert('test_identities', identities, `ref-ids-${projectId}`);
      if (executions.length > 0) await store.insert('executions', executions, `ref-ex-${projectId}`);

      // The lease: some of the runs (or none), another run never stored, the fingerprints it brings.
      const lease = [...new Set(Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(runs)))];
      const where = round % 10 === 9 ? [] : [...lease, ...(rnd() < 0.2 ? [{ runId: randomUUID(), commitSha: pick(commits) }] : [])];
      const seen: SeenIn = { where, exceptFingerprints: fps.filter(() => rnd() < 0.3) };
      const keys: StitchKey[] = Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => ({ filePath: pick(FILES), suite: pick(SUITES), title: pick(TITLES), paramsHash: pick(PARAMS) }));
      const renameKeys = keys.filter(() => rnd() < 0.6);

      const found = await repo().stitchCandidates(projectId, keys, seen);
      expect(canonical(found), `round ${round}: stitchCandidates`).toBe(canonical(await reference(projectId, keys, seen, null)));
      const competitors = await repo().presentCompetitors(projectId, keys, seen, renameKeys);
      expect(canonical(competitors), `round ${round}: presentCompetitors`).toBe(canonical(renameKeys.length === 0 ? [] : await reference(projectId, keys, seen, renameKeys)));
      if (found.length > 0) nonEmpty++;
      if (competitors.length > 0) present++;
    }
    // The rounds exercise both lookups with rows to compare, not only empty answers.
    expect(nonEmpty).toBeGreaterThan(20);
    expect(present).toBeGreaterThan(5);
  }, 120_000);
});

// Test identities, their aliases (other fingerprints that resolve to them) and stitch history.
import { toIso } from '../../client/src/contract/time.js';
import { isKnownCommit, type AliasRun, type KnownIdentity, type RunRef } from '../domain/stitch.js';
import { toNumber, type Store } from './client.js';
import { TestMergeRepo } from './test-merges.js';

export interface IdentityRow {
  /** Ever moved or renamed: only then has it aliases and stitches to show. */
  stitched: boolean;
  id: string;
  fingerprint: string;
  filePath: string;
  suite: string;
  title: string;
  paramsHash: string;
}

export interface StitchOut {
  level: 'L2' | 'L3' | 'manual';
  fromFilePath: string;
  fromTitle: string;
  toFilePath: string;
  toTitle: string;
  confidence: number;
  createdAt: string;
}

/** An alias fingerprint's runs under its identity (AliasRun), with what an identity of its own needs. */
export interface StoredAliasRun extends AliasRun {
  /** As stored on the execution: file path as reported, params as JSON ('' without). */
  filePath: string;
  suite: string;
  title: string;
  params: string;
  /** Epoch ms of its earliest execution in these runs. */
  firstStartedAt: number;
}

/** An incoming test's name as stitch candidates are looked up: normalised path, trimmed suite and title, params hash. */
export interface StitchKey {
  filePath: string;
  suite: string;
  title: string;
  paramsHash: string;
}

/** Where the lease's new tests ran, for the rule that two tests seen in one run or commit are two tests. */
export interface SeenIn {
  /** Each run of the lease's new tests once, with the run's commit (any sha: unknown ones are ignored). */
  where: readonly RunRef[];
  /**
   * The lease's new fingerprints: a stored execution of theirs is a failed earlier attempt of that
   * same lease (executions are written first), not a test that ran alongside.
   */
  exceptFingerprints: readonly string[];
}

/** A stitch candidate (current name) with where it ran among `SeenIn.where` (stored executions). */
export interface StitchCandidate extends KnownIdentity {
  ranAt: RunRef[];
}

/**
 * A title with a blank at either end, as String.prototype.trim sees blanks (a superset: \s, VT,
 * Unicode separators, BOM), in re2 syntax. Such a title may trim to a key's title without equalling it.
 */
const UNTRIMMED = '^[\\s\\x0B\\p{Z}\\x{FEFF}]|[\\s\\x0B\\p{Z}\\x{FEFF}]$';

/**
 * A path normalizeTestPath leaves as it is but for ASCII case (then `lower` in SQL is the same):
 * printable ASCII, no blank at either end, no backslash, no leading `/` (a leading `./` is ruled out apart).
 */
const PLAIN_PATH = '^[!-.0-\\[\\]-~]([ -\\[\\]-~]*[!-\\[\\]-~])?$';

/** The keys' distinct (lowercased file, suite, params), as parallel arrays. */
function fileKeys(keys: readonly StitchKey[]): { files: string[]; fileSuites: string[]; fileParams: string[] } {
  const seen = new Set<string>();
  const out = { files: [] as string[], fileSuites: [] as string[], fileParams: [] as string[] };
  for (const k of keys) {
    const file = k.filePath.toLowerCase();
    const id = `${file}\u0000${k.suite}\u0000${k.paramsHash}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.files.push(file);
    out.fileSuites.push(k.suite);
    out.fileParams.push(k.paramsHash);
  }
  return out;
}

/**
 * The distinct runs of `where` and its distinct known commits (in order of first appearance), each
 * with its 1-based positions in `where`: the entries an execution in that run, or on that commit, covers.
 */
function wherePositions(where: readonly RunRef[]): { runs: string[]; runEntries: number[][]; commits: string[]; commitEntries: number[][] } {
  const byRun = new Map<string, number[]>();
  const byCommit = new Map<string, number[]>();
  for (const [i, w] of where.entries()) {
    const run = byRun.get(w.runId);
    if (run) run.push(i + 1);
    else byRun.set(w.runId, [i + 1]);
    if (!isKnownCommit(w.commitSha)) continue;
    const commit = byCommit.get(w.commitSha);
    if (commit) commit.push(i + 1);
    else byCommit.set(w.commitSha, [i + 1]);
  }
  return { runs: [...byRun.keys()], runEntries: [...byRun.values()], commits: [...byCommit.keys()], commitEntries: [...byCommit.values()] };
}

export class IdentityRepo {
  constructor(private readonly store: Store) {}

  async get(projectId: string, testId: string): Promise<IdentityRow | null> {
    const rows = await this.store.query<{ id: string; fingerprint: string; file_path: string; suite: string; title: string; params_hash: string; stitched: number }>(
      `SELECT id, fingerprint, file_path, suite, title, params_hash, stitched FROM ${this.store.table('test_identities')} FINAL
       WHERE project_id = {projectId:UUID} AND id = {testId:UUID} LIMIT 1`,
      { projectId, testId },
    );
    const r = rows[0];
    return r ? { id: r.id, fingerprint: r.fingerprint, filePath: r.file_path, suite: r.suite, title: r.title, paramsHash: r.params_hash, stitched: toNumber(r.stitched) === 1 } : null;
  }

  /** Which of these identity ids already exist in the project: id → whether it was ever moved or renamed. */
  async existing(projectId: string, ids: readonly string[]): Promise<Map<string, boolean>> {
    if (ids.length === 0) return new Map();
    const rows = await this.store.query<{ id: string; stitched: number | string }>(
      `SELECT id, max(stitched) AS stitched FROM ${this.store.table('test_identities')}
       WHERE project_id = {projectId:UUID} AND id IN {ids:Array(UUID)} GROUP BY id`,
      { projectId, ids },
    );
    return new Map(rows.map((r) => [r.id, toNumber(r.stitched) === 1]));
  }

  /** The fingerprints that currently resolve to each of these identities through an alias (every id gets a list, maybe empty). */
  async liveAliases(projectId: string, testIds: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(testIds.map((id) => [id, []]));
    if (testIds.length === 0) return out;
    // Latest row per fingerprint: an alias later pointed elsewhere no longer belongs to its old target.
    const rows = await this.store.query<{ fingerprint: string; target: string }>(
      `SELECT fingerprint, toString(argMax(test_id, created_at)) AS target FROM ${this.store.table('identity_aliases')}
       WHERE project_id = {projectId:UUID}
         AND fingerprint IN (SELECT fingerprint FROM ${this.store.table('identity_aliases')} WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)})
       GROUP BY fingerprint ORDER BY fingerprint`,
      { projectId, ids: testIds },
    );
    for (const r of rows) out.get(r.target)?.push(r.fingerprint);
    return out;
  }

  /**
   * Runs of alias fingerprints under their identity in the given runs or on the given commits, with
   * the fingerprint's own name (file, suite, title, params of an execution) and first start, for
   * giving it an identity of its own when the alias is revoked.
   */
  async aliasRunsWith(
    projectId: string,
    testIds: readonly string[],
    fingerprints: readonly string[],
    where: { runIds: readonly string[]; commits: readonly string[] },
  ): Promise<StoredAliasRun[]> {
    if (testIds.length === 0 || fingerprints.length === 0 || where.runIds.length + where.commits.length === 0) return [];
    // Output names differ from the columns: ClickHouse would read an alias named like a column in WHERE.
    const rows = await this.store.query<{
      fingerprint: string;
      test: string;
      run: string;
      commit_sha: string;
      path: string;
      suite_name: string;
      name: string;
      params_json: string;
      first_ms: number | string;
    }>(
      `SELECT fingerprint, toString(test_id) AS test, toString(run_id) AS run, commit_sha,
              any(file_path) AS path, any(suite) AS suite_name, any(title) AS name, any(params) AS params_json,
              toUnixTimestamp64Milli(min(started_at)) AS first_ms
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)} AND fingerprint IN {fps:Array(String)}
         AND (run_id IN {runs:Array(UUID)} OR commit_sha IN {commits:Array(String)})
       GROUP BY fingerprint, test_id, run_id, commit_sha
       ORDER BY fingerprint, first_ms`,
      { projectId, ids: testIds, fps: fingerprints, runs: where.runIds, commits: where.commits },
    );
    return rows.map((r) => ({
      fingerprint: r.fingerprint,
      testId: r.test,
      where: { runId: r.run, commitSha: r.commit_sha },
      filePath: r.path,
      suite: r.suite_name,
      title: r.name,
      params: r.params_json,
      firstStartedAt: toNumber(r.first_ms),
    }));
  }

  /** Fingerprints that are aliases of an identity: fingerprint → test id. */
  async aliasTargets(projectId: string, fingerprints: readonly string[]): Promise<Map<string, string>> {
    if (fingerprints.length === 0) return new Map();
    const rows = await this.store.query<{ fingerprint: string; test_id: string }>(
      `SELECT fingerprint, argMax(test_id, created_at) AS test_id FROM ${this.store.table('identity_aliases')}
       WHERE project_id = {projectId:UUID} AND fingerprint IN {fps:Array(String)} GROUP BY fingerprint`,
      { projectId, fps: fingerprints },
    );
    return new Map(rows.map((r) => [r.fingerprint, r.test_id]));
  }

  /**
   * Identities that could be the origin of a moved or renamed test: same (suite, title, params)
   * in another file, or same (file, suite, params) with another title. Each comes with its current
   * name (the newest version of its row): a moved or renamed identity has older rows under its
   * former name, which must neither match nor be reported. And each with where it ran among the
   * lease's runs and their commits (`seen`; stored executions), for the rule that a test seen with
   * another in one run or commit is not its move or rename.
   *
   * Left out, in the query: candidates that ran in every one of `seen.where` (each run, or its known
   * commit) — present for every incoming test, so never an origin — unless they share suite, title
   * and params with a key or have an untrimmed title (they may then be the key's exact match). Over
   * a large report arriving in parts, those are the tests of its earlier parts: without this every
   * lease read back the whole run stored so far (issue 40). They can still matter as the runner-up
   * that blocks a rename: `presentCompetitors` reads them for the keys where a rename is possible.
   * The keys are passed as parallel arrays (zipped in SQL): a JS array of arrays is not a valid
   * Array(Tuple(...)) query parameter.
   */
  stitchCandidates(projectId: string, keys: readonly StitchKey[], seen: SeenIn): Promise<StitchCandidate[]> {
    return this.candidatesQuery(projectId, keys, seen, null);
  }

  /**
   * The candidates `stitchCandidates` left out (they ran in every one of `seen.where`) that are in
   * the same file, suite and params as one of `renameKeys`: the competitors a rename of such a key
   * is scored against (a present candidate with a closer title makes the test new). `keys` are all
   * the lease's keys, as given to `stitchCandidates`: only its candidates are returned. A
   * `renameKeys` path is compared with `lower(file_path)`, which is normalizeTestPath for a plain
   * ASCII path (PLAIN_PATH); a candidate with any other path is returned whatever its file, for the
   * caller to compare.
   */
  presentCompetitors(projectId: string, keys: readonly StitchKey[], seen: SeenIn, renameKeys: readonly StitchKey[]): Promise<StitchCandidate[]> {
    if (renameKeys.length === 0) return Promise.resolve([]);
    return this.candidatesQuery(projectId, keys, seen, renameKeys);
  }

  private async candidatesQuery(projectId: string, keys: readonly StitchKey[], seen: SeenIn, renameKeys: readonly StitchKey[] | null): Promise<StitchCandidate[]> {
    if (keys.length === 0) return [];
    const ids = this.store.table('test_identities');
    // Each key array is a query parameter once, named in WITH and used by name: a parameter is
    // parsed into a literal wherever it appears, and the same 10,000 keys in five places were about
    // half of this query's CPU on a lease of new tests (issue 40).
    const arms = '((suite, title, params_hash) IN key_titles OR (lower(file_path), suite, params_hash) IN key_files)';
    // Identities with a row matching a key, under any of their names.
    const matching = `SELECT id FROM ${ids} WHERE project_id = {projectId:UUID} AND ${arms}`;
    // Ran at every one of the lease's runs: in the run, or on its commit when that is known. Counted
    // per candidate from its executions (`covered`: how many of `seen.where` they cover), not
    // checked run by run for each candidate: with a lambda over the lease's runs, ClickHouse copies
    // those runs into every candidate row (100 runs × 10,000 candidates, most of the query's time).
    const everywhere = '({whereCount:UInt32} > 0 AND covered = {whereCount:UInt32})';
    const mayBeExact = '((suite, title, params_hash) IN key_titles OR match(title, {untrimmed:String}))';
    const keep =
      renameKeys === null
        ? `NOT ${everywhere} OR ${mayBeExact}`
        : `${everywhere} AND NOT ${mayBeExact}
           AND (suite, params_hash) IN arrayZip({renameSuites:Array(String)}, {renameParams:Array(String)})
           AND (lower(file_path) IN {renameFiles:Array(String)} OR NOT (match(file_path, {plainPath:String}) AND NOT startsWith(file_path, './')))`;
    const { runs, runEntries, commits, commitEntries } = wherePositions(seen.where);
    // Output names differ from the columns: ClickHouse would read an alias named like a column in WHERE.
    const rows = await this.store.query<{ id: string; file_path: string; suite: string; title: string; params_hash: string; ran: [string, string][] }>(
      `WITH arrayZip({suites:Array(String)}, {titles:Array(String)}, {params:Array(String)}) AS key_titles,
            arrayZip({files:Array(String)}, {fileSuites:Array(String)}, {fileParams:Array(String)}) AS key_files,
            {runs:Array(UUID)} AS lease_runs, {commits:Array(String)} AS lease_commits
       SELECT id, file_path, suite, title, params_hash, ran FROM (
         SELECT toString(c.id) AS id, c.file_path AS file_path, c.suite AS suite, c.title AS title, c.params_hash AS params_hash, p.ran AS ran,
                ifNull(p.covered, 0) AS covered
         FROM (
           SELECT id, file_path, suite, title, params_hash FROM (
             SELECT id, argMax(file_path, version) AS file_path, argMax(suite, version) AS suite, argMax(title, version) AS title,
                    argMax(params_hash, version) AS params_hash
             FROM ${ids}
             WHERE project_id = {projectId:UUID} AND id IN (${matching})
             GROUP BY id)
           WHERE ${arms}) AS c
         LEFT JOIN (
           -- An execution covers the entries of seen.where of its run, and those of its commit.
           SELECT test_id, groupUniqArray((run_id, commit_sha)) AS ran,
                  uniqExactArray(arrayConcat({runEntries:Array(Array(UInt32))}[indexOf(lease_runs, run_id)],
                                             {commitEntries:Array(Array(UInt32))}[indexOf(lease_commits, commit_sha)])) AS covered
           FROM ${this.store.table('executions')}
           WHERE project_id = {projectId:UUID} AND test_id IN (${matching})
             AND (run_id IN lease_runs OR commit_sha IN lease_commits)
             AND fingerprint NOT IN {skipFps:Array(String)}
           GROUP BY test_id) AS p ON p.test_id = c.id)
       WHERE ${keep}`,
      {
        projectId,
        suites: keys.map((k) => k.suite),
        titles: keys.map((k) => k.title),
        params: keys.map((k) => k.paramsHash),
        // Each (file, suite, params) once: the tests of a lease mostly share a few files.
        ...fileKeys(keys),
        runs,
        commits,
        whereCount: seen.where.length,
        runEntries,
        commitEntries,
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
    return rows.map((r) => ({
      id: r.id,
      filePath: r.file_path,
      suite: r.suite,
      title: r.title,
      paramsHash: r.params_hash,
      ranAt: r.ran.map(([runId, commitSha]) => ({ runId, commitSha })),
    }));
  }

  /**
   * How many merge rows the project has (test_merges, never deleted): a cheap check, per lease, of
   * whether `mergedInto` must be read again.
   */
  async mergeCount(projectId: string): Promise<number> {
    const rows = await this.store.query<{ n: number | string }>(
      `SELECT count() AS n FROM ${this.store.table('test_merges')} WHERE project_id = {projectId:UUID}`,
      { projectId },
    );
    return toNumber(rows[0]?.n ?? 0);
  }

  /** The project's merged identities: merged-from id → the id it was merged into (store/test-merges.ts). */
  mergedInto(projectId: string): Promise<Map<string, string>> {
    return new TestMergeRepo(this.store).mergedInto(projectId);
  }

  /** The fingerprints that currently resolve to this identity through an alias. */
  async aliases(projectId: string, testId: string): Promise<string[]> {
    return (await this.liveAliases(projectId, [testId])).get(testId) ?? [];
  }

  async stitches(projectId: string, testId: string): Promise<StitchOut[]> {
    const rows = await this.store.query<{ level: StitchOut['level']; from_file_path: string; from_title: string; to_file_path: string; to_title: string; confidence: number; created_ms: number | string }>(
      `SELECT level, from_file_path, from_title, to_file_path, to_title, confidence, toUnixTimestamp64Milli(created_at) AS created_ms
       FROM ${this.store.table('identity_stitches')} FINAL
       WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID} ORDER BY created_at`,
      { projectId, testId },
    );
    return rows.map((r) => ({
      level: r.level,
      fromFilePath: r.from_file_path,
      fromTitle: r.from_title,
      toFilePath: r.to_file_path,
      toTitle: r.to_title,
      confidence: Math.round(toNumber(r.confidence) * 1000) / 1000,
      createdAt: toIso(toNumber(r.created_ms)),
    }));
  }
}

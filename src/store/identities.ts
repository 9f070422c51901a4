// Test identities, their aliases (other fingerprints that resolve to them) and stitch history.
import { toIso } from '../../client/src/contract/time.js';
import type { AliasRun, KnownIdentity, RunRef } from '../domain/stitch.js';
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

  /**
   * Where these identities ran in the given runs or on the given commits (stored executions), for
   * the rule that a test seen with another in one run or commit is not its move or rename.
   * Executions of `exceptFingerprints` are left out: those fingerprints are new in the lease being
   * resolved, so a stored row of theirs is a failed earlier attempt of that same lease (executions
   * are written first), not a test that ran alongside.
   */
  async ranWith(
    projectId: string,
    testIds: readonly string[],
    where: { runIds: readonly string[]; commits: readonly string[] },
    exceptFingerprints: readonly string[],
  ): Promise<{ testId: string; where: RunRef }[]> {
    if (testIds.length === 0 || where.runIds.length + where.commits.length === 0) return [];
    // Output names differ from the columns: ClickHouse would read an alias named like a column in WHERE.
    const rows = await this.store.query<{ test: string; run: string; commit_sha: string }>(
      `SELECT DISTINCT toString(test_id) AS test, toString(run_id) AS run, commit_sha FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)}
         AND (run_id IN {runs:Array(UUID)} OR commit_sha IN {commits:Array(String)})
         AND fingerprint NOT IN {skipFps:Array(String)}`,
      { projectId, ids: testIds, runs: where.runIds, commits: where.commits, skipFps: exceptFingerprints },
    );
    return rows.map((r) => ({ testId: r.test, where: { runId: r.run, commitSha: r.commit_sha } }));
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
   * former name, which must neither match nor be reported.
   * The keys are passed as parallel arrays (zipped in SQL): a JS array of arrays is not a valid
   * Array(Tuple(...)) query parameter.
   */
  async stitchCandidates(
    projectId: string,
    keys: readonly { filePath: string; suite: string; title: string; paramsHash: string }[],
  ): Promise<KnownIdentity[]> {
    if (keys.length === 0) return [];
    const rows = await this.store.query<{ id: string; file_path: string; suite: string; title: string; params_hash: string }>(
      `SELECT id, file_path, suite, title, params_hash FROM (
         SELECT id, argMax(file_path, version) AS file_path, argMax(suite, version) AS suite, argMax(title, version) AS title,
                argMax(params_hash, version) AS params_hash
         FROM ${this.store.table('test_identities')}
         WHERE project_id = {projectId:UUID}
           AND id IN (
             SELECT id FROM ${this.store.table('test_identities')}
             WHERE project_id = {projectId:UUID}
               AND ((suite, title, params_hash) IN (SELECT arrayJoin(arrayZip({suites:Array(String)}, {titles:Array(String)}, {params:Array(String)})))
                 OR (lower(file_path), suite, params_hash) IN (SELECT arrayJoin(arrayZip({files:Array(String)}, {suites:Array(String)}, {params:Array(String)})))))
         GROUP BY id)
       WHERE (suite, title, params_hash) IN (SELECT arrayJoin(arrayZip({suites:Array(String)}, {titles:Array(String)}, {params:Array(String)})))
          OR (lower(file_path), suite, params_hash) IN (SELECT arrayJoin(arrayZip({files:Array(String)}, {suites:Array(String)}, {params:Array(String)})))`,
      {
        projectId,
        suites: keys.map((k) => k.suite),
        titles: keys.map((k) => k.title),
        params: keys.map((k) => k.paramsHash),
        files: keys.map((k) => k.filePath.toLowerCase()),
      },
    );
    return rows.map((r) => ({ id: r.id, filePath: r.file_path, suite: r.suite, title: r.title, paramsHash: r.params_hash }));
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

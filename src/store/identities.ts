// Test identities, their aliases (other fingerprints that resolve to them) and stitch history.
import { toIso } from '../domain/time.js';
import type { KnownIdentity } from '../domain/stitch.js';
import { toNumber, type Store } from './client.js';

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

  /** Which of these identity ids already exist in the project. */
  async existing(projectId: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.store.query<{ id: string }>(
      `SELECT DISTINCT id FROM ${this.store.table('test_identities')} WHERE project_id = {projectId:UUID} AND id IN {ids:Array(UUID)}`,
      { projectId, ids },
    );
    return new Set(rows.map((r) => r.id));
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

  async aliases(projectId: string, testId: string): Promise<string[]> {
    const rows = await this.store.query<{ fingerprint: string }>(
      `SELECT DISTINCT fingerprint FROM ${this.store.table('identity_aliases')}
       WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID} ORDER BY fingerprint`,
      { projectId, testId },
    );
    return rows.map((r) => r.fingerprint);
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

// Which of these tests the server has seen on a branch (POST /v1/tests/known, `flakehouse run
// --verify-new`): each fingerprint resolves to its identity (its own fingerprint, else an alias:
// a moved or renamed test is not new), and an identity is seen on the branch when any execution of
// it ran there. A fingerprint nothing resolves to has never been ingested anywhere.
import { toNumber, type Store } from './client.js';

export interface KnownTest {
  fingerprint: string;
  /** Null: no test of the project has this fingerprint (never ingested). */
  testIdentityId: string | null;
  /** Some execution of the test ran on the branch (skips included: the test existed there). */
  seenOnBranch: boolean;
}

export async function knownTests(store: Store, projectId: string, branch: string, fingerprints: readonly string[]): Promise<KnownTest[]> {
  const fps = [...new Set(fingerprints)];
  if (fps.length === 0) return [];
  const [own, aliases] = await Promise.all([
    // An identity's current fingerprint (the latest version's) must be one of them.
    store.query<{ tid: string; fp: string }>(
      `SELECT toString(id) AS tid, argMax(fingerprint, version) AS fp FROM ${store.table('test_identities')}
       WHERE project_id = {projectId:UUID} AND fingerprint IN {fps:Array(String)} GROUP BY id HAVING fp IN {fps:Array(String)}`,
      { projectId, fps },
    ),
    store.query<{ fingerprint: string; id: string }>(
      `SELECT fingerprint, toString(argMax(test_id, created_at)) AS id FROM ${store.table('identity_aliases')}
       WHERE project_id = {projectId:UUID} AND fingerprint IN {fps:Array(String)} GROUP BY fingerprint`,
      { projectId, fps },
    ),
  ]);
  const idOf = new Map<string, string>();
  for (const a of aliases) idOf.set(a.fingerprint, a.id);
  // An identity's own fingerprint wins over an alias that names the same fingerprint.
  for (const r of own) idOf.set(r.fp, r.tid);
  const ids = [...new Set(idOf.values())];
  const seen = new Set<string>();
  if (ids.length > 0) {
    const rows = await store.query<{ id: string; n: number | string }>(
      `SELECT toString(test_id) AS id, count() AS n FROM ${store.table('executions')}
       WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)} AND branch = {branch:String}
       GROUP BY test_id`,
      { projectId, ids, branch },
    );
    for (const r of rows) if (toNumber(r.n) > 0) seen.add(r.id);
  }
  return fps.map((fingerprint) => {
    const id = idOf.get(fingerprint) ?? null;
    return { fingerprint, testIdentityId: id, seenOnBranch: id !== null && seen.has(id) };
  });
}

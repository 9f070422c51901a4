// Merging legacy JUnit twins already stored (issue 39, "duplicates already stored are stitched").
// A project that sent both the reporter's results and its JUnit file before client/src/contract/junit-names.ts
// has each such test stored twice: under the names the reporters use (file `src/math.test.ts`, suite
// `math > division`, title `divides`) and under the pre-fix JUnit reading (file `src/math/test/ts`,
// suite `src/math.test.ts`, title `math > division > divides`). The identity processor joins a twin
// only when the current names are first seen; this merges the pairs both of whose identities exist.
// The kept test is the one the reporters name; the twin is merged into it:
//   - its quarantine carries over (the kept test is quarantined through the quarantine write path,
//     src/usecases/quarantine-decision.ts, with a reason naming the merge) when the kept test is not;
//   - its fingerprint, and the fingerprints aliased to it, become aliases of the kept test;
//   - a test_merges row: the identity processor resolves the twin's id to the kept one from then on,
//     the board, the quarantine list and the PR gate leave the twin out, the kept test's history
//     reads the twin's executions too (store/test-merges.ts). Executions are not moved.
// Idempotent: a merged twin is not found again.
import type { Logger } from 'pino';
import { normalizeTestPath } from '../../client/src/contract/identity.js';
import { stableUuid } from '../../client/src/contract/ids.js';
import { legacyJUnitTwins } from '../../client/src/contract/junit-names.js';
import { effectiveQuarantine } from '../domain/quarantine.js';
import { decideQuarantine, type QuarantineDecisionDeps } from './quarantine-decision.js';
import type { Store } from '../store/client.js';
import type { IdentityRepo } from '../store/identities.js';
import { identityAliasRow } from '../store/processor-rows.js';
import { TestMergeRepo } from '../store/test-merges.js';
import type { TestRepo } from '../store/tests.js';

export interface MergedTestRef {
  testIdentityId: string;
  filePath: string;
  suite: string;
  title: string;
}

export interface TwinPair {
  /** The twin stored under the pre-fix JUnit reading: merged into `into`. */
  from: MergedTestRef;
  /** The test the reporters name: kept. */
  into: MergedTestRef;
  /** The twin is quarantined and the kept test is not: the kept test is (or would be) quarantined. */
  quarantineCarried: boolean;
}

export interface TwinMergeResult {
  dryRun: boolean;
  found: number;
  merged: number;
  pairs: TwinPair[];
}

export interface TwinMergeDeps {
  store: Store;
  tests: TestRepo;
  identities: Pick<IdentityRepo, 'liveAliases'>;
  outbox: QuarantineDecisionDeps['outbox'];
  /** Runs the writes with no lease in progress (the pipeline runtime's exclusive section); absent: directly. */
  exclusive?: <T>(f: () => Promise<T>) => Promise<T>;
}

/** The longest quarantine reason the API takes. */
const MAX_REASON = 200;

interface StoredIdentity extends MergedTestRef {
  fingerprint: string;
  paramsHash: string;
}

const keyOf = (t: { filePath: string; suite: string; title: string }): string => `${normalizeTestPath(t.filePath)}\u0000${t.suite.trim()}\u0000${t.title.trim()}`;

/** The project's stored twin pairs not merged yet, in a stable order (kept test's names). */
export async function findJUnitTwinPairs(store: Store, projectId: string): Promise<{ from: StoredIdentity; into: StoredIdentity }[]> {
  const [rows, merged] = await Promise.all([
    store.query<{ id: string; fingerprint: string; file_path: string; suite: string; title: string; params_hash: string }>(
      `SELECT toString(id) AS id, argMax(fingerprint, version) AS fingerprint, argMax(file_path, version) AS file_path,
              argMax(suite, version) AS suite, argMax(title, version) AS title, argMax(params_hash, version) AS params_hash
       FROM ${store.table('test_identities')} WHERE project_id = {projectId:UUID} GROUP BY id ORDER BY id`,
      { projectId },
    ),
    new TestMergeRepo(store).mergedInto(projectId),
  ]);
  const live: StoredIdentity[] = rows
    .filter((r) => !merged.has(r.id))
    .map((r) => ({ testIdentityId: r.id, fingerprint: r.fingerprint, filePath: r.file_path, suite: r.suite, title: r.title, paramsHash: r.params_hash }));
  const byName = new Map<string, StoredIdentity[]>();
  for (const i of live) {
    if (i.paramsHash !== '') continue;
    const k = keyOf(i);
    byName.set(k, [...(byName.get(k) ?? []), i]);
  }
  const taken = new Set<string>();
  const pairs: { from: StoredIdentity; into: StoredIdentity }[] = [];
  const ordered = [...live].sort((a, b) => cmp(keyOf(a), keyOf(b)) || cmp(a.testIdentityId, b.testIdentityId));
  for (const into of ordered) {
    if (into.paramsHash !== '' || taken.has(into.testIdentityId)) continue;
    for (const twin of legacyJUnitTwins(into)) {
      for (const from of byName.get(keyOf(twin)) ?? []) {
        if (from.testIdentityId === into.testIdentityId || taken.has(from.testIdentityId)) continue;
        taken.add(from.testIdentityId);
        pairs.push({ from, into });
      }
    }
    // A kept test is never merged away in the same pass.
    if (pairs.some((p) => p.into === into)) taken.add(into.testIdentityId);
  }
  return pairs;
}

/** Finds the project's stored twin pairs and, unless `dryRun`, merges each twin into the test the reporters name. */
export async function mergeJUnitTwins(d: TwinMergeDeps, projectId: string, opts: { dryRun: boolean }): Promise<TwinMergeResult> {
  const run = async (): Promise<TwinMergeResult> => {
    const found = await findJUnitTwinPairs(d.store, projectId);
    if (found.length === 0) return { dryRun: opts.dryRun, found: 0, merged: 0, pairs: [] };
    const ids = [...new Set(found.flatMap((p) => [p.from.testIdentityId, p.into.testIdentityId]))];
    const [states, overrides] = await Promise.all([d.tests.states(projectId, ids), d.tests.overrides(projectId, ids)]);
    const quarantine = (id: string): { quarantined: boolean; reason: string | null } =>
      effectiveQuarantine(states.get(id)?.auto ?? null, overrides.get(id) ?? null);
    const pairs: TwinPair[] = found.map(({ from, into }) => ({
      from: ref(from),
      into: ref(into),
      quarantineCarried: quarantine(from.testIdentityId).quarantined && !quarantine(into.testIdentityId).quarantined,
    }));
    if (opts.dryRun) return { dryRun: true, found: pairs.length, merged: 0, pairs };

    const now = Date.now();
    // The quarantine first and the merge row last: a pass cut short is completed by the next one.
    const carried = new Set<string>();
    for (const p of pairs) {
      if (!p.quarantineCarried || carried.has(p.into.testIdentityId)) continue;
      carried.add(p.into.testIdentityId);
      const was = quarantine(p.from.testIdentityId).reason;
      const reason = `merged from its legacy JUnit twin ${p.from.filePath} | ${p.from.suite} | ${p.from.title}${was ? `, quarantined: ${was}` : ''}`;
      await decideQuarantine({ tests: d.tests, outbox: d.outbox }, projectId, p.into.testIdentityId, 'quarantined', truncate(reason));
    }
    const aliasesOf = await d.identities.liveAliases(projectId, pairs.map((p) => p.from.testIdentityId));
    const aliases = found.flatMap(({ from, into }) =>
      [...new Set([from.fingerprint, ...(aliasesOf.get(from.testIdentityId) ?? [])])].map((fp) => ({ projectId, fingerprint: fp, testId: into.testIdentityId, createdAt: now })),
    );
    await d.store.insert('identity_aliases', aliases.map(identityAliasRow), `aliases:merge:${stableUuid('merge-aliases', projectId, String(now), ...aliases.map((a) => `${a.fingerprint}:${a.testId}`))}`);
    await new TestMergeRepo(d.store).record(
      pairs.map((p) => ({ projectId, fromTestId: p.from.testIdentityId, intoTestId: p.into.testIdentityId, reason: 'legacy_junit_twin' as const, mergedAt: now })),
    );
    return { dryRun: false, found: pairs.length, merged: pairs.length, pairs };
  };
  // A dry run writes nothing: no need to hold the pipeline.
  return opts.dryRun || !d.exclusive ? run() : d.exclusive(run);
}

/**
 * The start-up pass (a background job of the daemon): every project's twins merged, one info line
 * when any were. Errors are logged, never thrown: the daemon runs on without the merge.
 */
export async function mergeJUnitTwinsAtStartup(d: TwinMergeDeps & { listProjects(): Promise<{ id: string; slug: string }[]>; logger: Logger; stopping(): boolean }): Promise<void> {
  const merged: { project: string; merged: number }[] = [];
  try {
    for (const p of await d.listProjects()) {
      if (d.stopping()) return;
      const r = await mergeJUnitTwins(d, p.id, { dryRun: false });
      if (r.merged > 0) merged.push({ project: p.slug, merged: r.merged });
    }
  } catch (err) {
    d.logger.warn({ err }, 'identity: merging stored legacy JUnit twins failed; the next start tries again');
    return;
  }
  const total = merged.reduce((n, m) => n + m.merged, 0);
  if (total > 0) d.logger.info({ merged: total, projects: merged }, 'identity: stored legacy JUnit twins merged into the tests the reporters name');
}

function ref(i: StoredIdentity): MergedTestRef {
  return { testIdentityId: i.testIdentityId, filePath: i.filePath, suite: i.suite, title: i.title };
}

function truncate(s: string): string {
  return s.length <= MAX_REASON ? s : `${s.slice(0, MAX_REASON - 1)}…`;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// The project's quarantined tests as a runner matches them (GET /v1/quarantine, `flakehouse run`,
// the reporters): people's quarantines and the scorer's automatic ones, combined as everywhere
// else (src/domain/quarantine.ts effectiveQuarantine), with each test's identity keys and the
// fingerprints of its aliases (a moved or renamed test still matches under its current name).
import type { QuarantineEntry } from '../../client/src/contract/mute.js';
import { effectiveQuarantine, type AutoState, type OverrideRow } from '../domain/quarantine.js';
import { toIso } from '../../client/src/contract/time.js';
import type { Store } from './client.js';
import { toAuto, type AutoDbRow } from './board-columns.js';
import type { TestRepo } from './tests.js';
import { TestMergeRepo, notMergedSql } from './test-merges.js';

/** A quarantined test as the runner matches it (client/src/contract/mute.ts), with who quarantined it and since when. */
export interface QuarantinedTest extends QuarantineEntry {
  /** `manual`: a person's decision; `auto`: the scorer's. */
  source: 'manual' | 'auto';
  /** ISO time the quarantine began (the decision, or the scorer's quarantine). */
  since: string | null;
}

/** Every effectively quarantined test of the project, ordered by file, suite, title, id (stable: the ETag hashes it). */
export async function listQuarantined(deps: { store: Store; tests: Pick<TestRepo, 'overrides'> }, projectId: string): Promise<QuarantinedTest[]> {
  const { store } = deps;
  const [allOverrides, merged] = await Promise.all([deps.tests.overrides(projectId, null), new TestMergeRepo(store).mergedInto(projectId)]);
  // A test merged into another (store/test-merges.ts) is listed as that one, which carries its quarantine.
  const overrides = new Map([...allOverrides].filter(([id]) => !merged.has(id)));
  const overrideIds = [...overrides.keys()];
  // Automatic quarantines, and the scorer's state of every test a person decided on (an `auto`
  // decision keeps its state only until the scorer runs again).
  const stateRows = await store.query<AutoDbRow & { test_id: string }>(
    `SELECT test_id, auto_quarantined, quarantine_reason, toUnixTimestamp64Milli(quarantined_at) AS quarantined_ms, clean_runs,
       toUnixTimestamp64Milli(released_at) AS released_ms, toUnixTimestamp64Milli(scored_at) AS scored_ms
     FROM ${store.table('test_state')} FINAL
     WHERE project_id = {projectId:UUID} AND ${overrideIds.length > 0 ? '(auto_quarantined = 1 OR test_id IN {ids:Array(UUID)})' : 'auto_quarantined = 1'} AND ${notMergedSql(store)}`,
    { projectId, ids: overrideIds },
  );
  const autos = new Map<string, AutoState>(stateRows.map((r) => [r.test_id, toAuto(r)]));
  const quarantined = new Map<string, { reason: string; source: 'manual' | 'auto'; since: number | null }>();
  for (const id of new Set([...autos.keys(), ...overrideIds])) {
    const auto = autos.get(id) ?? null;
    const override = overrides.get(id) ?? null;
    const eff = effectiveQuarantine(auto, override);
    if (!eff.quarantined) continue;
    quarantined.set(id, { reason: eff.reason ?? '', ...origin(auto, override) });
  }
  if (quarantined.size === 0) return [];
  const ids = [...quarantined.keys()];
  const [identities, aliases] = await Promise.all([
    store.query<{ id: string; fingerprint: string; file_path: string; suite: string; title: string; params: string }>(
      `SELECT id, argMax(fingerprint, version) AS fingerprint, argMax(file_path, version) AS file_path, argMax(suite, version) AS suite,
         argMax(title, version) AS title, argMax(params, version) AS params
       FROM ${store.table('test_identities')} WHERE project_id = {projectId:UUID} AND id IN {ids:Array(UUID)} GROUP BY id`,
      { projectId, ids },
    ),
    // The output name differs from the column: ClickHouse would read an alias named like a column in
    // WHERE (a String compared with UUIDs, which matched nothing: a moved test's old fingerprints were missing).
    store.query<{ target: string; fingerprint: string }>(
      `SELECT toString(test_id) AS target, fingerprint FROM ${store.table('identity_aliases')} FINAL
       WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)} ORDER BY fingerprint`,
      { projectId, ids },
    ),
  ]);
  const aliasesOf = new Map<string, string[]>();
  for (const a of aliases) aliasesOf.set(a.target, [...(aliasesOf.get(a.target) ?? []), a.fingerprint]);
  const out: QuarantinedTest[] = [];
  for (const i of identities) {
    const q = quarantined.get(i.id)!;
    out.push({
      testIdentityId: i.id,
      fingerprints: [i.fingerprint, ...(aliasesOf.get(i.id) ?? []).filter((fp) => fp !== i.fingerprint)],
      filePath: i.file_path,
      suite: i.suite,
      title: i.title,
      params: parseParams(i.params),
      reason: q.reason,
      source: q.source,
      since: q.since === null ? null : toIso(q.since),
    });
  }
  return out.sort((a, b) => cmp(a.filePath, b.filePath) || cmp(a.suite, b.suite) || cmp(a.title, b.title) || cmp(a.testIdentityId, b.testIdentityId));
}

/** Who quarantined the test, and since when, given that it is quarantined. */
function origin(auto: AutoState | null, override: OverrideRow | null): { source: 'manual' | 'auto'; since: number | null } {
  if (override?.override === 'quarantined') return { source: 'manual', since: override.decidedAt };
  // `auto` handed back while the scorer has not run since: the state the person left.
  if (override && override.override === null && (auto === null || auto.scoredAt === null || override.decidedAt > auto.scoredAt)) {
    return { source: auto?.autoQuarantined ? 'auto' : 'manual', since: auto?.autoQuarantined ? auto.quarantinedAt : override.decidedAt };
  }
  return { source: 'auto', since: auto?.quarantinedAt ?? auto?.scoredAt ?? null };
}

function parseParams(text: string): Record<string, unknown> | null {
  if (text === '') return null;
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

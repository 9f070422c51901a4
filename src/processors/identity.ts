// `identity` processor (docs/architecture.md "Identity, scoring, clustering"): every execution gets a stable test id.
// Resolution, first match wins: exact fingerprint or alias → moved (same suite, title and params in
// another file: alias + stitch L2, `identity.moved`) → renamed (same file, suite and params, a
// clearly closest title: alias + stitch L3 with its confidence) → new (`identity.created`).
// Two tests seen in the same run or on the same commit are never a move or rename of each other:
// a candidate that ran in the lease, or has stored executions in the incoming test's runs or on
// their commits (shards of one commit come as separate batches), cannot be the origin. When the
// new test's shard was stitched before the old test's shard of the same commit arrived, the old
// test's own fingerprint now runs where its alias ran: the alias is revoked going forward (the
// fingerprint gets an identity of its own, the old identity its own name back).
// Before all of that, a test never seen whose pre-fix JUnit reading (its "legacy twin",
// client/src/contract/junit-names.ts legacyJUnitTwins) is stored joins that identity: a project that sent
// Vitest, Playwright or jest-junit JUnit before the receiver read them as the reporters do keeps
// one test, with the twin's history and quarantine, when the new reading or the reporter first
// sends it. Such an alias is never revoked: the twins are one test by construction.
import { z } from 'zod';
import { stableUuid } from '../../client/src/contract/ids.js';
import { canonicalJson, fingerprint, normalizeTestPath, paramsHash, testIdentityId } from '../../client/src/contract/identity.js';
import { isLegacyJUnitTwin, legacyJUnitTwins } from '../../client/src/contract/junit-names.js';
import { IdentityCache, buildExecutions, buildIdentity, type ExecutionRecord, type IdentityRecord } from '../domain/records.js';
import {
  PresenceIndex,
  candidateIndex,
  contradictedAliases,
  isKnownCommit,
  presentIn,
  resolveIdentity,
  type AliasRun,
  type KnownIdentity,
  type Resolution,
  type RunRef,
} from '../domain/stitch.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import type { WorkBatch } from '../pipeline/work-batch.js';
import { Yielder } from '../pipeline/yield.js';
import type { IdentityRepo, SeenIn, StitchCandidate, StitchKey, StoredAliasRun } from '../store/identities.js';

const MAX_CACHE = 1_000_000;

/** What the processor remembers between leases. Only facts read back from storage, or hints that cost a query when wrong. */
interface IdentityCaches {
  /** Identity ids known to exist (identities and aliases are never deleted). */
  knownIds: Set<string>;
  /** `${projectId}:${fingerprint}` → the identity its alias points to. */
  aliasCache: Map<string, string>;
  /** Ids ever moved or renamed, as read with knownIds or stitched by this processor (a hint: only these can have aliases). */
  stitchedIds: Set<string>;
  /** Identity id → fingerprints whose alias points to it, as read; dropped when this processor changes them. */
  aliasesOf: Map<string, string[]>;
  /** Per project: merged-from id → kept id (test_merges), with the row count it was read at. */
  merges: Map<string, { count: number; into: Map<string, string> }>;
}

export const identityProcessorFactory = defineProcessor({
  type: 'identity',
  description: 'assigns every execution a stable test identity: exact, alias, moved (L2), renamed (L3), new',
  configSchema: z.object({}).strict(),
  // Builds items[].executions from the jobs and gives each its test id; new and stitched identities.
  requires: ['runs'],
  provides: ['executions', 'identities'],
  start: (host, _cfg, { id, logger }) => {
    const repo = host.extensions.repositories('processor', id).identities;
    const cache = new IdentityCache();
    // Only facts read back from storage are cached; what this lease creates may still fail to commit.
    const caches: IdentityCaches = { knownIds: new Set(), aliasCache: new Map(), stitchedIds: new Set(), aliasesOf: new Map(), merges: new Map() };
    return {
      async processBatch(batch) {
        const y = new Yielder();
        const byProject = new Map<string, ExecutionRecord[]>();
        for (const item of batch.items) {
          item.executions = buildExecutions(item.run, item.job.batch, cache);
          const list = byProject.get(item.job.projectId) ?? [];
          list.push(...item.executions);
          byProject.set(item.job.projectId, list);
          await y.tick(item.executions.length);
        }
        // knownIds and stitchedIds are cleared together: a known id's stitched flag was read with it.
        if (caches.knownIds.size > MAX_CACHE) {
          caches.knownIds.clear();
          caches.stitchedIds.clear();
        }
        if (caches.aliasCache.size > MAX_CACHE) caches.aliasCache.clear();
        if (caches.aliasesOf.size > MAX_CACHE) caches.aliasesOf.clear();
        for (const [projectId, executions] of byProject) {
          const joined = await resolveProject(repo, batch, projectId, executions, caches);
          // Once per lease and project: a project's first lease after the fix may join hundreds.
          if (joined.length > 0) {
            logger.info(
              { projectId, lease: batch.leaseId, joined: joined.length, examples: joined.slice(0, 5) },
              'identity: tests joined to their legacy JUnit twins (stored under the JUnit reading before the fix of issue 39)',
            );
          }
        }
      },
    };
  },
});

async function resolveProject(
  repo: IdentityRepo,
  batch: WorkBatch,
  projectId: string,
  executions: ExecutionRecord[],
  caches: IdentityCaches,
): Promise<JoinedTwin[]> {
  const { knownIds, aliasCache } = caches;
  const joined: JoinedTwin[] = [];
  const whereRan = runLocator(batch, projectId);
  // One representative execution per fingerprint, in batch order (deterministic).
  const byFp = new Map<string, ExecutionRecord>();
  for (const e of executions) if (!byFp.has(e.fingerprint)) byFp.set(e.fingerprint, e);

  // 1. Exact: the fingerprint's own identity exists, or the fingerprint is an alias.
  const defaults = [...byFp.values()].map((e) => e.testId);
  const found = await repo.existing(projectId, defaults.filter((id) => !knownIds.has(id)));
  for (const [id, stitched] of found) {
    knownIds.add(id);
    if (stitched) caches.stitchedIds.add(id);
  }
  const resolved = new Map<string, string>();
  /** Fingerprints resolved through an alias → the identity. */
  const viaAlias = new Map<string, string>();
  const unknown: ExecutionRecord[] = [];
  for (const [fp, e] of byFp) {
    const aliased = aliasCache.get(`${projectId}:${fp}`);
    if (knownIds.has(e.testId)) resolved.set(fp, e.testId);
    else if (aliased !== undefined) viaAlias.set(fp, aliased);
    else unknown.push(e);
  }
  if (unknown.length > 0) {
    for (const [fp, id] of await repo.aliasTargets(projectId, unknown.map((e) => e.fingerprint))) {
      aliasCache.set(`${projectId}:${fp}`, id);
      viaAlias.set(fp, id);
    }
  }
  for (const [fp, id] of viaAlias) resolved.set(fp, id);

  // 1b. Aliases contradicted by this lease: their identity's own fingerprint runs where they ran.
  await revokeContradictedAliases(repo, batch, projectId, executions, byFp, resolved, viaAlias, whereRan, caches);

  const fresh = unknown.filter((e) => !resolved.has(e.fingerprint));

  // 2. Legacy JUnit twin / moved / renamed / new for fingerprints never seen.
  const twins = fresh.length > 0 ? await legacyTwins(repo, projectId, fresh, caches) : new Map<string, LegacyTwin>();
  if (fresh.length > 0) {
    const incoming = fresh.map((e) => ({ e, key: { filePath: normalizeTestPath(e.input.filePath), suite: e.input.suite.trim(), title: e.input.title.trim(), paramsHash: paramsHash(e.input.params) } }));
    const present = new Set(resolved.values());
    const runsOf = freshRuns(executions, new Set(fresh.map((e) => e.fingerprint)), whereRan);
    // Where each candidate ran in the new tests' runs or on their commits before this lease.
    const ranBefore = new PresenceIndex();
    const candidates = await stitchCandidates(repo, projectId, incoming, runsOf, ranBefore);
    const claimed = new Set<string>();
    const candidatesFor = candidateIndex(candidates);
    for (const { e, key } of incoming) {
      const mine = candidates.length > 0 ? candidatesFor(key) : [];
      const presentHere = presentIn(present, ranBefore, runsOf.get(e.fingerprint) ?? []);
      const twin = twins.get(e.fingerprint);
      let res: Resolution | LegacyResolution =
        twin !== undefined && !claimed.has(twin.id)
          ? { kind: 'legacy', id: twin.id, from: twin.from }
          : mine.length > 0
            ? resolveIdentity(key, null, mine, presentHere)
            : { kind: 'new' };
      // Two new tests cannot both inherit one old identity: the first in the batch does.
      if ((res.kind === 'moved' || res.kind === 'renamed') && claimed.has(res.id)) res = { kind: 'new' };
      if (res.kind === 'exact') {
        resolved.set(e.fingerprint, res.id);
        continue;
      }
      if (res.kind === 'new') {
        resolved.set(e.fingerprint, e.testId);
        present.add(e.testId);
        const identity = buildIdentity(e);
        batch.identities.push(identity);
        emitCreated(batch, projectId, identity);
        continue;
      }
      // legacy twin or moved (L2), renamed (L3): the old identity lives on under the new name.
      claimed.add(res.id);
      present.add(res.id);
      caches.stitchedIds.add(res.id);
      caches.aliasesOf.delete(res.id);
      resolved.set(e.fingerprint, res.id);
      // A legacy twin is recorded as a move (another file, the same test), as certain as one.
      const level = res.kind === 'renamed' ? 'L3' : 'L2';
      if (res.kind === 'legacy') joined.push({ testId: res.id, from: `${res.from.filePath} | ${res.from.suite} | ${res.from.title}`, to: `${e.input.filePath} | ${e.input.suite} | ${e.input.title}` });
      const confidence = res.kind === 'renamed' ? res.confidence : 1;
      batch.aliases.push({ projectId, fingerprint: e.fingerprint, testId: res.id, createdAt: batch.now });
      batch.stitches.push({
        projectId,
        testId: res.id,
        level,
        fromFilePath: res.from.filePath,
        fromTitle: res.from.title,
        toFilePath: e.input.filePath,
        toTitle: e.input.title,
        confidence,
        createdAt: batch.now,
      });
      // The identity now shows its current name: a row with a newer version replaces the old one.
      // The version is the processing time, so the stitch decided last wins even when runs arrive
      // out of order; first_seen_at is the stitch time (the original's is in its older rows).
      batch.identities.push({ ...buildIdentity(e), id: res.id, firstSeenAt: batch.now, version: Date.now(), stitched: true });
      batch.emit(projectId, {
        id: stableUuid('identity.moved', projectId, res.id, e.fingerprint),
        type: 'identity.moved',
        projectId,
        occurredAt: batch.now,
        data: { testIdentityId: res.id, level, confidence, fromFilePath: res.from.filePath, fromTitle: res.from.title, toFilePath: e.input.filePath, toTitle: e.input.title },
      });
    }
  }

  // 3. A merged identity's executions land on the identity it was merged into (src/usecases/junit-twin-merge.ts).
  const merged = await mergedInto(repo, projectId, caches);
  for (const e of executions) {
    const id = resolved.get(e.fingerprint) ?? e.testId;
    e.testId = merged.size > 0 ? keptId(merged, id) : id;
  }
  return joined;
}

/**
 * The project's merges, read again only when its count of merge rows changed (one small count per
 * lease and project: a merge made through the admin API or at start-up applies to the next lease).
 */
async function mergedInto(repo: IdentityRepo, projectId: string, caches: IdentityCaches): Promise<Map<string, string>> {
  const count = await repo.mergeCount(projectId);
  const cached = caches.merges.get(projectId);
  if (cached && cached.count === count) return cached.into;
  const into = count === 0 ? new Map<string, string>() : await repo.mergedInto(projectId);
  caches.merges.set(projectId, { count, into });
  return into;
}

/** The identity `id` was merged into, through chained merges (a few hops at most; a cycle stops). */
function keptId(merged: ReadonlyMap<string, string>, id: string): string {
  let cur = id;
  for (let hops = 0; hops < 8; hops++) {
    const next = merged.get(cur);
    if (next === undefined || next === id) return cur;
    cur = next;
  }
  return cur;
}

/** A test joined to its legacy JUnit twin, for the log: the names as `file | suite | title`. */
interface JoinedTwin {
  testId: string;
  from: string;
  to: string;
}

/** The stored identity a fresh fingerprint's legacy JUnit twin is, with its name. */
interface LegacyTwin {
  id: string;
  from: KnownIdentity;
}

/** The resolution the identity processor adds to stitch.ts's: joined to its legacy JUnit twin. */
interface LegacyResolution {
  kind: 'legacy';
  id: string;
  from: KnownIdentity;
}

/**
 * Fresh fingerprints whose legacy JUnit twin (legacyJUnitTwins: the same testcase as the JUnit
 * receiver read it before the fix) is a stored identity, under its own fingerprint. One query per
 * lease with fresh fingerprints (new tests are rare after a project's first runs), none when no
 * fresh test has a path-like file and no params.
 */
async function legacyTwins(repo: IdentityRepo, projectId: string, fresh: readonly ExecutionRecord[], caches: IdentityCaches): Promise<Map<string, LegacyTwin>> {
  const wanted: { fp: string; twins: LegacyTwin[] }[] = [];
  for (const e of fresh) {
    if (paramsHash(e.input.params) !== '') continue;
    // One id per twin (two hashes: the fingerprint and the id), named by both fields.
    const twins = legacyJUnitTwins({ filePath: e.input.filePath, suite: e.input.suite, title: e.input.title }).map((t) => {
      const id = testIdentityId(projectId, fingerprint(t));
      return { id, from: { id, filePath: t.filePath, suite: t.suite, title: t.title, paramsHash: '' } };
    });
    if (twins.length > 0) wanted.push({ fp: e.fingerprint, twins });
  }
  const out = new Map<string, LegacyTwin>();
  if (wanted.length === 0) return out;
  const ids = [...new Set(wanted.flatMap((w) => w.twins.map((t) => t.id)))];
  const found = await repo.existing(projectId, ids.filter((id) => !caches.knownIds.has(id)));
  for (const [id, stitched] of found) {
    caches.knownIds.add(id);
    if (stitched) caches.stitchedIds.add(id);
  }
  for (const w of wanted) {
    const twin = w.twins.find((t) => caches.knownIds.has(t.id));
    if (twin) out.set(w.fp, twin);
  }
  return out;
}

function emitCreated(batch: WorkBatch, projectId: string, identity: IdentityRecord): void {
  batch.emit(projectId, {
    id: stableUuid('identity.created', projectId, identity.id),
    type: 'identity.created',
    projectId,
    occurredAt: batch.now,
    data: { testIdentityId: identity.id, fingerprint: identity.fingerprint, filePath: identity.filePath, suite: identity.suite, title: identity.title },
  });
}

/** Where an execution of the project ran in this lease: its run and the run's commit. */
function runLocator(batch: WorkBatch, projectId: string): (e: ExecutionRecord) => RunRef {
  // Parts of one run (OTLP traces) may come as several items: any known commit among them is the run's.
  const commitOf = new Map<string, string>();
  for (const item of batch.items) {
    if (item.job.projectId !== projectId) continue;
    const sha = item.run.resource.commitSha;
    if (!commitOf.has(item.run.id) || isKnownCommit(sha)) commitOf.set(item.run.id, sha);
  }
  return (e) => ({ runId: e.runId, commitSha: commitOf.get(e.runId) ?? '' });
}

/** Every run (one per run id) each of `fingerprints` ran in within the lease. */
function freshRuns(executions: readonly ExecutionRecord[], fingerprints: ReadonlySet<string>, whereRan: (e: ExecutionRecord) => RunRef): Map<string, RunRef[]> {
  const out = new Map<string, RunRef[]>();
  for (const e of executions) {
    if (!fingerprints.has(e.fingerprint)) continue;
    const list = out.get(e.fingerprint);
    if (!list) out.set(e.fingerprint, [whereRan(e)]);
    else if (!list.some((w) => w.runId === e.runId)) list.push(whereRan(e));
  }
  return out;
}

/** The runs' ids and their known commits, as query filters. */
function runFilter(refs: Iterable<RunRef>): { runIds: string[]; commits: string[] } {
  const runIds = new Set<string>();
  const commits = new Set<string>();
  for (const w of refs) {
    runIds.add(w.runId);
    if (isKnownCommit(w.commitSha)) commits.add(w.commitSha);
  }
  return { runIds: [...runIds], commits: [...commits] };
}

/**
 * The stitch candidates of the lease's new tests, with where they ran before this lease (added to
 * `ranBefore`). The first query leaves out, in SQL, the candidates that ran in every one of the
 * new tests' runs (or on its commit): present for every new test, they can be no origin. Over a
 * large report arriving in parts those are the tests of its earlier parts, which every lease read
 * back whole before (quadratic in the report, issue 40). They still count as the runner-up that
 * blocks a rename (resolveIdentity: a present candidate with the closest title makes the test new),
 * so a second query reads them for the new tests a rename is possible for: those with a candidate
 * in the same file, suite and params, another title, that did not run in their runs. Both read the
 * store each lease: nothing here is remembered between leases, so several daemons on one database
 * and a restart see what a single query over every candidate would.
 */
async function stitchCandidates(
  repo: IdentityRepo,
  projectId: string,
  incoming: readonly { e: ExecutionRecord; key: StitchKey }[],
  runsOf: ReadonlyMap<string, RunRef[]>,
  ranBefore: PresenceIndex,
): Promise<KnownIdentity[]> {
  const keys = incoming.map((x) => x.key);
  const seen: SeenIn = { where: distinctRuns(runsOf), exceptFingerprints: [...runsOf.keys()] };
  const take = (found: readonly StitchCandidate[]): KnownIdentity[] =>
    found.map(({ ranAt, ...c }) => {
      for (const where of ranAt) ranBefore.add(c.id, where);
      return { ...c, filePath: normalizeTestPath(c.filePath) };
    });
  const candidates = take(await repo.stitchCandidates(projectId, keys, seen));
  if (candidates.length === 0) return candidates;
  const candidatesFor = candidateIndex(candidates);
  const renameKeys = incoming
    .filter(({ e, key }) => {
      const where = runsOf.get(e.fingerprint) ?? [];
      return candidatesFor(key).some((c) => isRenameCandidate(c, key) && !where.some((w) => ranBefore.has(c.id, w)));
    })
    // The path as resolveIdentity compares it (it normalises the key's path again).
    .map((x) => ({ ...x.key, filePath: normalizeTestPath(x.key.filePath) }));
  if (renameKeys.length === 0) return candidates;
  const known = new Set(candidates.map((c) => c.id));
  const competitors = take((await repo.presentCompetitors(projectId, keys, seen, renameKeys)).filter((c) => !known.has(c.id)));
  return [...candidates, ...competitors];
}

/** Whether `c` is in the new test's file, suite and params under another title, as resolveIdentity compares them: a candidate for its rename (L3). */
function isRenameCandidate(c: KnownIdentity, key: StitchKey): boolean {
  return (
    c.paramsHash === key.paramsHash &&
    c.suite.trim() === key.suite.trim() &&
    normalizeTestPath(c.filePath) === normalizeTestPath(key.filePath) &&
    c.title.trim() !== key.title.trim()
  );
}

/** Each run of the new tests once (a run id has one commit within a lease: runLocator). */
function distinctRuns(runsOf: ReadonlyMap<string, RunRef[]>): RunRef[] {
  const byRun = new Map<string, RunRef>();
  for (const refs of runsOf.values()) for (const w of refs) if (!byRun.has(w.runId)) byRun.set(w.runId, w);
  return [...byRun.values()];
}

/**
 * Revokes the aliases this lease contradicts: an alias fingerprint that ran (in this lease or
 * before) in a run or on a commit where its identity's own fingerprint runs in this lease. Such an
 * alias was stitched from the new test's shard before the old test's shard of the same commit
 * arrived. Going forward the fingerprint has an identity of its own (its default id, which exact
 * resolution finds before any alias), the alias points there, and the old identity shows its own
 * name again. Executions already stored under the old identity stay there, and so does the stitch
 * row in its history.
 * The stored lookup runs only for identities ever stitched whose own fingerprint runs in this lease
 * and that still have aliases: after a rename the old fingerprint normally stops running.
 */
async function revokeContradictedAliases(
  repo: IdentityRepo,
  batch: WorkBatch,
  projectId: string,
  executions: readonly ExecutionRecord[],
  byFp: ReadonlyMap<string, ExecutionRecord>,
  resolved: Map<string, string>,
  viaAlias: Map<string, string>,
  whereRan: (e: ExecutionRecord) => RunRef,
  caches: IdentityCaches,
): Promise<void> {
  // Identities that could have a contradicted alias: targets of aliases in this lease, and stitched ones.
  const watched = new Set<string>(viaAlias.values());
  for (const [fp, e] of byFp) if (!viaAlias.has(fp) && resolved.get(fp) === e.testId && caches.stitchedIds.has(e.testId)) watched.add(e.testId);
  if (watched.size === 0) return;

  // Where the watched identities run under their own fingerprint, and one such execution each (its name).
  const own = new PresenceIndex();
  const ownExecution = new Map<string, ExecutionRecord>();
  const aliasRuns: AliasRun[] = [];
  for (const e of executions) {
    const target = viaAlias.get(e.fingerprint);
    if (target !== undefined) aliasRuns.push({ fingerprint: e.fingerprint, testId: target, where: whereRan(e) });
    else if (watched.has(e.testId) && resolved.get(e.fingerprint) === e.testId) {
      own.add(e.testId, whereRan(e));
      if (!ownExecution.has(e.testId)) ownExecution.set(e.testId, e);
    }
  }
  if (own.isEmpty) return;

  const stored = await storedAliasRuns(repo, projectId, [...ownExecution.keys()], executions, ownExecution, whereRan, caches);
  const revoked = contradictedAliases(own, [...aliasRuns, ...stored]);
  // A legacy JUnit twin's alias is the same test by construction: running beside it contradicts nothing.
  for (const [fp, target] of revoked) {
    const self = ownExecution.get(target)?.input;
    const alias = byFp.get(fp)?.input ?? stored.find((r) => r.fingerprint === fp);
    if (self && alias && isLegacyJUnitTwin(self, alias)) revoked.delete(fp);
  }
  const restored = new Set<string>();
  for (const [fp, target] of revoked) {
    const inLease = byFp.get(fp);
    const identity = inLease ? buildIdentity(inLease) : ownIdentityFromStored(projectId, fp, stored);
    if (!identity) continue;
    batch.identities.push(identity);
    emitCreated(batch, projectId, identity);
    // Points the fingerprint at its own identity. Later than the alias it replaces: that one's time
    // is an earlier lease's, at most its arrival, so before this lease is processed.
    batch.aliases.push({ projectId, fingerprint: fp, testId: identity.id, createdAt: Math.max(batch.now, Date.now()) });
    viaAlias.delete(fp);
    if (inLease) resolved.set(fp, identity.id);
    caches.aliasCache.delete(`${projectId}:${fp}`);
    caches.aliasesOf.delete(target);
    // The old identity shows the name its own fingerprint runs under again (a newer row, as a stitch writes).
    const self = ownExecution.get(target);
    if (self && !restored.has(target)) {
      restored.add(target);
      batch.identities.push({ ...buildIdentity(self), firstSeenAt: batch.now, version: Date.now(), stitched: true });
    }
  }
}

/** Stored runs of the aliases of `targets` in the lease's runs where those targets run under their own fingerprint, or on those runs' commits. */
async function storedAliasRuns(
  repo: IdentityRepo,
  projectId: string,
  targets: readonly string[],
  executions: readonly ExecutionRecord[],
  ownExecution: ReadonlyMap<string, ExecutionRecord>,
  whereRan: (e: ExecutionRecord) => RunRef,
  caches: IdentityCaches,
): Promise<StoredAliasRun[]> {
  if (targets.length === 0) return [];
  const unread = targets.filter((id) => !caches.aliasesOf.has(id));
  if (unread.length > 0) for (const [id, fps] of await repo.liveAliases(projectId, unread)) caches.aliasesOf.set(id, fps);
  const withAliases = targets.filter((id) => (caches.aliasesOf.get(id) ?? []).length > 0);
  if (withAliases.length === 0) return [];
  const wanted = new Set(withAliases);
  const refs = executions.filter((e) => wanted.has(e.testId) && ownExecution.has(e.testId)).map(whereRan);
  return repo.aliasRunsWith(projectId, withAliases, withAliases.flatMap((id) => caches.aliasesOf.get(id) ?? []), runFilter(refs));
}

/** The identity a revoked alias fingerprint gets, named as its stored executions were. */
function ownIdentityFromStored(projectId: string, fp: string, stored: readonly StoredAliasRun[]): IdentityRecord | null {
  const runs = stored.filter((r) => r.fingerprint === fp);
  const first = runs[0];
  if (!first) return null;
  const firstSeenAt = Math.min(...runs.map((r) => r.firstStartedAt));
  const params = first.params === '' ? undefined : (JSON.parse(first.params) as Record<string, unknown>);
  return {
    id: testIdentityId(projectId, fp),
    projectId,
    fingerprint: fp,
    filePath: first.filePath,
    suite: first.suite,
    title: first.title,
    params: params ? canonicalJson(params) : '',
    paramsHash: paramsHash(params),
    firstSeenAt,
    version: firstSeenAt,
  };
}

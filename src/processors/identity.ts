// `identity` processor (docs/architecture.md "Identity, scoring, clustering"): every execution gets a stable test id.
// Resolution, first match wins: exact fingerprint or alias → moved (same suite, title and params in
// another file: alias + stitch L2, `identity.moved`) → renamed (same file, suite and params, a
// clearly closest title: alias + stitch L3 with its confidence) → new (`identity.created`).
import { z } from 'zod';
import { stableUuid } from '../domain/ids.js';
import { normalizeTestPath, paramsHash } from '../domain/identity.js';
import { IdentityCache, buildExecutions, buildIdentity, type ExecutionRecord } from '../domain/records.js';
import { candidateIndex, resolveIdentity, type KnownIdentity, type Resolution } from '../domain/stitch.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import type { WorkBatch } from '../pipeline/work-batch.js';
import { Yielder } from '../pipeline/yield.js';
import { IdentityRepo } from '../store/identities.js';

const MAX_CACHE = 1_000_000;

export const identityProcessorFactory = defineProcessor({
  type: 'identity',
  description: 'assigns every execution a stable test identity: exact, alias, moved (L2), renamed (L3), new',
  configSchema: z.object({}).strict(),
  start: (host) => {
    const repo = new IdentityRepo(host.store);
    const cache = new IdentityCache();
    // Only facts read back from storage are cached (identities and aliases are never deleted);
    // what this lease creates may still fail to commit.
    const knownIds = new Set<string>();
    const aliasCache = new Map<string, string>();
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
        if (knownIds.size > MAX_CACHE) knownIds.clear();
        if (aliasCache.size > MAX_CACHE) aliasCache.clear();
        for (const [projectId, executions] of byProject) {
          await resolveProject(repo, batch, projectId, executions, knownIds, aliasCache);
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
  knownIds: Set<string>,
  aliasCache: Map<string, string>,
): Promise<void> {
  // One representative execution per fingerprint, in batch order (deterministic).
  const byFp = new Map<string, ExecutionRecord>();
  for (const e of executions) if (!byFp.has(e.fingerprint)) byFp.set(e.fingerprint, e);

  // 1. Exact: the fingerprint's own identity exists, or the fingerprint is an alias.
  const defaults = [...byFp.values()].map((e) => e.testId);
  const found = await repo.existing(projectId, defaults.filter((id) => !knownIds.has(id)));
  for (const id of found) knownIds.add(id);
  const resolved = new Map<string, string>();
  const unknown: ExecutionRecord[] = [];
  for (const [fp, e] of byFp) {
    if (knownIds.has(e.testId)) resolved.set(fp, e.testId);
    else if (aliasCache.has(`${projectId}:${fp}`)) resolved.set(fp, aliasCache.get(`${projectId}:${fp}`)!);
    else unknown.push(e);
  }
  if (unknown.length > 0) {
    for (const [fp, id] of await repo.aliasTargets(projectId, unknown.map((e) => e.fingerprint))) {
      aliasCache.set(`${projectId}:${fp}`, id);
      resolved.set(fp, id);
    }
  }
  const fresh = unknown.filter((e) => !resolved.has(e.fingerprint));

  // 2. Moved / renamed / new for fingerprints never seen.
  if (fresh.length > 0) {
    const incoming = fresh.map((e) => ({ e, key: { filePath: normalizeTestPath(e.input.filePath), suite: e.input.suite.trim(), title: e.input.title.trim(), paramsHash: paramsHash(e.input.params) } }));
    const candidates: KnownIdentity[] = (await repo.stitchCandidates(projectId, incoming.map((x) => x.key))).map((c) => ({ ...c, filePath: normalizeTestPath(c.filePath) }));
    const present = new Set(resolved.values());
    const claimed = new Set<string>();
    const candidatesFor = candidateIndex(candidates);
    for (const { e, key } of incoming) {
      const mine = candidates.length > 0 ? candidatesFor(key) : [];
      let res: Resolution = mine.length > 0 ? resolveIdentity(key, null, mine, present) : { kind: 'new' };
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
        batch.emit(projectId, {
          id: stableUuid('identity.created', projectId, e.testId),
          type: 'identity.created',
          projectId,
          occurredAt: batch.now,
          data: { testIdentityId: e.testId, fingerprint: e.fingerprint, filePath: identity.filePath, suite: identity.suite, title: identity.title },
        });
        continue;
      }
      // moved (L2) or renamed (L3): the old identity lives on under the new name.
      claimed.add(res.id);
      present.add(res.id);
      resolved.set(e.fingerprint, res.id);
      const level = res.kind === 'moved' ? 'L2' : 'L3';
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

  for (const e of executions) e.testId = resolved.get(e.fingerprint) ?? e.testId;
}

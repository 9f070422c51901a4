// `identity` processor: exact fingerprint → stable test id (DESIGN.md "Identity"); identities seen
// for the first time are written by the exporter and announced with `identity.created`.
import { z } from 'zod';
import { stableUuid } from '../domain/ids.js';
import { IdentityCache, buildExecutions, buildIdentity } from '../domain/records.js';
import type { Host, ProcessorFactory } from '../pipeline/component.js';
import { Yielder } from '../pipeline/yield.js';
import { RunRepo } from '../store/runs.js';

export const identityProcessorFactory: ProcessorFactory<Record<string, never>> = {
  kind: 'processor',
  type: 'identity',
  description: 'assigns every execution a stable test identity (exact fingerprint)',
  signals: ['executions'],
  configSchema: z.object({}).strict(),
  createExecutions: () => {
    let runs: RunRepo | undefined;
    const cache = new IdentityCache();
    // Identities are never deleted, so once seen an id needs no lookup again.
    const knownIds = new Set<string>();
    return {
      async start(host: Host) {
        runs = new RunRepo(host.store);
      },
      async shutdown() {},
      async processBatch(batch) {
        if (!runs) throw new Error('identity processor used before start');
        const byProject = new Map<string, Set<string>>();
        const y = new Yielder();
        for (const item of batch.items) {
          item.executions = buildExecutions(item.run, item.job.batch, cache);
          await y.tick(item.executions.length);
          const ids = byProject.get(item.job.projectId) ?? new Set<string>();
          for (const e of item.executions) ids.add(e.testId);
          byProject.set(item.job.projectId, ids);
        }
        const known = new Map<string, Set<string>>();
        for (const [projectId, ids] of byProject) {
          const unknown = [...ids].filter((id) => !knownIds.has(id));
          const found = await runs.existingIdentities(projectId, unknown);
          // Only ids read back from storage are cached: a new one is written by this lease, which may yet fail.
          if (knownIds.size > 1_000_000) knownIds.clear();
          for (const id of found) knownIds.add(id);
          known.set(projectId, new Set([...ids].filter((id) => knownIds.has(id) || found.has(id))));
        }
        for (const item of batch.items) {
          const seen = known.get(item.job.projectId)!;
          item.newIdentities = [];
          for (const e of item.executions) {
            if (seen.has(e.testId)) continue;
            seen.add(e.testId); // later items in this lease see it as known
            const identity = buildIdentity(e);
            item.newIdentities.push(identity);
            item.events.push({
              id: stableUuid('identity.created', e.projectId, e.testId),
              type: 'identity.created',
              projectId: e.projectId,
              occurredAt: item.job.receivedAt,
              data: { testIdentityId: e.testId, fingerprint: e.fingerprint, filePath: identity.filePath, suite: identity.suite, title: identity.title },
            });
          }
        }
      },
    };
  },
};

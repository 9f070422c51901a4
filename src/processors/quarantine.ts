// `quarantine` processor: automatic quarantine of flaky candidates when `quarantine.enabled`, and
// automatic release after `quarantine.cooldownRuns` clean runs or as soon as the test is broken
// (a quarantine must never hide a real break); tests with a person's override are
// left alone (docs/contract.md §7). Emits `quarantine.changed`.
import { z } from 'zod';
import { stableUuid } from '../../client/src/contract/ids.js';
import { stepQuarantine } from '../domain/quarantine.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';

export const quarantineProcessorFactory = defineProcessor({
  type: 'quarantine',
  description: 'auto-quarantines flaky candidates and releases them after clean runs (quarantine.changed)',
  configSchema: z.object({}).strict(),
  // Steps the auto state of the test states scoring computed for this lease.
  requires: ['testStates'],
  provides: ['quarantine', 'healthEvents'],
  start: (host, _cfg, { id }) => {
    const repo = host.extensions.repositories('processor', id).tests;
    return {
      async processBatch(batch) {
        const byProject = new Map<string, string[]>();
        for (const u of batch.testStates.values()) {
          // Redeliveries, and states only being flushed from memory (not run in this lease), stay as they are.
          if (u.alreadyApplied || u.previous === u.record) continue;
          const list = byProject.get(u.record.projectId) ?? [];
          list.push(u.record.testId);
          byProject.set(u.record.projectId, list);
        }
        for (const [projectId, ids] of byProject) {
          // Each project's own quarantine.enabled / cooldownRuns.
          const { quarantine } = (await host.projectConfig(projectId)).config;
          const policy = { enabled: quarantine.enabled, cooldownRuns: quarantine.cooldownRuns };
          // One read of the project's (few) overrides beats an IN list of every touched test.
          const overrides = await repo.overrides(projectId, null);
          for (const testId of ids) {
            const u = batch.testStates.get(`${projectId}:${testId}`)!;
            const r = u.record;
            const scored = {
              candidate: r.candidate,
              broken: r.state === 'broken',
              brokenSince: r.state === 'broken' ? (r.stateSince?.commitSha ?? null) : null,
              score: r.score,
              lastFlakedAt: r.lastFlakedAt,
              fixed: r.state === 'fixed',
              fixedSince: r.state === 'fixed' ? (r.stateSince?.commitSha ?? null) : null,
            };
            const step = stepQuarantine(u.previous?.auto ?? null, overrides.get(testId) ?? null, policy, u.outcome, scored, batch.now);
            const before = u.record.auto;
            u.record.auto = step.next;
            if (step.next.autoQuarantined !== before.autoQuarantined || step.next.cleanRuns !== before.cleanRuns || step.next.releasedAt !== before.releasedAt) u.persist = true;
            if (!step.changed) continue;
            batch.healthEvents.push({ projectId, testId, kind: step.changed === 'quarantined' ? 'quarantined' : 'released', at: batch.now, score: u.record.score });
            batch.emit(projectId, {
              id: stableUuid('quarantine.changed', projectId, testId, batch.leaseId),
              type: 'quarantine.changed',
              projectId,
              occurredAt: batch.now,
              data: { testIdentityId: testId, quarantined: step.changed === 'quarantined', source: 'auto', reason: step.next.reason || null, score: u.record.score },
            });
          }
        }
      },
    };
  },
});

// A person's quarantine decision on a test (POST /v1/tests/:id/quarantine) and the product's own
// decisions taken on a person's behalf (a merge carrying a twin's quarantine, src/usecases/junit-twin-merge.ts):
// one write path, so the override, the `quarantined`/`released` health event (the quarantine log) and
// the `quarantine.changed` event are written the same way.
import type { DomainEvent } from '../domain/events.js';
import { stableUuid } from '../../client/src/contract/ids.js';
import { effectiveQuarantine, type OverrideRow } from '../domain/quarantine.js';
import type { Outbox } from '../queue/types.js';
import type { IdentityRepo } from '../store/identities.js';
import type { TestRepo } from '../store/tests.js';
import { UUID_RE } from '../../client/src/contract/ids.js';
import { errors } from '../errors/catalogue.js';

export type QuarantineDecision = 'quarantined' | 'released' | 'auto';

export interface QuarantineDecisionDeps {
  tests: Pick<TestRepo, 'state' | 'overrides' | 'writeOverride' | 'addHealthEvent'>;
  outbox: Pick<Outbox, 'append'>;
}

export interface QuarantineDecisionResult {
  quarantined: boolean;
  override: 'quarantined' | 'released' | null;
  changed: boolean;
}

/** Records the decision (the test must exist); the same decision again without a new reason writes nothing. */
export async function decideQuarantine(
  d: QuarantineDecisionDeps,
  projectId: string,
  testId: string,
  decision: QuarantineDecision,
  reason?: string,
): Promise<QuarantineDecisionResult> {
  const [state, overrides] = await Promise.all([d.tests.state(projectId, testId), d.tests.overrides(projectId, [testId])]);
  const before = overrides.get(testId) ?? null;
  const effBefore = effectiveQuarantine(state?.auto ?? null, before);
  const now = Math.max(Date.now(), (before?.decidedAt ?? 0) + 1);
  const given = reason?.trim();
  // The same decision again without a new reason changes nothing and writes nothing.
  if (before && decision !== 'auto' && before.override === decision && (!given || given === before.reason)) {
    return { quarantined: effBefore.quarantined, override: before.override, changed: false };
  }
  const why = given || (decision === 'quarantined' ? 'manual' : '');
  let row: OverrideRow;
  if (decision === 'auto') row = { override: null, reason: effBefore.reason ?? '', stateAfter: effBefore.quarantined, decidedAt: now };
  else row = { override: decision, reason: why, stateAfter: decision === 'quarantined', decidedAt: now };
  await d.tests.writeOverride(projectId, testId, row);
  const effAfter = effectiveQuarantine(state?.auto ?? null, row);
  const overrideChanged = (before?.override ?? null) !== row.override;
  const changed = overrideChanged || effAfter.quarantined !== effBefore.quarantined;
  if (effAfter.quarantined !== effBefore.quarantined) {
    await d.tests.addHealthEvent(projectId, testId, effAfter.quarantined ? 'quarantined' : 'released', now, state?.score ?? 0);
    const event: DomainEvent = {
      id: stableUuid('quarantine.changed', projectId, testId, String(now)),
      type: 'quarantine.changed',
      projectId,
      occurredAt: now,
      data: { testIdentityId: testId, quarantined: effAfter.quarantined, source: 'manual', reason: effAfter.reason },
    };
    await d.outbox.append([event]);
  }
  return { quarantined: effAfter.quarantined, override: row.override, changed };
}

/**
 * POST /v1/tests/:id/quarantine and the `test.quarantine`/`test.release` procedures: a person's
 * decision on one of the project's tests (404 for an id that is not one).
 */
export async function quarantineTest(
  d: QuarantineDecisionDeps & { identities: Pick<IdentityRepo, 'get'> },
  projectId: string,
  testIdentityId: string,
  decision: QuarantineDecision,
  reason?: string,
): Promise<QuarantineDecisionResult> {
  if (!UUID_RE.test(testIdentityId)) throw errors.notFound('test not found');
  const testId = testIdentityId.toLowerCase();
  if (!(await d.identities.get(projectId, testId))) throw errors.notFound('test not found');
  return decideQuarantine(d, projectId, testId, decision, reason);
}

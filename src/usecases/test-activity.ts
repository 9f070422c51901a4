// The test page's tabs (the `test.history`, `test.quarantineLog` and `test.clusters` procedures): a
// test's executions for its status strip, its quarantine log and the error clusters of its failures.
// An id that is not one of the project's tests is 404, as on the test page.
import { UUID_RE } from '../../client/src/contract/ids.js';
import { effectiveQuarantine } from '../domain/quarantine.js';
import { toIso } from '../../client/src/contract/time.js';
import type { ClusterRepo } from '../store/clusters.js';
import type { IdentityRepo } from '../store/identities.js';
import type { QuarantineLogRepo } from '../store/quarantine-log.js';
import type { TestRepo } from '../store/tests.js';
import { errors } from '../errors/catalogue.js';

export interface TestActivityDeps {
  tests: Pick<TestRepo, 'history' | 'pageState' | 'overrides'>;
  identities: Pick<IdentityRepo, 'get'>;
  quarantineLog: Pick<QuarantineLogRepo, 'events'>;
  clusters: Pick<ClusterRepo, 'list'>;
}

/** The identity's id when it is this project's test; 404 otherwise. */
async function knownTest(d: TestActivityDeps, projectId: string, testIdentityId: string): Promise<string> {
  if (!UUID_RE.test(testIdentityId)) throw errors.notFound('test not found');
  const id = testIdentityId.toLowerCase();
  if (!(await d.identities.get(projectId, id))) throw errors.notFound('test not found');
  return id;
}

/** The test's latest executions. */
export async function testHistory(d: TestActivityDeps, projectId: string, testIdentityId: string, limit: number) {
  const id = await knownTest(d, projectId, testIdentityId);
  const rows = await d.tests.history(projectId, id, limit);
  return {
    testIdentityId: id,
    items: rows.map((r) => ({
      executionId: r.executionId,
      runId: r.runId,
      status: r.status,
      attempt: r.attempt,
      startedAt: r.startedAt,
      commitSha: r.commitSha,
      branch: r.branch,
      durationMs: r.durationMs,
      errorMessage: r.errorMessage,
      hasRca: r.hasRca,
    })),
  };
}

/** Whether the test is quarantined and why: the scorer's state, a person's decision, and the log. */
export async function testQuarantineLog(d: TestActivityDeps, projectId: string, testIdentityId: string, limit: number) {
  const id = await knownTest(d, projectId, testIdentityId);
  const [state, overrides, events] = await Promise.all([d.tests.pageState(projectId, id), d.tests.overrides(projectId, [id]), d.quarantineLog.events(projectId, id, limit)]);
  const override = overrides.get(id) ?? null;
  const eff = effectiveQuarantine(state?.auto ?? null, override);
  return {
    testIdentityId: id,
    quarantined: eff.quarantined,
    reason: eff.reason,
    /** The scorer's own state (what `auto` hands back to). */
    auto: { quarantined: state?.auto.autoQuarantined ?? false, reason: state?.auto.reason || null, since: state?.auto.quarantinedAt ? toIso(state.auto.quarantinedAt) : null },
    /** A person's latest decision, with its reason. */
    decision: override ? { override: override.override, reason: override.reason || null, decidedAt: toIso(override.decidedAt) } : null,
    events,
  };
}

/** The error clusters of the test's failures over the last `days`. */
export async function testClusters(d: TestActivityDeps, projectId: string, testIdentityId: string, days: number, now: number) {
  const id = await knownTest(d, projectId, testIdentityId);
  return { items: await d.clusters.list(projectId, { testId: id, days, limit: 100, now }) };
}

// The test page (GET /v1/tests/:id, the `test.get` procedure): a test's identity, score, state,
// quarantine, owners, moves and recent executions with their artifacts.
import type { z } from 'zod';
import { withArtifactLinks } from '../artifacts/links.js';
import type { ArtifactSigner } from '../artifacts/s3.js';
import { UUID_RE } from '../../client/src/contract/ids.js';
import { effectiveQuarantine } from '../domain/quarantine.js';
import { toIso } from '../../client/src/contract/time.js';
import type { CodeownersRepo } from '../store/codeowners.js';
import type { IdentityRepo } from '../store/identities.js';
import type { TestRepo } from '../store/tests.js';
import { errors } from '../errors/catalogue.js';
import { NO_RECENT_RUNS, round4, stateSinceBody, type testDetailSchema } from './test-schemas.js';

export interface TestPageDeps {
  tests: TestRepo;
  identities: IdentityRepo;
  codeowners: CodeownersRepo;
  /** Signs artifact download URLs; null or absent: refs are listed without URLs. */
  artifacts?: ArtifactSigner | null;
}

/** The test page; a malformed id is as unknown as another project's: 404. */
export async function testPage(
  d: TestPageDeps,
  projectId: string,
  testIdentityId: string,
  historyLimit: number,
): Promise<z.output<typeof testDetailSchema>> {
  if (!UUID_RE.test(testIdentityId)) throw errors.notFound('test not found');
  const testId = testIdentityId.toLowerCase();
  const identity = await d.identities.get(projectId, testId);
  if (!identity) throw errors.notFound('test not found');
  const [state, overrides, owners, aliases, stitches, history, recent] = await Promise.all([
    d.tests.pageState(projectId, testId),
    d.tests.overrides(projectId, [testId]),
    d.codeowners.resolver(projectId),
    // Only a moved or renamed identity has aliases and stitches: skip two reads for the rest.
    identity.stitched ? d.identities.aliases(projectId, testId) : Promise.resolve([]),
    identity.stitched ? d.identities.stitches(projectId, testId) : Promise.resolve([]),
    d.tests.history(projectId, testId, historyLimit),
    d.tests.recentRuns(projectId, [testId]),
  ]);
  const override = overrides.get(testId) ?? null;
  const eff = effectiveQuarantine(state?.auto ?? null, override);
  return {
    id: identity.id,
    fingerprint: identity.fingerprint,
    filePath: identity.filePath,
    suite: identity.suite,
    title: identity.title,
    owners: owners(identity.filePath),
    quarantined: eff.quarantined,
    quarantineReason: eff.reason,
    quarantineOverride: override?.override ?? null,
    quarantineOverrideAt: override?.override ? toIso(override.decidedAt) : null,
    score: state?.score ?? 0,
    reasonCodes: state?.reasons ?? [{ code: 'STABLE' as const, message: 'no executions scored yet' }],
    state: state?.state ?? 'new',
    stateSince: stateSinceBody(state?.stateSince ?? null),
    flakeRate: round4(state?.flakeRate ?? 0),
    recentRuns: recent.get(testId) ?? NO_RECENT_RUNS,
    aliases,
    stitches,
    history: await withArtifactLinks(projectId, history, d.artifacts ?? null),
  };
}

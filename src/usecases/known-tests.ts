// Which of the tests a run produced the server has seen on a branch (POST /v1/tests/known,
// `flakehouse run --verify-new` re-runs the others; docs/api.md "Known tests"). The client sends
// fingerprints (sha256 of the test key, docs/contract.md §1), which it computes as the server does.
import { z } from 'zod';
import { BASE_BRANCH_RE } from '../../client/src/contract/pr-schemas.js';
import type { Store } from '../store/client.js';
import { knownTests } from '../store/known-tests.js';

export const MAX_KNOWN_FINGERPRINTS = 20_000;

export const knownTestsRequestSchema = z
  .object({
    /** The branch to look on: the pull request's base branch. */
    branch: z.string().regex(BASE_BRANCH_RE, 'a branch name: letters, digits, and . _ / -'),
    fingerprints: z
      .array(z.string().regex(/^[0-9a-f]{64}$/, 'a fingerprint: 64 lowercase hex characters'))
      .max(MAX_KNOWN_FINGERPRINTS, `at most ${MAX_KNOWN_FINGERPRINTS} fingerprints per request`),
  })
  .meta({ id: 'KnownTestsRequest' });

export const knownTestsResponseSchema = z
  .object({
    branch: z.string(),
    /** One per distinct fingerprint asked about, in the order first asked. */
    tests: z.array(
      z.object({
        fingerprint: z.string(),
        /** Null when no test of the project has this fingerprint (or an alias of it). */
        testIdentityId: z.string().nullable(),
        /** An execution of the test ran on `branch`. */
        seenOnBranch: z.boolean(),
      }),
    ),
  })
  .meta({ id: 'KnownTests' });

export interface KnownTestsDeps {
  /** The store the API reads through (its request reads). */
  store: Store;
}

export async function knownTestsOnBranch(
  d: KnownTestsDeps,
  projectId: string,
  query: z.output<typeof knownTestsRequestSchema>,
): Promise<z.output<typeof knownTestsResponseSchema>> {
  return { branch: query.branch, tests: await knownTests(d.store, projectId, query.branch, query.fingerprints) };
}

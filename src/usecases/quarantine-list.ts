// The project's quarantined tests with the keys a runner matches on (GET /v1/quarantine; docs/api.md
// "Quarantine list"): what `flakehouse run` and the reporters fetch before a run.
import type { z } from 'zod';
import type { quarantineListSchema } from '../../client/src/contract/quarantine-list.js';
import type { Store } from '../store/client.js';
import { listQuarantined } from '../store/quarantine-list.js';
import type { TestRepo } from '../store/tests.js';

export interface QuarantineListDeps {
  /** The store the API reads through (its request reads). */
  store: Store;
  tests: Pick<TestRepo, 'overrides'>;
}

export async function quarantineList(d: QuarantineListDeps, projectId: string): Promise<z.input<typeof quarantineListSchema>> {
  return { items: await listQuarantined(d, projectId) };
}

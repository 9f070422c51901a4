// The typed repositories processors and exporters use, built over one store: what the
// `clickhouse_storage` extension (src/extensions/clickhouse-storage.ts) hands a component through
// `Host.extensions.repositories` (docs/pipeline.md "Extensions"). Components ask for these, never
// for the Store: the tables, columns and SQL stay in src/store.
import type { Store } from './client.js';
import { ChannelRepo } from './channels.js';
import { IdentityRepo } from './identities.js';
import { ProjectRepo } from './projects.js';
import { RcaRepo } from './rca.js';
import { RollupRepo } from './rollups.js';
import { RunRepo } from './runs.js';
import { SignatureRepo } from './signatures.js';
import { TestRepo } from './tests.js';

export interface Repositories {
  /** Test states, scores and overrides (scoring, quarantine). */
  readonly tests: TestRepo;
  /** Error signatures and their bands (clustering). */
  readonly signatures: SignatureRepo;
  /** Test identities, aliases and stitches (identity; notify and the tracker name a test). */
  readonly identities: IdentityRepo;
  /** Suite history for the rollups' alerts. */
  readonly rollups: RollupRepo;
  /** Runs: the clickhouse exporter's receipts, the tracker's repository. */
  readonly runs: RunRepo;
  /** Root-cause analyses (rca). */
  readonly rca: RcaRepo;
  /** Projects by id and slug (links in notifications and issues). */
  readonly projects: ProjectRepo;
  /** A project's notification channels (notify). */
  readonly channels: ChannelRepo;
}

/**
 * A fresh set for one component: a repository that caches (TestRepo's overrides) caches for that
 * component alone, as when each component built its own.
 */
export function openRepositories(store: Store): Repositories {
  return {
    tests: new TestRepo(store),
    signatures: new SignatureRepo(store),
    identities: new IdentityRepo(store),
    rollups: new RollupRepo(store),
    runs: new RunRepo(store),
    rca: new RcaRepo(store),
    projects: new ProjectRepo(store),
    channels: new ChannelRepo(store),
  };
}

// What the API's operations need, as one object: the composition root builds it once per process
// (src/main/api-deps.ts) and both doors take their part of it, the REST routes (src/api/routes) and
// the procedures (src/api/trpc), so a route and its procedure run the same use case on the same
// repositories.
import type { ArtifactSigner } from '../artifacts/s3.js';
import type { ProjectRepo } from '../store/projects.js';
import type { RcaRepo } from '../store/rca.js';
import type { RunRepo } from '../store/runs.js';
import type { SuiteHealthRepo } from '../store/suite-health.js';
import type { ExecutionDetailDeps } from './execution-detail.js';
import type { FlakyBoardDeps } from './flaky-board.js';
import type { PrCommitDeps } from './pr-commit.js';
import type { ProjectBadgesDeps } from './project-badges.js';
import type { ProjectChannelsDeps } from './project-channels.js';
import type { ProjectHealthDeps } from './project-health.js';
import type { ProjectPolicyDeps } from './project-policy.js';
import type { ProjectSettingsDeps } from './project-settings.js';
import type { ProjectTokensDeps } from './project-tokens.js';
import type { QuarantineDecisionDeps } from './quarantine-decision.js';
import type { TestActivityDeps } from './test-activity.js';
import type { TestPageDeps } from './test-page.js';
import type { TestTrendsDeps } from './test-trends.js';
import type { IdentityRepo } from '../store/identities.js';
import type { BadgeFactsDeps } from './badge-facts.js';
import type { KnownTestsDeps } from './known-tests.js';
import type { QuarantineListDeps } from './quarantine-list.js';
import type { SplitDeps } from './test-splits.js';

export interface UseCaseDeps {
  projects: ProjectRepo;
  runs: RunRepo;
  rca: RcaRepo;
  /** Signs artifact download URLs; null: refs are listed without URLs. */
  artifacts: ArtifactSigner | null;
  /** The flaky board, with the project's CI-minute cost. */
  board: FlakyBoardDeps;
  testPage: TestPageDeps;
  /** A person's quarantine decision (it writes its `quarantine.changed` event to the outbox). */
  decisions: QuarantineDecisionDeps & { identities: Pick<IdentityRepo, 'get'> };
  /** A test's history, quarantine log and clusters; the project's error clusters. */
  activity: TestActivityDeps;
  execution: ExecutionDetailDeps;
  /** A commit's or a pull request's summary, gate and page. */
  prCommit: PrCommitDeps;
  suites: { suiteHealth: Pick<SuiteHealthRepo, 'days'> };
  trends: TestTrendsDeps;
  health: ProjectHealthDeps;
  /** A project's tokens, and what a revocation forgets (the cached principal, the token's sessions). */
  tokens: ProjectTokensDeps;
  policy: ProjectPolicyDeps;
  settings: ProjectSettingsDeps;
  channels: ProjectChannelsDeps;
  badges: ProjectBadgesDeps;
  /** What a README badge shows. */
  badgeFacts: BadgeFactsDeps;
  /** The quarantine list runners fetch before a run. */
  quarantineList: QuarantineListDeps;
  /** Which tests of a run a branch has seen (`flakehouse run --verify-new`). */
  knownTests: KnownTestsDeps;
  /** A build's test shards. */
  splits: SplitDeps;
}

// The API's dependencies, built once per process: every repository the use cases read, and each
// use case's dependency object (src/usecases/deps.ts). The REST routes and the procedures are both
// handed their part of this one object, so neither door builds a repository of its own.
import type { ArtifactSigner } from '../artifacts/s3.js';
import type { AiSettings } from '../config/ai.js';
import type { NotificationSettings } from '../config/integrations.js';
import type { ProjectConfigs } from '../config/resolved-project-config.js';
import type { ServiceConfig } from '../config/service-yml.js';
import type { Outbox } from '../queue/types.js';
import { BadgeFactsRepo } from '../store/badges.js';
import { ChannelRepo } from '../store/channels.js';
import type { Store } from '../store/client.js';
import { ClusterRepo } from '../store/clusters.js';
import { CodeownersRepo } from '../store/codeowners.js';
import { ExecutionRepo } from '../store/executions.js';
import { IdentityRepo } from '../store/identities.js';
import { PrSummaryRepo } from '../store/pr-summary.js';
import type { ProjectRepo } from '../store/projects.js';
import { QuarantineLogRepo } from '../store/quarantine-log.js';
import { RcaRepo } from '../store/rca.js';
import { RunRepo } from '../store/runs.js';
import { SplitTimings } from '../store/split-timings.js';
import { SplitPlanRepo } from '../store/splits.js';
import { SuiteHealthRepo } from '../store/suite-health.js';
import { TestTrendsRepo } from '../store/test-trends.js';
import { TestRepo } from '../store/tests.js';
import { requestReadStore } from '../store/request-read.js';
import type { UseCaseDeps } from '../usecases/deps.js';

export interface ApiDepsInput {
  store: Store;
  projects: ProjectRepo;
  projectConfigs: ProjectConfigs;
  service: ServiceConfig;
  /** Where a person's quarantine decision writes its `quarantine.changed` event. */
  outbox: Pick<Outbox, 'append'>;
  artifacts: ArtifactSigner | null;
  /** What a token revocation forgets besides the row: the cached principal, the token's sessions. */
  onRevoked: (tokenId: string) => void;
  publicApiUrl: string | undefined;
  notifications: NotificationSettings;
  ai: AiSettings | undefined;
}

export interface ApiDeps {
  useCases: UseCaseDeps;
  /** Repositories routes use directly for what is not a shared operation (codeowners upload, channel CRUD). */
  repos: { tests: TestRepo; identities: IdentityRepo; codeowners: CodeownersRepo; channels: ChannelRepo };
}

export function buildApiDeps(i: ApiDepsInput): ApiDeps {
  const { projects, projectConfigs: configs } = i;
  // The API's reads run beside the pipeline's queries and inserts, not behind them (Store.readQuery).
  const store = requestReadStore(i.store);
  const tests = new TestRepo(store);
  const identities = new IdentityRepo(store);
  const codeowners = new CodeownersRepo(store);
  const channels = new ChannelRepo(store);
  const rca = new RcaRepo(store);
  const policyOf = async (projectId: string) => (await configs.get(projectId)).config;
  const useCases: UseCaseDeps = {
    projects,
    runs: new RunRepo(store),
    rca,
    artifacts: i.artifacts,
    board: { tests, codeowners, cost: async (id) => (await policyOf(id)).cost },
    testPage: { tests, identities, codeowners, artifacts: i.artifacts },
    decisions: { tests, identities, outbox: i.outbox },
    activity: { tests, identities, quarantineLog: new QuarantineLogRepo(store), clusters: new ClusterRepo(store) },
    execution: { executions: new ExecutionRepo(store), rca, artifacts: i.artifacts },
    prCommit: { prSummary: new PrSummaryRepo(store), tests, codeowners, minSamples: async (id) => (await policyOf(id)).flaky.minSamples },
    suites: { suiteHealth: new SuiteHealthRepo(store) },
    trends: { trends: new TestTrendsRepo(store), tests, identities },
    health: { store, tests, codeowners, service: i.service, projectConfig: (id) => configs.get(id) },
    tokens: { projects, onRevoked: i.onRevoked },
    policy: { projects, configs, ai: i.ai },
    settings: { projects, configs },
    channels: { channels, notifications: i.notifications },
    badges: { projects, ...(i.publicApiUrl !== undefined ? { publicApiUrl: i.publicApiUrl } : {}) },
    badgeFacts: { facts: new BadgeFactsRepo(store), tests },
    quarantineList: { store, tests },
    knownTests: { store },
    splits: { timings: new SplitTimings(store), plans: new SplitPlanRepo(store) },
  };
  return { useCases, repos: { tests, identities, codeowners, channels } };
}

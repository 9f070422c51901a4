// What the procedures need from the daemon: the repositories and settings the use cases they call
// take (src/usecases), as the REST routes are given them.
import type { ArtifactSigner } from '../../artifacts/s3.js';
import type { AiSettings } from '../../config/ai.js';
import type { NotificationSettings } from '../../config/integrations.js';
import type { ProjectConfigs } from '../../config/resolved-project-config.js';
import type { PipelineGraph } from '../../pipeline/graph.js';
import type { PipelineHandle } from '../../pipeline/runtime.js';
import type { Outbox, Queue } from '../../queue/types.js';
import type { ChannelRepo } from '../../store/channels.js';
import type { Store } from '../../store/client.js';
import type { ProjectRepo } from '../../store/projects.js';
import type { RcaRepo } from '../../store/rca.js';
import type { RunRepo } from '../../store/runs.js';
import type { RateLimiter } from '../rate-limit.js';
import type { RequestCounts } from '../request-counts.js';
import type { AnyRouteDef } from '../route.js';
import type { ProjectHealthDeps } from '../../usecases/project-health.js';
import type { CodeownersRepo } from '../../store/codeowners.js';
import type { IdentityRepo } from '../../store/identities.js';
import type { TestRepo } from '../../store/tests.js';
import type { ProjectTokensDeps } from '../../usecases/project-tokens.js';

export interface TrpcDeps {
  rateLimiter: RateLimiter;
  runs: RunRepo;
  tests: { tests: TestRepo; identities: IdentityRepo; codeowners: CodeownersRepo };
  health: ProjectHealthDeps;
  rca: RcaRepo;
  /** Signs artifact download URLs, as the REST routes do; null: refs without URLs. */
  artifacts: ArtifactSigner | null;
  store: Store;
  projects: ProjectRepo;
  projectConfigs: ProjectConfigs;
  channels: ChannelRepo;
  /** Where a person's quarantine decision writes its `quarantine.changed` event. */
  outbox: Pick<Outbox, 'append'>;
  /** SERVICE_PUBLIC_API_URL: where badge URLs point. */
  publicApiUrl?: string;
  /** The ingest routes (the pipeline page's receivers' side). */
  ingestRoutes: () => readonly Pick<AnyRouteDef, 'method' | 'url'>[];
  /** A project's tokens, and what a revocation forgets (the cached principal, the token's sessions). */
  tokens: ProjectTokensDeps;
  notifications: NotificationSettings;
  /** The instance's AI provider (SERVICE_AI_PROVIDER and its settings); undefined: RCA is off whatever `ai.rca` says. */
  ai: AiSettings | undefined;
  pipeline: { graph: PipelineGraph; runtime: PipelineHandle; queue: Pick<Queue, 'stats' | 'depth' | 'deadJobs'>; requests: RequestCounts };
}

// The canonical batch: what every receiver produces and the worker consumes.
// Timestamps are epoch milliseconds; everything a receiver could not know is filled in
// at the receiver (e.g. "now" for a JUnit case without a timestamp) so that processing a
// queued batch is deterministic and a redelivery writes byte-identical rows.

export const TEST_STATUSES = ['pass', 'fail', 'skip', 'flaky'] as const;
export type TestStatus = (typeof TEST_STATUSES)[number];

export const RUN_STATUSES = ['running', 'passed', 'failed', 'canceled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const CI_PROVIDERS = [
  'github_actions',
  'gitlab_ci',
  'circleci',
  'jenkins',
  'buildkite',
  'azure_pipelines',
  'local',
  'other',
] as const;
export type CiProvider = (typeof CI_PROVIDERS)[number];

export const TRIGGERS = ['push', 'pull_request', 'schedule', 'manual', 'other'] as const;
export type Trigger = (typeof TRIGGERS)[number];

export const SPAN_KINDS = ['step', 'http', 'browser', 'other'] as const;
export type SpanKind = (typeof SPAN_KINDS)[number];

export const SPAN_STATUSES = ['ok', 'error', 'unset'] as const;
export type SpanStatus = (typeof SPAN_STATUSES)[number];

export const CURRENT_CONTRACT_VERSION = '0.1.0';
export const PLACEHOLDER_COMMIT = '0000000';
export const PLACEHOLDER_BRANCH = 'local';

export interface BatchResource {
  ciProvider: CiProvider;
  ciRunId?: string;
  commitSha: string;
  branch: string;
  prNumber?: number;
  trigger: Trigger;
  shardIndex?: number;
  shardTotal?: number;
  repository?: string;
  baseBranch?: string;
  /**
   * Where a pull request's branch forked from its base branch (`git merge-base HEAD origin/<base>`),
   * lowercase hex like `commitSha`: lets evidence be judged by code version. Absent when unknown.
   */
  mergeBase?: string;
  ciJobUrl?: string;
  /**
   * The CI job within the CI run (GitHub's `GITHUB_JOB`, GitLab's `CI_JOB_NAME`, …; over OTLP
   * `cicd.pipeline.task.name`): runs of one commit are re-runs of each other only when they are the
   * same job. Absent from older clients.
   */
  ciJobName?: string;
  /** The job's matrix values, text by key (client/src/contract/ci-job.ts); absent when the job has none or the sender did not say. */
  ciJobMatrix?: Record<string, string>;
}

export interface BatchRun {
  status: RunStatus;
  startedAt: number;
  finishedAt?: number;
  traceId?: string;
  /**
   * OTLP only: the trace may arrive in several requests (an SDK exports spans as they end), so
   * each batch is one part of the run keyed by the trace id. True when this part carries the run
   * span, whose status and times then win over what the parts imply.
   */
  hasRunSpan?: boolean;
  /** OTLP only: `status` was given by the run span (else it is derived from the tests). */
  statusExplicit?: boolean;
  /**
   * JUnit only: this batch is one part of a report split into several jobs (client/src/contract/report-parts.ts);
   * `key` is the report's idempotency key, which names the run every part lands in.
   */
  reportPart?: { key: string; index: number; count: number };
}

export interface ExecutionError {
  type?: string;
  message: string;
  stack?: string;
}

export interface ArtifactRef {
  name: string;
  contentType: string;
  path: string;
  key?: string;
  sizeBytes?: number;
}

export type AttributeValue = string | number | boolean;

export interface ExecutionSpan {
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: SpanKind;
  status: SpanStatus;
  startedAt: number;
  durationMs: number;
  attributes?: Record<string, AttributeValue>;
  error?: ExecutionError;
}

export interface ExecutionInput {
  filePath: string;
  suite: string;
  title: string;
  params?: Record<string, unknown>;
  status: TestStatus;
  attempt: number;
  retryOfIndex?: number;
  startedAt: number;
  durationMs: number;
  error?: ExecutionError;
  artifacts?: ArtifactRef[];
  attributes?: Record<string, AttributeValue>;
  traceId?: string;
  spanId?: string;
  spans?: ExecutionSpan[];
}

export interface IngestBatch {
  contractVersion: string;
  idempotencyKey: string;
  resource: BatchResource;
  run: BatchRun;
  executions: ExecutionInput[];
}

/** Which receiver a batch came through; stored on the run for diagnostics. */
export type IngestSource = 'native' | 'junit' | 'otlp';

export const LIMITS = {
  maxExecutionsPerBatch: 5000,
  /** Test cases (executions, retries included) of one JUnit report; above maxExecutionsPerBatch it is split in parts. */
  maxJUnitExecutions: 100_000,
  maxSpansPerExecution: 500,
  idempotencyKeyMin: 8,
  idempotencyKeyMax: 128,
  bodyBytes: 8 * 1024 * 1024,
  inflatedBytes: 16 * 1024 * 1024,
} as const;

/** Run status derived from final execution statuses (JUnit, OTLP): failed if any test failed. */
export function deriveRunStatus(executions: readonly Pick<ExecutionInput, 'status'>[]): RunStatus {
  return executions.some((e) => e.status === 'fail') ? 'failed' : 'passed';
}

// Pure decisions about one run before it is sent: its resource (CI detection, then the
// SERVICE_COMMIT_SHA / SERVICE_BRANCH fallbacks, then placeholders; the merge base the caller found),
// its idempotency key, and whether sampling lets a passing run through.
import { createHash } from 'node:crypto';
import { PLACEHOLDER_BRANCH, PLACEHOLDER_COMMIT, type BatchResource, type ExecutionInput } from '../contract/batch.js';
import type { CiDetection } from './ci-detect.js';

export interface ResourceInputs {
  ci: CiDetection;
  /** SERVICE_COMMIT_SHA / SERVICE_BRANCH. */
  commitSha?: string;
  branch?: string;
  shard?: { index: number; total: number };
  /** The PR's merge base: SERVICE_MERGE_BASE, else what git said (client/src/reporter/merge-base.ts). */
  mergeBase?: string;
  /** SERVICE_CI_RUN_ID: the CI run when detection found none. */
  ciRunId?: string;
  /** SERVICE_CI_JOB_NAME: names the job instead of the CI (two runners reporting from one CI job). */
  ciJobName?: string;
  /** SERVICE_CI_JOB_MATRIX: the job's matrix values (no CI exposes them in the environment). */
  ciJobMatrix?: Record<string, string>;
  /** What the caller knows better than detection (a runner reporter's overrides). */
  overrides?: Partial<BatchResource>;
}

export function resolveResource(inputs: ResourceInputs): { resource: BatchResource; warnings: string[] } {
  const { ci, overrides = {} } = inputs;
  const warnings: string[] = [];
  const commitSha = overrides.commitSha ?? ci.commitSha ?? inputs.commitSha;
  const branch = overrides.branch ?? ci.branch ?? inputs.branch;
  const where = ci.provider === 'local' ? 'no CI system was recognised' : `${ci.provider} did not provide one`;
  if (commitSha === undefined) {
    warnings.push(
      `no commit sha (${where}) and SERVICE_COMMIT_SHA is unset: this run is filed under the placeholder commit ${PLACEHOLDER_COMMIT}. ` +
        'Every run without a commit looks like the same commit to the scorer, so same-commit evidence of flakiness is lost ' +
        'and PR summaries and gates cannot find this run. Set SERVICE_COMMIT_SHA (e.g. to `git rev-parse HEAD`).',
    );
  }
  if (branch === undefined) {
    warnings.push(
      `no branch (${where}) and SERVICE_BRANCH is unset: this run is filed under the branch "${PLACEHOLDER_BRANCH}", ` +
        'so it does not count as history of your main branch. Set SERVICE_BRANCH.',
    );
  }
  const resource: BatchResource = {
    ciProvider: ci.provider,
    commitSha: commitSha ?? PLACEHOLDER_COMMIT,
    branch: branch ?? PLACEHOLDER_BRANCH,
    trigger: ci.trigger,
  };
  const ciRunId = ci.runId ?? inputs.ciRunId;
  if (ciRunId !== undefined) resource.ciRunId = ciRunId;
  if (ci.prNumber !== undefined) resource.prNumber = ci.prNumber;
  if (ci.baseBranch !== undefined) resource.baseBranch = ci.baseBranch;
  if (inputs.mergeBase !== undefined) resource.mergeBase = inputs.mergeBase;
  if (ci.jobUrl !== undefined) resource.ciJobUrl = ci.jobUrl;
  if (ci.repository !== undefined) resource.repository = ci.repository;
  const ciJobName = inputs.ciJobName ?? ci.jobName;
  if (ciJobName !== undefined) resource.ciJobName = ciJobName;
  if (inputs.ciJobMatrix !== undefined) resource.ciJobMatrix = inputs.ciJobMatrix;
  if (inputs.shard) {
    resource.shardIndex = inputs.shard.index;
    resource.shardTotal = inputs.shard.total;
  }
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) (resource as unknown as Record<string, unknown>)[k] = v;
  return { resource, warnings };
}

/** SERVICE_IDEMPOTENCY_KEY else the trace id; a shard adds `-shard<index>` so shards stay apart. */
export function idempotencyKeyFor(base: string, shard: { index: number } | undefined): string {
  return shard ? `${base}-shard${shard.index}` : base;
}

/** A run with no failure and no flake: the only kind sampling may drop. */
export function isPassingRun(executions: readonly Pick<ExecutionInput, 'status'>[]): boolean {
  return executions.every((e) => e.status === 'pass' || e.status === 'skip');
}

/**
 * Whether sampling lets this run through. Failing and flaky runs always pass. The draw is a hash
 * of `sampleKey` (the CI run id when known) rather than a coin toss, so every shard of one CI run
 * decides alike and a run is never half-delivered.
 */
export function sampledIn(executions: readonly Pick<ExecutionInput, 'status'>[], rate: number, sampleKey: string): boolean {
  if (rate >= 1 || !isPassingRun(executions)) return true;
  if (rate <= 0) return false;
  const draw = createHash('sha256').update(sampleKey).digest().readUInt32BE(0) / 0x1_0000_0000;
  return draw < rate;
}

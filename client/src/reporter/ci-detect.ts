// Which CI system is running us and what it says about the run: pure, from the environment
// (plus, on GitHub Actions, the event payload the caller read from GITHUB_EVENT_PATH, since that
// is the only place a pull request's head commit is given).
import type { CiProvider, Trigger } from '../contract/batch.js';

export interface CiDetection {
  provider: CiProvider;
  /** Lowercase hex, 7..40 chars; absent when the CI gave none or an unusable one. */
  commitSha?: string;
  branch?: string;
  baseBranch?: string;
  prNumber?: number;
  runId?: string;
  jobUrl?: string;
  trigger: Trigger;
  /** `owner/name` when the CI names it. */
  repository?: string;
  /**
   * The job within the CI run (GitHub's job id, GitLab's job name, …): two jobs of one commit are
   * two jobs, not a job and its re-run. Matrix values are the caller's (SERVICE_CI_JOB_MATRIX):
   * only GitLab's parallel:matrix and Azure's matrix legs put them in the name.
   */
  jobName?: string;
}

export interface CiDetectInputs {
  /** The parsed JSON of `$GITHUB_EVENT_PATH`, when on GitHub Actions and readable. */
  githubEvent?: unknown;
}

const SHA_RE = /^[0-9a-f]{7,40}$/i;

/** Detects GitHub Actions, GitLab CI, CircleCI, Jenkins, Buildkite and Azure Pipelines; else `local`. */
export function detectCi(env: NodeJS.ProcessEnv, inputs: CiDetectInputs = {}): CiDetection {
  const v = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw ? raw : undefined;
  };
  if (v('GITHUB_ACTIONS') === 'true') return github(v, inputs.githubEvent);
  if (v('GITLAB_CI')) return gitlab(v);
  if (v('CIRCLECI')) return circleci(v);
  if (v('BUILDKITE') === 'true') return buildkite(v);
  if (v('TF_BUILD')?.toLowerCase() === 'true') return azure(v);
  // Jenkins last: its variables are generic enough to leak into agents running other tools.
  if (v('JENKINS_URL') && (v('BUILD_URL') || v('BUILD_ID'))) return jenkins(v);
  return { provider: 'local', trigger: 'other' };
}

type Var = (name: string) => string | undefined;

function github(v: Var, event: unknown): CiDetection {
  const eventName = v('GITHUB_EVENT_NAME');
  const pr = isRecord(event) && isRecord(event.pull_request) ? event.pull_request : undefined;
  const prHead = pr && isRecord(pr.head) ? pr.head : undefined;
  // GITHUB_SHA of a pull_request event is the synthetic merge commit; the head is what people pushed.
  const commitSha = sha(typeof prHead?.sha === 'string' ? prHead.sha : undefined) ?? sha(v('GITHUB_SHA'));
  const prNumber =
    (pr && typeof pr.number === 'number' ? positiveInt(String(pr.number)) : undefined) ?? positiveInt(/^refs\/pull\/(\d+)\//.exec(v('GITHUB_REF') ?? '')?.[1]);
  const server = v('GITHUB_SERVER_URL') ?? 'https://github.com';
  const repository = v('GITHUB_REPOSITORY');
  const runId = v('GITHUB_RUN_ID');
  const attempt = v('GITHUB_RUN_ATTEMPT');
  return compact({
    provider: 'github_actions',
    commitSha,
    // GITHUB_HEAD_REF is set only for pull request events; GITHUB_REF_NAME of those is `123/merge`.
    branch: v('GITHUB_HEAD_REF') ?? v('GITHUB_REF_NAME') ?? stripRef(v('GITHUB_REF')),
    baseBranch: v('GITHUB_BASE_REF'),
    prNumber,
    runId,
    jobUrl: repository && runId ? `${server}/${repository}/actions/runs/${runId}${attempt && attempt !== '1' ? `/attempts/${attempt}` : ''}` : undefined,
    trigger: mapTrigger(eventName, {
      push: 'push',
      pull_request: 'pull_request',
      pull_request_target: 'pull_request',
      merge_group: 'pull_request',
      schedule: 'schedule',
      workflow_dispatch: 'manual',
      repository_dispatch: 'manual',
    }),
    repository: ownerName(repository),
    // The job's id in the workflow file; every leg of a matrix shares it (GitHub exposes no matrix values).
    jobName: v('GITHUB_JOB'),
  });
}

function gitlab(v: Var): CiDetection {
  const mr = positiveInt(v('CI_MERGE_REQUEST_IID'));
  return compact({
    provider: 'gitlab_ci',
    // Merged-results pipelines run on a merge commit; the source branch head is the change itself.
    commitSha: sha(v('CI_MERGE_REQUEST_SOURCE_BRANCH_SHA')) ?? sha(v('CI_COMMIT_SHA')),
    branch: v('CI_MERGE_REQUEST_SOURCE_BRANCH_NAME') ?? v('CI_COMMIT_BRANCH') ?? v('CI_COMMIT_REF_NAME'),
    baseBranch: v('CI_MERGE_REQUEST_TARGET_BRANCH_NAME'),
    prNumber: mr,
    runId: v('CI_PIPELINE_ID'),
    jobUrl: v('CI_JOB_URL') ?? v('CI_PIPELINE_URL'),
    trigger: mapTrigger(v('CI_PIPELINE_SOURCE'), {
      push: 'push',
      merge_request_event: 'pull_request',
      external_pull_request_event: 'pull_request',
      schedule: 'schedule',
      web: 'manual',
      api: 'manual',
      trigger: 'manual',
      pipeline: 'manual',
      chat: 'manual',
    }),
    repository: ownerName(v('CI_PROJECT_PATH')),
    // parallel:matrix jobs carry their values in the name: `test: [node, 20]`.
    jobName: v('CI_JOB_NAME'),
  });
}

function circleci(v: Var): CiDetection {
  const prNumber = positiveInt(v('CIRCLE_PR_NUMBER')) ?? positiveInt(/\/pull\/(\d+)/.exec(v('CIRCLE_PULL_REQUEST') ?? '')?.[1]);
  const user = v('CIRCLE_PROJECT_USERNAME');
  const repo = v('CIRCLE_PROJECT_REPONAME');
  return compact({
    provider: 'circleci',
    commitSha: sha(v('CIRCLE_SHA1')),
    branch: v('CIRCLE_BRANCH'),
    prNumber,
    // The workflow is the run; a build number names one job of it.
    runId: v('CIRCLE_WORKFLOW_ID') ?? v('CIRCLE_BUILD_NUM'),
    jobUrl: v('CIRCLE_BUILD_URL'),
    trigger: prNumber !== undefined ? 'pull_request' : v('CIRCLE_BRANCH') ? 'push' : 'other',
    repository: user && repo ? ownerName(`${user}/${repo}`) : undefined,
    jobName: v('CIRCLE_JOB'),
  });
}

function buildkite(v: Var): CiDetection {
  const prNumber = positiveInt(v('BUILDKITE_PULL_REQUEST'));
  const source = v('BUILDKITE_SOURCE');
  return compact({
    provider: 'buildkite',
    // BUILDKITE_COMMIT may be the literal `HEAD` on builds started from the UI; sha() drops it.
    commitSha: sha(v('BUILDKITE_COMMIT')),
    branch: v('BUILDKITE_BRANCH'),
    baseBranch: prNumber !== undefined ? v('BUILDKITE_PULL_REQUEST_BASE_BRANCH') : undefined,
    prNumber,
    runId: v('BUILDKITE_BUILD_ID'),
    jobUrl: v('BUILDKITE_BUILD_URL') ? `${v('BUILDKITE_BUILD_URL')}${v('BUILDKITE_JOB_ID') ? `#${v('BUILDKITE_JOB_ID')}` : ''}` : undefined,
    trigger:
      prNumber !== undefined
        ? 'pull_request'
        : mapTrigger(source, { webhook: 'push', schedule: 'schedule', ui: 'manual', api: 'manual', trigger_job: 'manual' }),
    repository: repositoryFromUrl(v('BUILDKITE_REPO')),
    // The step's label (matrix values interpolated into it), else its key.
    jobName: v('BUILDKITE_LABEL') ?? v('BUILDKITE_STEP_KEY'),
  });
}

function azure(v: Var): CiDetection {
  const prNumber = positiveInt(v('SYSTEM_PULLREQUEST_PULLREQUESTNUMBER')) ?? positiveInt(v('SYSTEM_PULLREQUEST_PULLREQUESTID'));
  const collection = v('SYSTEM_COLLECTIONURI');
  const project = v('SYSTEM_TEAMPROJECT');
  const buildId = v('BUILD_BUILDID');
  return compact({
    provider: 'azure_pipelines',
    commitSha: sha(v('SYSTEM_PULLREQUEST_SOURCECOMMITID')) ?? sha(v('BUILD_SOURCEVERSION')),
    branch: stripRef(v('SYSTEM_PULLREQUEST_SOURCEBRANCH')) ?? stripRef(v('BUILD_SOURCEBRANCH')) ?? v('BUILD_SOURCEBRANCHNAME'),
    baseBranch: stripRef(v('SYSTEM_PULLREQUEST_TARGETBRANCH')),
    prNumber,
    runId: buildId,
    jobUrl:
      collection && project && buildId
        ? `${collection.replace(/\/*$/, '/')}${encodeURIComponent(project)}/_build/results?buildId=${encodeURIComponent(buildId)}`
        : undefined,
    trigger: mapTrigger(v('BUILD_REASON'), {
      IndividualCI: 'push',
      BatchedCI: 'push',
      PullRequest: 'pull_request',
      Schedule: 'schedule',
      Manual: 'manual',
    }),
    // Only GitHub-hosted repositories are named owner/name; Azure Repos names are bare.
    repository: ownerName(v('BUILD_REPOSITORY_NAME')),
    // The display name carries a matrix leg's name (`Test linux_node20`).
    jobName: v('SYSTEM_JOBDISPLAYNAME') ?? v('SYSTEM_JOBNAME'),
  });
}

function jenkins(v: Var): CiDetection {
  const prNumber = positiveInt(v('CHANGE_ID'));
  return compact({
    provider: 'jenkins',
    commitSha: sha(v('GIT_COMMIT')),
    // Multibranch pipelines: CHANGE_BRANCH is the PR's source; GIT_BRANCH is `origin/main` style.
    branch: v('CHANGE_BRANCH') ?? v('BRANCH_NAME') ?? v('GIT_BRANCH')?.replace(/^(?:refs\/heads\/|origin\/)/, ''),
    baseBranch: v('CHANGE_TARGET'),
    prNumber,
    runId: v('BUILD_TAG') ?? v('BUILD_ID'),
    jobUrl: v('BUILD_URL'),
    trigger: prNumber !== undefined ? 'pull_request' : 'push',
    repository: repositoryFromUrl(v('GIT_URL')),
    jobName: jenkinsJob(v('JOB_NAME'), v('STAGE_NAME')),
  });
}

/**
 * JOB_NAME is the Jenkins job (a whole pipeline); STAGE_NAME the stage the step runs in. Two stages
 * of one pipeline that both report are two jobs, and two pipelines may both have a `Test` stage.
 */
function jenkinsJob(job: string | undefined, stage: string | undefined): string | undefined {
  if (job !== undefined && stage !== undefined) return `${job} › ${stage}`;
  return job ?? stage;
}

// ---------------------------------------------------------------------------------------------

function mapTrigger(value: string | undefined, table: Record<string, Trigger>): Trigger {
  return value !== undefined && Object.hasOwn(table, value) ? table[value]! : 'other';
}

function sha(value: string | undefined): string | undefined {
  return value !== undefined && SHA_RE.test(value) ? value.toLowerCase() : undefined;
}

function positiveInt(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function stripRef(ref: string | undefined): string | undefined {
  if (ref === undefined) return undefined;
  const name = ref.replace(/^refs\/heads\//, '');
  // refs/pull/… and refs/tags/… are not branches.
  return name.startsWith('refs/') || name === '' ? undefined : name;
}

const OWNER_NAME = /^[^/\s]+\/[^/\s]+$/;

function ownerName(value: string | undefined): string | undefined {
  return value !== undefined && OWNER_NAME.test(value) ? value : undefined;
}

/** `https://host/owner/name(.git)` or `git@host:owner/name.git` → `owner/name`. */
function repositoryFromUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const scp = /^[\w.-]+@[\w.-]+:(.+)$/.exec(url);
  let p: string | undefined;
  if (scp) p = scp[1];
  else if (URL.canParse(url)) p = new URL(url).pathname;
  if (p === undefined) return undefined;
  const segs = p.replace(/\.git\/?$/, '').split('/').filter(Boolean);
  return segs.length >= 2 ? ownerName(`${segs[segs.length - 2]!}/${segs[segs.length - 1]!}`) : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Drops undefined fields, so results compare and print cleanly. */
function compact(d: CiDetection): CiDetection {
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(d)) if (val !== undefined) out[k] = val;
  return out as unknown as CiDetection;
}

// CI detection from environment fixtures of each supported CI system (variables as the systems
// document them), and the resource the reporter builds from it.
import { describe, expect, it } from 'vitest';
import { detectCi } from '../../client/src/reporter/ci-detect.js';
import { idempotencyKeyFor, isPassingRun, resolveResource, sampledIn } from '../../client/src/reporter/run-context.js';

const SHA = '3f2c1ab9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3';
const HEAD = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';

describe('detectCi', () => {
  it('GitHub Actions push', () => {
    const env = {
      GITHUB_ACTIONS: 'true',
      GITHUB_SHA: SHA,
      GITHUB_REF: 'refs/heads/main',
      GITHUB_REF_NAME: 'main',
      GITHUB_EVENT_NAME: 'push',
      GITHUB_RUN_ID: '9876543210',
      GITHUB_RUN_ATTEMPT: '1',
      GITHUB_REPOSITORY: 'acme/shop',
      GITHUB_SERVER_URL: 'https://github.com',
    };
    expect(detectCi(env)).toEqual({
      provider: 'github_actions',
      commitSha: SHA,
      branch: 'main',
      runId: '9876543210',
      jobUrl: 'https://github.com/acme/shop/actions/runs/9876543210',
      trigger: 'push',
      repository: 'acme/shop',
    });
  });

  it('GitHub Actions pull request: head commit from the event payload, PR number, head and base branch', () => {
    const env = {
      GITHUB_ACTIONS: 'true',
      GITHUB_SHA: SHA, // the synthetic merge commit
      GITHUB_REF: 'refs/pull/42/merge',
      GITHUB_REF_NAME: '42/merge',
      GITHUB_HEAD_REF: 'feature/cart',
      GITHUB_BASE_REF: 'main',
      GITHUB_EVENT_NAME: 'pull_request',
      GITHUB_RUN_ID: '555',
      GITHUB_RUN_ATTEMPT: '2',
      GITHUB_REPOSITORY: 'acme/shop',
    };
    const event = { pull_request: { number: 42, head: { sha: HEAD.toUpperCase() } } };
    expect(detectCi(env, { githubEvent: event })).toEqual({
      provider: 'github_actions',
      commitSha: HEAD,
      branch: 'feature/cart',
      baseBranch: 'main',
      prNumber: 42,
      runId: '555',
      jobUrl: 'https://github.com/acme/shop/actions/runs/555/attempts/2',
      trigger: 'pull_request',
      repository: 'acme/shop',
    });
    // Without the payload: the merge commit, and the PR number from the ref.
    const bare = detectCi(env);
    expect(bare.commitSha).toBe(SHA);
    expect(bare.prNumber).toBe(42);
  });

  it('GitHub Actions schedule and workflow_dispatch triggers', () => {
    expect(detectCi({ GITHUB_ACTIONS: 'true', GITHUB_EVENT_NAME: 'schedule' }).trigger).toBe('schedule');
    expect(detectCi({ GITHUB_ACTIONS: 'true', GITHUB_EVENT_NAME: 'workflow_dispatch' }).trigger).toBe('manual');
    expect(detectCi({ GITHUB_ACTIONS: 'true', GITHUB_EVENT_NAME: 'release' }).trigger).toBe('other');
  });

  it('GitLab CI merge request pipeline', () => {
    const env = {
      GITLAB_CI: 'true',
      CI_COMMIT_SHA: SHA,
      CI_MERGE_REQUEST_SOURCE_BRANCH_SHA: HEAD,
      CI_COMMIT_REF_NAME: 'feature/cart',
      CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: 'feature/cart',
      CI_MERGE_REQUEST_TARGET_BRANCH_NAME: 'main',
      CI_MERGE_REQUEST_IID: '17',
      CI_PIPELINE_ID: '1000001',
      CI_JOB_URL: 'https://gitlab.com/acme/shop/-/jobs/2000002',
      CI_PIPELINE_SOURCE: 'merge_request_event',
      CI_PROJECT_PATH: 'acme/shop',
    };
    expect(detectCi(env)).toEqual({
      provider: 'gitlab_ci',
      commitSha: HEAD,
      branch: 'feature/cart',
      baseBranch: 'main',
      prNumber: 17,
      runId: '1000001',
      jobUrl: 'https://gitlab.com/acme/shop/-/jobs/2000002',
      trigger: 'pull_request',
      repository: 'acme/shop',
    });
  });

  it('GitLab CI branch pipeline; nested group paths are not owner/name', () => {
    const d = detectCi({ GITLAB_CI: 'true', CI_COMMIT_SHA: SHA, CI_COMMIT_BRANCH: 'main', CI_PIPELINE_SOURCE: 'schedule', CI_PROJECT_PATH: 'acme/web/shop' });
    expect(d).toMatchObject({ provider: 'gitlab_ci', commitSha: SHA, branch: 'main', trigger: 'schedule' });
    expect(d.repository).toBeUndefined();
    expect(d.prNumber).toBeUndefined();
  });

  it('CircleCI', () => {
    const env = {
      CIRCLECI: 'true',
      CIRCLE_SHA1: SHA,
      CIRCLE_BRANCH: 'feature/cart',
      CIRCLE_PULL_REQUEST: 'https://github.com/acme/shop/pull/88',
      CIRCLE_WORKFLOW_ID: '6f1d-uuid',
      CIRCLE_BUILD_NUM: '321',
      CIRCLE_BUILD_URL: 'https://circleci.com/gh/acme/shop/321',
      CIRCLE_PROJECT_USERNAME: 'acme',
      CIRCLE_PROJECT_REPONAME: 'shop',
    };
    expect(detectCi(env)).toEqual({
      provider: 'circleci',
      commitSha: SHA,
      branch: 'feature/cart',
      prNumber: 88,
      runId: '6f1d-uuid',
      jobUrl: 'https://circleci.com/gh/acme/shop/321',
      trigger: 'pull_request',
      repository: 'acme/shop',
    });
    expect(detectCi({ CIRCLECI: 'true', CIRCLE_SHA1: SHA, CIRCLE_BRANCH: 'main' }).trigger).toBe('push');
  });

  it('Jenkins multibranch pull request', () => {
    const env = {
      JENKINS_URL: 'https://ci.acme.dev/',
      BUILD_URL: 'https://ci.acme.dev/job/shop/job/PR-12/3/',
      BUILD_ID: '3',
      BUILD_TAG: 'jenkins-shop-PR-12-3',
      GIT_COMMIT: SHA,
      BRANCH_NAME: 'PR-12',
      CHANGE_ID: '12',
      CHANGE_BRANCH: 'feature/cart',
      CHANGE_TARGET: 'main',
      GIT_URL: 'git@github.com:acme/shop.git',
    };
    expect(detectCi(env)).toEqual({
      provider: 'jenkins',
      commitSha: SHA,
      branch: 'feature/cart',
      baseBranch: 'main',
      prNumber: 12,
      runId: 'jenkins-shop-PR-12-3',
      jobUrl: 'https://ci.acme.dev/job/shop/job/PR-12/3/',
      trigger: 'pull_request',
      repository: 'acme/shop',
    });
  });

  it('Jenkins freestyle: GIT_BRANCH loses its remote prefix', () => {
    const d = detectCi({ JENKINS_URL: 'https://ci/', BUILD_ID: '9', GIT_COMMIT: SHA, GIT_BRANCH: 'origin/main' });
    expect(d).toMatchObject({ provider: 'jenkins', branch: 'main', trigger: 'push', runId: '9' });
  });

  it('Buildkite pull request; a HEAD commit is no commit', () => {
    const env = {
      BUILDKITE: 'true',
      BUILDKITE_COMMIT: SHA,
      BUILDKITE_BRANCH: 'feature/cart',
      BUILDKITE_PULL_REQUEST: '7',
      BUILDKITE_PULL_REQUEST_BASE_BRANCH: 'main',
      BUILDKITE_BUILD_ID: '0190-build-uuid',
      BUILDKITE_BUILD_URL: 'https://buildkite.com/acme/shop/builds/55',
      BUILDKITE_JOB_ID: '0190-job-uuid',
      BUILDKITE_SOURCE: 'webhook',
      BUILDKITE_REPO: 'https://github.com/acme/shop.git',
    };
    expect(detectCi(env)).toEqual({
      provider: 'buildkite',
      commitSha: SHA,
      branch: 'feature/cart',
      baseBranch: 'main',
      prNumber: 7,
      runId: '0190-build-uuid',
      jobUrl: 'https://buildkite.com/acme/shop/builds/55#0190-job-uuid',
      trigger: 'pull_request',
      repository: 'acme/shop',
    });
    const ui = detectCi({ BUILDKITE: 'true', BUILDKITE_COMMIT: 'HEAD', BUILDKITE_BRANCH: 'main', BUILDKITE_PULL_REQUEST: 'false', BUILDKITE_SOURCE: 'ui' });
    expect(ui.commitSha).toBeUndefined();
    expect(ui.prNumber).toBeUndefined();
    expect(ui.trigger).toBe('manual');
  });

  it('Azure Pipelines pull request and CI build', () => {
    const pr = {
      TF_BUILD: 'True',
      BUILD_SOURCEVERSION: SHA,
      SYSTEM_PULLREQUEST_SOURCECOMMITID: HEAD,
      BUILD_SOURCEBRANCH: 'refs/pull/31/merge',
      SYSTEM_PULLREQUEST_SOURCEBRANCH: 'refs/heads/feature/cart',
      SYSTEM_PULLREQUEST_TARGETBRANCH: 'refs/heads/main',
      SYSTEM_PULLREQUEST_PULLREQUESTNUMBER: '31',
      BUILD_BUILDID: '4242',
      SYSTEM_COLLECTIONURI: 'https://dev.azure.com/acme/',
      SYSTEM_TEAMPROJECT: 'Shop Web',
      BUILD_REASON: 'PullRequest',
      BUILD_REPOSITORY_NAME: 'acme/shop',
    };
    expect(detectCi(pr)).toEqual({
      provider: 'azure_pipelines',
      commitSha: HEAD,
      branch: 'feature/cart',
      baseBranch: 'main',
      prNumber: 31,
      runId: '4242',
      jobUrl: 'https://dev.azure.com/acme/Shop%20Web/_build/results?buildId=4242',
      trigger: 'pull_request',
      repository: 'acme/shop',
    });
    const ci = detectCi({ TF_BUILD: 'True', BUILD_SOURCEVERSION: SHA, BUILD_SOURCEBRANCH: 'refs/heads/main', BUILD_REASON: 'IndividualCI', BUILD_REPOSITORY_NAME: 'shop' });
    expect(ci).toMatchObject({ provider: 'azure_pipelines', commitSha: SHA, branch: 'main', trigger: 'push' });
    expect(ci.repository).toBeUndefined();
  });

  it('no CI: local, nothing detected', () => {
    expect(detectCi({ HOME: '/home/me', PATH: '/usr/bin' })).toEqual({ provider: 'local', trigger: 'other' });
    // A stray JENKINS_URL without a build is not a Jenkins build.
    expect(detectCi({ JENKINS_URL: 'https://ci/' }).provider).toBe('local');
  });

  it('an invalid sha from CI is dropped, not sent', () => {
    expect(detectCi({ GITHUB_ACTIONS: 'true', GITHUB_SHA: 'not-a-sha' }).commitSha).toBeUndefined();
  });
});

describe('resolveResource', () => {
  it('CI detection wins over SERVICE_COMMIT_SHA / SERVICE_BRANCH, which fill gaps', () => {
    const ci = detectCi({ GITLAB_CI: 'true', CI_COMMIT_SHA: SHA, CI_PIPELINE_SOURCE: 'push' });
    const { resource, warnings } = resolveResource({ ci, commitSha: HEAD, branch: 'release' });
    expect(resource).toMatchObject({ ciProvider: 'gitlab_ci', commitSha: SHA, branch: 'release', trigger: 'push' });
    expect(warnings).toEqual([]);
  });

  it('without any commit or branch: placeholders and warnings that say why it matters', () => {
    const { resource, warnings } = resolveResource({ ci: detectCi({}) });
    expect(resource).toEqual({ ciProvider: 'local', commitSha: '0000000', branch: 'local', trigger: 'other' });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('no CI system was recognised');
    expect(warnings[0]).toContain('SERVICE_COMMIT_SHA');
    expect(warnings[0]).toContain('0000000');
    expect(warnings[0]).toContain('same commit');
    expect(warnings[1]).toContain('SERVICE_BRANCH');
    expect(warnings[1]).toContain('"local"');
  });

  it('shards and caller overrides', () => {
    const { resource } = resolveResource({
      ci: detectCi({}),
      commitSha: SHA,
      branch: 'main',
      shard: { index: 2, total: 4 },
      overrides: { trigger: 'manual', repository: 'acme/shop' },
    });
    expect(resource).toMatchObject({ shardIndex: 2, shardTotal: 4, trigger: 'manual', repository: 'acme/shop', commitSha: SHA });
  });
});

describe('idempotency key and sampling', () => {
  it('shard suffix', () => {
    expect(idempotencyKeyFor('ci-run-4711', undefined)).toBe('ci-run-4711');
    expect(idempotencyKeyFor('ci-run-4711', { index: 3 })).toBe('ci-run-4711-shard3');
  });

  it('drops only passing runs, decides alike for the same key, and follows the rate', () => {
    const pass = [{ status: 'pass' as const }, { status: 'skip' as const }];
    const failing = [{ status: 'pass' as const }, { status: 'fail' as const }];
    const flaky = [{ status: 'flaky' as const }];
    expect(isPassingRun(pass)).toBe(true);
    expect(isPassingRun(failing)).toBe(false);
    expect(sampledIn(pass, 0, 'k')).toBe(false);
    expect(sampledIn(failing, 0, 'k')).toBe(true);
    expect(sampledIn(flaky, 0, 'k')).toBe(true);
    expect(sampledIn(pass, 1, 'k')).toBe(true);
    const keys = Array.from({ length: 2000 }, (_, i) => `run-${i}`);
    const kept = keys.filter((k) => sampledIn(pass, 0.25, k)).length;
    expect(kept).toBeGreaterThan(400);
    expect(kept).toBeLessThan(600);
    for (const k of keys.slice(0, 50)) expect(sampledIn(pass, 0.25, k)).toBe(sampledIn(pass, 0.25, k));
  });
});

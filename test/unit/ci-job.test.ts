// The CI job a run belongs to (issue 39, defect 3): its name from each CI system's variables, its
// matrix values given explicitly (GitHub exposes none in the environment), carried in the run's
// resource by the reporter, over OTLP as `cicd.pipeline.task.name`, and the matrix's stored form.
import { describe, expect, it } from 'vitest';
import { jobMatrixFrom, jobMatrixText, parseJobMatrixText } from '../../client/src/contract/ci-job.js';
import { decodeOtlpJson } from '../../src/receivers/otlp/decode.js';
import { mapOtlpToBatches } from '../../src/receivers/otlp/map.js';
import { nativeBatchSchema } from '../../src/receivers/native/schema.js';
import { detectCi } from '../../client/src/reporter/ci-detect.js';
import { resourceAttributes } from '../../client/src/contract/otlp-encode.js';
import { resolveResource } from '../../client/src/reporter/run-context.js';
import { loadReporterSettings } from '../../client/src/reporter/settings.js';

const SHA = '3f2c1ab9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3';

describe('detectCi: the job name', () => {
  it('GitHub Actions: GITHUB_JOB (the job id of the workflow)', () => {
    expect(detectCi({ GITHUB_ACTIONS: 'true', GITHUB_SHA: SHA, GITHUB_JOB: 'unit-tests' }).jobName).toBe('unit-tests');
  });

  it('GitLab CI: CI_JOB_NAME, parallel:matrix values included', () => {
    expect(detectCi({ GITLAB_CI: 'true', CI_COMMIT_SHA: SHA, CI_JOB_NAME: 'test: [node, 20]' }).jobName).toBe('test: [node, 20]');
  });

  it('Buildkite: BUILDKITE_LABEL, else BUILDKITE_STEP_KEY', () => {
    expect(detectCi({ BUILDKITE: 'true', BUILDKITE_LABEL: ':jest: Unit', BUILDKITE_STEP_KEY: 'unit' }).jobName).toBe(':jest: Unit');
    expect(detectCi({ BUILDKITE: 'true', BUILDKITE_STEP_KEY: 'unit' }).jobName).toBe('unit');
  });

  it('CircleCI: CIRCLE_JOB', () => {
    expect(detectCi({ CIRCLECI: 'true', CIRCLE_SHA1: SHA, CIRCLE_JOB: 'test-e2e' }).jobName).toBe('test-e2e');
  });

  it('Jenkins: JOB_NAME and STAGE_NAME (two stages of one pipeline are two jobs)', () => {
    const base = { JENKINS_URL: 'https://ci.example.com/', BUILD_ID: '12', GIT_COMMIT: SHA };
    expect(detectCi({ ...base, JOB_NAME: 'shop/main', STAGE_NAME: 'Unit' }).jobName).toBe('shop/main › Unit');
    expect(detectCi({ ...base, JOB_NAME: 'shop-unit' }).jobName).toBe('shop-unit');
    expect(detectCi({ ...base, STAGE_NAME: 'Unit' }).jobName).toBe('Unit');
  });

  it('Azure Pipelines: SYSTEM_JOBDISPLAYNAME, else SYSTEM_JOBNAME', () => {
    const base = { TF_BUILD: 'True', BUILD_SOURCEVERSION: SHA };
    expect(detectCi({ ...base, SYSTEM_JOBDISPLAYNAME: 'Test linux_node20', SYSTEM_JOBNAME: 'linux_node20' }).jobName).toBe('Test linux_node20');
    expect(detectCi({ ...base, SYSTEM_JOBNAME: 'Job' }).jobName).toBe('Job');
  });

  it('no job variable, or no CI: no job name', () => {
    expect(detectCi({ GITHUB_ACTIONS: 'true', GITHUB_SHA: SHA })).not.toHaveProperty('jobName');
    expect(detectCi({ GITHUB_JOB: 'leaked' })).not.toHaveProperty('jobName');
  });
});

describe('the job matrix', () => {
  it('scalars become text, keys are sorted, nested values stay JSON; empty or null is no matrix', () => {
    expect(jobMatrixFrom({ os: 'ubuntu', node: 20, coverage: true })).toEqual({ coverage: 'true', node: '20', os: 'ubuntu' });
    expect(Object.keys(jobMatrixFrom({ os: 'a', node: 'b' })!)).toEqual(['node', 'os']);
    expect(jobMatrixFrom({ include: { browser: 'firefox' }, shards: [1, 2] })).toEqual({ include: '{"browser":"firefox"}', shards: '[1,2]' });
    expect(jobMatrixFrom({})).toBeUndefined();
    expect(jobMatrixFrom(null)).toBeUndefined();
    expect(jobMatrixFrom('node 20')).toBeUndefined();
    expect(jobMatrixFrom([1])).toBeUndefined();
  });

  it('stored as canonical JSON, read back as it was', () => {
    const m = jobMatrixFrom({ os: 'ubuntu', node: 20 })!;
    expect(jobMatrixText(m)).toBe('{"node":"20","os":"ubuntu"}');
    expect(jobMatrixText(undefined)).toBe('');
    expect(parseJobMatrixText('{"node":"20","os":"ubuntu"}')).toEqual(m);
    expect(parseJobMatrixText('')).toBeNull();
    expect(parseJobMatrixText('not json')).toBeNull();
  });

  it('the native batch takes ciJobName and ciJobMatrix, both optional (null too)', () => {
    const batch = (resource: object) => ({
      contractVersion: '0.1.0',
      idempotencyKey: 'job-matrix-0001',
      resource: { ciProvider: 'github_actions', commitSha: SHA, branch: 'main', trigger: 'push', ...resource },
      run: { status: 'passed', startedAt: 1_700_000_000_000 },
      executions: [],
    });
    const parsed = nativeBatchSchema.parse(batch({ ciJobName: 'e2e', ciJobMatrix: { os: 'ubuntu', node: 20 } }));
    expect(parsed.resource).toMatchObject({ ciJobName: 'e2e', ciJobMatrix: { node: '20', os: 'ubuntu' } });
    const old = nativeBatchSchema.parse(batch({ ciJobName: null, ciJobMatrix: null }));
    expect(old.resource.ciJobName).toBeUndefined();
    expect(old.resource.ciJobMatrix).toBeUndefined();
    expect(nativeBatchSchema.safeParse(batch({ ciJobMatrix: 'node=20' })).success).toBe(false);
  });
});

describe('the reporter: job name and matrix in the resource', () => {
  const gh = { GITHUB_ACTIONS: 'true', GITHUB_SHA: SHA, GITHUB_REF_NAME: 'main', GITHUB_JOB: 'test' };

  it('SERVICE_CI_JOB_MATRIX holds `${{ toJSON(matrix) }}`; `null` (no matrix) is none; bad JSON names the variable', () => {
    const s = loadReporterSettings({ env: { SERVICE_CI_JOB_MATRIX: '{\n  "node": 20,\n  "os": "ubuntu-latest"\n}' }, cwd: '/' });
    expect(s.ciJobMatrix).toEqual({ node: '20', os: 'ubuntu-latest' });
    expect(loadReporterSettings({ env: { SERVICE_CI_JOB_MATRIX: 'null' }, cwd: '/' }).ciJobMatrix).toBeUndefined();
    expect(() => loadReporterSettings({ env: { SERVICE_CI_JOB_MATRIX: 'node=20' }, cwd: '/' })).toThrow(/SERVICE_CI_JOB_MATRIX/);
  });

  it('the CI names the job; SERVICE_CI_JOB_NAME names it instead (two runners in one job)', () => {
    const ci = detectCi(gh);
    expect(resolveResource({ ci }).resource).toMatchObject({ ciJobName: 'test' });
    expect(resolveResource({ ci: detectCi({}), ciJobName: 'unit' }).resource).toMatchObject({ ciJobName: 'unit' });
    const r = resolveResource({ ci, ciJobName: 'test-jest', ciJobMatrix: { node: '20' } }).resource;
    expect(r).toMatchObject({ ciJobName: 'test-jest', ciJobMatrix: { node: '20' } });
    expect(resolveResource({ ci: detectCi({}) }).resource).not.toHaveProperty('ciJobName');
  });

  it('over OTLP: cicd.pipeline.task.name and service.job.matrix, read back by the receiver', () => {
    const resource = { ciProvider: 'github_actions' as const, commitSha: SHA, branch: 'main', trigger: 'push' as const, ciJobName: 'test', ciJobMatrix: { node: '20' } };
    const attrs = resourceAttributes(resource, 'otlp-key-0001');
    expect(attrs).toMatchObject({ 'cicd.pipeline.task.name': 'test', 'service.job.matrix': '{"node":"20"}' });
    const body = otlpBody(
      Object.entries(attrs).map(([key, v]) => ({ key, value: typeof v === 'number' ? { intValue: v } : { stringValue: String(v) } })),
      [],
    );
    expect(map(body).resource).toMatchObject({ ciJobName: 'test', ciJobMatrix: { node: '20' } });
  });
});

describe('OTLP: the job from the conventions', () => {
  it('cicd.pipeline.task.name on the resource is the job name; a bad matrix is left out, never refused', () => {
    const body = otlpBody(
      [
        { key: 'cicd.pipeline.task.name', value: { stringValue: 'unit (node 22)' } },
        { key: 'service.job.matrix', value: { stringValue: 'node=22' } },
      ],
      [],
    );
    const r = map(body).resource;
    expect(r.ciJobName).toBe('unit (node 22)');
    expect(r.ciJobMatrix).toBeUndefined();
  });

  it('a pipeline span as the run: the task span holding the cases names the job', () => {
    const body = otlpBody(
      [],
      [{ key: 'cicd.pipeline.task.name', value: { stringValue: 'test (1/2)' } }],
    );
    expect(map(body).resource.ciJobName).toBe('test (1/2)');
  });

  it('no task name anywhere: no job name', () => {
    expect(map(otlpBody([], [])).resource).not.toHaveProperty('ciJobName');
  });
});

// ---------------------------------------------------------------------------------------------

type Attr = { key: string; value: Record<string, unknown> };
const T0 = 1_770_000_000_000;
const ns = (ms: number): string => String(BigInt(ms) * 1_000_000n);

/** A pipeline span (the run), a task span under it carrying `taskAttrs`, and one test case under the task. */
function otlpBody(resourceAttrs: Attr[], taskAttrs: Attr[]): unknown {
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'ci' } }, ...resourceAttrs] },
        scopeSpans: [
          {
            spans: [
              {
                traceId,
                spanId: '00f067aa0ba902b7',
                name: 'CI',
                startTimeUnixNano: ns(T0),
                endTimeUnixNano: ns(T0 + 5_000),
                attributes: [{ key: 'cicd.pipeline.run.id', value: { stringValue: '42' } }],
              },
              {
                traceId,
                spanId: '00f067aa0ba902b8',
                parentSpanId: '00f067aa0ba902b7',
                name: 'task',
                startTimeUnixNano: ns(T0 + 100),
                endTimeUnixNano: ns(T0 + 4_000),
                attributes: taskAttrs,
              },
              {
                traceId,
                spanId: '00f067aa0ba902b9',
                parentSpanId: '00f067aa0ba902b8',
                name: 'test case',
                startTimeUnixNano: ns(T0 + 200),
                endTimeUnixNano: ns(T0 + 300),
                attributes: [
                  { key: 'test.case.name', value: { stringValue: 'cart > adds' } },
                  { key: 'test.case.result.status', value: { stringValue: 'pass' } },
                  { key: 'code.file.path', value: { stringValue: 'src/cart.test.ts' } },
                ],
              },
            ],
          },
        ],
      },
    ],
  };
}

function map(body: unknown) {
  const { batches, rejected } = mapOtlpToBatches(decodeOtlpJson(body), { now: T0 + 10_000 });
  expect(rejected).toEqual([]);
  expect(batches).toHaveLength(1);
  return batches[0]!;
}

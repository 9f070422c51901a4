// The operator processors' pure logic (src/domain/{patterns,filter,keep-executions,attribute-actions,sample}.ts)
// and their configs as the pipeline file validates them (refused with the YAML path).
import { describe, expect, it } from 'vitest';
import { applyAttributeActions, mapResource, type AttributeAction } from '../../src/domain/attribute-actions.js';
import type { BatchResource, ExecutionInput } from '../../client/src/contract/batch.js';
import { compileFilter } from '../../src/domain/filter.js';
import { keepExecutions } from '../../src/domain/keep-executions.js';
import { compileFilePattern, compileTextPattern } from '../../src/domain/patterns.js';
import { sampleKeep } from '../../src/domain/sample.js';
import { builtinRegistry } from '../../src/builtin/components.js';
import { PipelineConfigError, validatePipelineDoc } from '../../src/pipeline/graph.js';

const resource: BatchResource = { ciProvider: 'github_actions', commitSha: 'abcdef1', branch: 'main', trigger: 'push' };

function ex(title: string, status: ExecutionInput['status'] = 'pass', extra: Partial<ExecutionInput> = {}): ExecutionInput {
  return { filePath: 'src/a.test.ts', suite: 'A', title, status, attempt: 1, startedAt: 0, durationMs: 1, ...extra };
}

describe('patterns', () => {
  it('text: `*` is any text (slashes too), `?` one character, /…/flags a regex, else literal', () => {
    expect(compileTextPattern('dependabot/*')('dependabot/npm_and_yarn/x')).toBe(true);
    expect(compileTextPattern('dependabot/*')('main')).toBe(false);
    expect(compileTextPattern('case ?')('case 1')).toBe(true);
    expect(compileTextPattern('a.b')('axb')).toBe(false);
    expect(compileTextPattern('/^get \\/users/i')('GET /users/1')).toBe(true);
    expect(compileTextPattern('GET /users')('GET /users')).toBe(true);
  });

  it('file: ignore globs (case folded, slash-less at any depth) or a regex', () => {
    expect(compileFilePattern('e2e/**')('e2e/a/b.test.ts')).toBe(true);
    expect(compileFilePattern('*.snap.test.ts')('src/x/y.snap.test.ts')).toBe(true);
    expect(compileFilePattern('E2E/**')('e2e/a.test.ts')).toBe(true);
    expect(compileFilePattern('/legacy/')('src/legacy/a.ts')).toBe(true);
  });

  it('refuses a bad regex, stateful flags and a negated file glob', () => {
    expect(() => compileTextPattern('/(/')).toThrow(/invalid regular expression/);
    expect(() => compileTextPattern('/a/g')).toThrow(/flags g and y/);
    expect(() => compileFilePattern('!e2e/**')).toThrow(/negated/);
  });
});

describe('compileFilter', () => {
  it('exclude: any rule, every field of a rule', () => {
    const f = compileFilter({ executions: { exclude: [{ title: 'flaky*', status: ['skip'] }, { attributes: { tag: 'slow' } }] } });
    expect(f.keepsExecution(ex('flaky one', 'skip'), resource)).toBe(false);
    expect(f.keepsExecution(ex('flaky one', 'pass'), resource)).toBe(true);
    expect(f.keepsExecution(ex('x', 'pass', { attributes: { tag: 'slow' } }), resource)).toBe(false);
    expect(f.keepsExecution(ex('x', 'pass', { attributes: { other: 'slow' } }), resource)).toBe(true);
    expect(f.keepsExecution(ex('x'), resource)).toBe(true);
  });

  it('include keeps only what matches, then exclude drops; branch is the run’s', () => {
    const f = compileFilter({ executions: { include: [{ suite: 'API*' }], exclude: [{ branch: 'release/*', title: '/slow/' }] } });
    expect(f.keepsExecution(ex('a', 'pass', { suite: 'API users' }), resource)).toBe(true);
    expect(f.keepsExecution(ex('a', 'pass', { suite: 'UI' }), resource)).toBe(false);
    expect(f.keepsExecution(ex('a slow one', 'pass', { suite: 'API' }), { ...resource, branch: 'release/1.2' })).toBe(false);
    expect(f.keepsExecution(ex('a slow one', 'pass', { suite: 'API' }), resource)).toBe(true);
  });

  it('runs: by branch, repository, provider, trigger; no rules drops nothing', () => {
    const f = compileFilter({ runs: { exclude: [{ branch: 'dependabot/*' }, { trigger: ['schedule'], repository: 'acme/*' }] } });
    expect(f.dropsRun({ ...resource, branch: 'dependabot/npm/x' })).toBe(true);
    expect(f.dropsRun({ ...resource, trigger: 'schedule', repository: 'acme/web' })).toBe(true);
    expect(f.dropsRun({ ...resource, trigger: 'schedule' })).toBe(false);
    expect(f.dropsRun(resource)).toBe(false);
    expect(compileFilter({}).filtersExecutions).toBe(false);
    expect(compileFilter({}).dropsRun(resource)).toBe(false);
  });
});

describe('keepExecutions', () => {
  it('re-points retries at the same kept attempt; a retry of a dropped one loses its link', () => {
    const list = [ex('a', 'fail'), ex('b', 'fail'), ex('b', 'pass', { attempt: 2, retryOfIndex: 1 }), ex('a', 'pass', { attempt: 2, retryOfIndex: 0 })];
    const kept = keepExecutions(list, [false, true, true, true]);
    expect(kept.map((e) => [e.title, e.retryOfIndex])).toEqual([
      ['b', undefined],
      ['b', 0],
      ['a', undefined],
    ]);
  });
});

describe('attribute actions', () => {
  it('set, rename, hash (sha256 hex), delete, in order; an emptied record is removed', () => {
    const actions: AttributeAction[] = [
      { action: 'rename', from: 'CI_JOB', to: 'ci.job' },
      { action: 'hash', key: 'user' },
      { action: 'delete', key: 'token' },
      { action: 'set', key: 'team', value: 'core' },
    ];
    const e = ex('a', 'pass', { attributes: { CI_JOB: 'unit', user: 'ann', token: 't' } });
    applyAttributeActions(e, actions);
    expect(e.attributes).toEqual({ 'ci.job': 'unit', user: '49915e0d7d4b402e3017d010bc1c0e83cac6c797d6c16e66340fe3268693a6a1', // sha256('ann')
      team: 'core' });
  });

  it('map fills unset or placeholder fields only (unless overwrite), first value found wins, ill-typed values are left out', () => {
    const actions: AttributeAction[] = [
      { action: 'map', from: 'gl.pipeline', to: 'resource.ciRunId' },
      { action: 'map', from: 'ci.pipeline.id', to: 'resource.ciRunId' },
      { action: 'map', from: 'ci.branch', to: 'resource.branch' },
      { action: 'map', from: 'ci.pr', to: 'resource.prNumber' },
      { action: 'map', from: 'ci.shard', to: 'resource.shardIndex' },
      { action: 'map', from: 'ci.provider', to: 'resource.ciProvider', overwrite: true },
    ];
    const executions = [ex('a'), ex('b', 'pass', { attributes: { 'ci.pipeline.id': 77, 'ci.branch': 'feature/x', 'ci.pr': '12', 'ci.shard': 'zero', 'ci.provider': 'gitlab_ci' } })];
    expect(mapResource({ ...resource, branch: 'local' }, executions, actions)).toEqual({
      ...resource,
      ciRunId: '77',
      branch: 'feature/x',
      prNumber: 12,
      ciProvider: 'gitlab_ci',
    });
    // A real branch is kept; nothing to map returns the same object.
    expect(mapResource(resource, executions, actions).branch).toBe('main');
    expect(mapResource(resource, [ex('a')], actions)).toBe(resource);
  });
});

describe('sampleKeep', () => {
  const passing = Array.from({ length: 400 }, (_, i) => ex(`p${i}`));

  it('keeps failing, flaky (every attempt) and skipped tests; samples clean ones near the percentage', () => {
    const list = [...passing, ex('broken', 'fail'), ex('flaky', 'fail'), ex('flaky', 'pass', { attempt: 2, retryOfIndex: 401 }), ex('skipped', 'skip')];
    const keep = sampleKeep(list, 'run-1', { percentage: 25, seed: '' });
    expect(keep.slice(400)).toEqual([true, true, true, true]);
    const kept = keep.slice(0, 400).filter(Boolean).length;
    expect(kept).toBeGreaterThan(70);
    expect(kept).toBeLessThan(130);
  });

  it('is deterministic per run and differs between runs and seeds', () => {
    const a = sampleKeep(passing, 'run-1', { percentage: 50, seed: '' });
    expect(sampleKeep(passing, 'run-1', { percentage: 50, seed: '' })).toEqual(a);
    expect(sampleKeep(passing, 'run-2', { percentage: 50, seed: '' })).not.toEqual(a);
    expect(sampleKeep(passing, 'run-1', { percentage: 50, seed: 'x' })).not.toEqual(a);
  });

  it('0 keeps no clean test, 100 keeps all', () => {
    expect(sampleKeep(passing, 'r', { percentage: 0, seed: '' }).some(Boolean)).toBe(false);
    expect(sampleKeep(passing, 'r', { percentage: 100, seed: '' }).every(Boolean)).toBe(true);
  });
});

describe('operator processor configs in a pipeline file', () => {
  const registry = builtinRegistry();
  function doc(type: string, config: unknown): unknown {
    return {
      receivers: { native: {} },
      processors: { normalize: {}, [type]: config, identity: {} },
      exporters: { clickhouse: {} },
      service: { pipelines: { executions: { receivers: ['native'], processors: ['normalize', type, 'identity'], exporters: ['clickhouse'] } } },
    };
  }
  function problems(type: string, config: unknown): { path: string; message: string }[] {
    try {
      validatePipelineDoc(doc(type, config), registry, 'test.yaml');
    } catch (err) {
      expect(err).toBeInstanceOf(PipelineConfigError);
      return (err as PipelineConfigError).problems;
    }
    return [];
  }

  it('accepts valid configs after normalize and before identity', () => {
    expect(problems('filter', { runs: { exclude: [{ branch: 'dependabot/*' }] }, executions: { exclude: [{ title: '/x/i', status: ['skip'] }] } })).toEqual([]);
    expect(problems('attributes', { actions: [{ action: 'map', from: 'ci.pipeline.id', to: 'resource.ciRunId' }] })).toEqual([]);
    expect(problems('sample', { percentage: 10 })).toEqual([]);
  });

  it('refuses one placed after identity (it rewrites the runs identity read)', () => {
    for (const [type, config] of [['filter', {}], ['attributes', { actions: [{ action: 'delete', key: 'x' }] }], ['sample', { percentage: 5 }]] as const) {
      const d = doc(type, config) as { service: { pipelines: { executions: { processors: string[] } } } };
      d.service.pipelines.executions.processors = ['normalize', 'identity', type];
      let problems: { path: string; message: string }[] = [];
      try {
        validatePipelineDoc(d, registry, 'test.yaml');
      } catch (err) {
        problems = (err as PipelineConfigError).problems;
      }
      expect(problems).toEqual([
        { path: 'service.pipelines.executions.processors.2', message: expect.stringContaining(`move ${type} before identity`) },
      ]);
    }
  });

  it('refuses bad configs with the path of the bad value', () => {
    const at = (type: string, config: unknown): string[] => problems(type, config).map((p) => p.path);
    expect(at('filter', { executions: { exclude: [{ titel: 'x' }] } })).toEqual(['processors.filter.executions.exclude.0.titel']);
    expect(at('filter', { executions: { exclude: [{ title: '/(/' }] } })).toEqual(['processors.filter.executions.exclude.0.title']);
    expect(at('filter', { executions: { exclude: [{ status: ['skipped'] }] } })).toEqual(['processors.filter.executions.exclude.0.status.0']);
    expect(at('filter', { runs: { exclude: [{}] } })).toEqual(['processors.filter.runs.exclude.0']);
    expect(at('filter', { run: {} })).toEqual(['processors.filter.run']);
    expect(at('attributes', { actions: [{ action: 'map', from: 'x', to: 'resource.color' }] })).toEqual(['processors.attributes.actions.0.to']);
    expect(at('attributes', { actions: [{ action: 'hash', key: 'x', value: 1 }] })).toEqual(['processors.attributes.actions.0.value']);
    expect(at('sample', { percentage: 150 })).toEqual(['processors.sample.percentage']);
    expect(at('sample', {})).toEqual(['processors.sample.percentage']);
  });
});

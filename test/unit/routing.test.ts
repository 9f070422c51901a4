// The `routing` connector: which pipelines a run goes to (src/domain/routing.ts) and what the graph
// refuses about routed pipelines (src/pipeline/graph.ts checkRoutes, slots across a route).
import { describe, expect, it } from 'vitest';
import { builtinRegistry } from '../../src/builtin/components.js';
import { compileRoutes, type RoutedRun } from '../../src/domain/routing.js';
import { PipelineConfigError, validatePipelineDoc } from '../../src/pipeline/graph.js';
import type { ExecutionInput } from '../../client/src/contract/batch.js';

const registry = builtinRegistry();

function run(over: { projectId?: string; source?: RoutedRun['source']; branch?: string; attributes?: Record<string, string> } = {}): RoutedRun {
  const execution = { title: 't', status: 'pass', attributes: over.attributes ?? {} } as unknown as ExecutionInput;
  return {
    projectId: over.projectId ?? 'p1',
    source: over.source ?? 'native',
    batch: { resource: { ciProvider: 'github_actions', commitSha: 'a'.repeat(40), branch: over.branch ?? 'main', trigger: 'push' }, executions: [execution] },
  };
}

describe('routing decisions', () => {
  const route = compileRoutes({
    default_pipelines: ['executions/local'],
    table: [
      { match: { branch: 'release/*', source: ['junit'] }, pipelines: ['executions/release'] },
      { match: { attributes: { team: '/^pay/' } }, pipelines: ['executions/payments', 'executions/local'] },
      { match: { project: 'p2' }, pipelines: ['executions/p2'] },
    ],
  });

  it('every field of a match must hold; the first matching route wins; else the defaults', () => {
    expect(route(run({ branch: 'release/1.2', source: 'junit' }))).toEqual(['executions/release']);
    expect(route(run({ branch: 'release/1.2', source: 'otlp' }))).toEqual(['executions/local']);
    expect(route(run({ attributes: { team: 'payments' }, projectId: 'p2' }))).toEqual(['executions/payments', 'executions/local']);
    expect(route(run({ projectId: 'p2' }))).toEqual(['executions/p2']);
    expect(route(run({ attributes: { team: 'search' } }))).toEqual(['executions/local']);
  });

  it('takes a list of patterns for branch, repository and project, as docs/pipeline.md lists them: any may match', () => {
    const byList = compileRoutes({
      default_pipelines: ['executions/local'],
      table: [{ match: { branch: ['main', 'release/*'], project: ['p1', 'p3'] }, pipelines: ['executions/protected'] }],
    });
    expect(byList(run({ branch: 'main' }))).toEqual(['executions/protected']);
    expect(byList(run({ branch: 'release/2.0' }))).toEqual(['executions/protected']);
    expect(byList(run({ branch: 'feature/x' }))).toEqual(['executions/local']);
    expect(byList(run({ branch: 'main', projectId: 'p2' }))).toEqual(['executions/local']);
  });
});

/** A pipeline file routing from `executions` to two pipelines. */
function routed(over: { connector?: unknown; pipelines?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    receivers: { native: {}, junit: {} },
    processors: { normalize: {}, identity: {}, scoring: {} },
    exporters: { clickhouse: {}, debug: {} },
    connectors: {
      routing: over.connector ?? { default_pipelines: ['executions/local'], table: [{ match: { branch: 'main' }, pipelines: ['executions/main'] }] },
    },
    service: {
      pipelines: over.pipelines ?? {
        executions: { receivers: ['native', 'junit'], processors: ['normalize'], exporters: ['routing'] },
        'executions/local': { receivers: ['routing'], processors: ['identity'], exporters: ['clickhouse'] },
        'executions/main': { receivers: ['routing'], processors: ['identity', 'scoring'], exporters: ['clickhouse', 'debug'] },
      },
    },
  };
}

function problems(raw: unknown): { path: string; message: string }[] {
  try {
    validatePipelineDoc(raw, registry, 'test.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(PipelineConfigError);
    return (err as PipelineConfigError).problems;
  }
  return [];
}

describe('routing in the graph', () => {
  it('a routed graph validates', () => {
    expect(problems(routed())).toEqual([]);
  });

  it('refuses a second executions pipeline fed by receivers, naming it', () => {
    const p = problems({
      receivers: { native: {}, junit: {} },
      processors: { identity: {} },
      exporters: { clickhouse: {} },
      service: {
        pipelines: {
          executions: { receivers: ['native'], processors: ['identity'], exporters: ['clickhouse'] },
          'executions/junit': { receivers: ['junit'], processors: ['identity'], exporters: ['clickhouse'] },
        },
      },
    });
    expect(p).toHaveLength(1);
    expect(p[0]!.path).toBe('service.pipelines.executions/junit.receivers');
    expect(p[0]!.message).toContain('routing connector');
  });

  it('refuses a route to a pipeline that does not exist or does not list the connector, and a pipeline no route reaches', () => {
    const p = problems(
      routed({
        connector: { default_pipelines: ['executions/nope'], table: [{ match: { branch: 'main' }, pipelines: ['executions/main'] }] },
      }),
    );
    expect(p.map((x) => x.path).sort()).toEqual(['connectors.routing.default_pipelines.0', 'service.pipelines.executions/local.receivers.0']);
    expect(p.find((x) => x.path.startsWith('connectors'))!.message).toContain('no pipeline "executions/nope"');
  });

  it('refuses a routing table entry with an empty match or a bad pattern, with the path', () => {
    const p = problems(routed({ connector: { default_pipelines: ['executions/local'], table: [{ match: {}, pipelines: ['executions/main'] }, { match: { branch: '/[/' }, pipelines: ['executions/main'] }] } }));
    expect(p.map((x) => x.path)).toEqual(['connectors.routing.table.0.match', 'connectors.routing.table.1.match.branch']);
  });

  it('takes a list of branch patterns in a match, and names a bad one by its index', () => {
    expect(problems(routed({ connector: { default_pipelines: ['executions/local'], table: [{ match: { branch: ['main', 'release/*'], repository: ['acme/*'] }, pipelines: ['executions/main'] }] } }))).toEqual([]);
    const p = problems(routed({ connector: { default_pipelines: ['executions/local'], table: [{ match: { branch: ['main', '/[/'] }, pipelines: ['executions/main'] }, { match: { branch: [] }, pipelines: ['executions/main'] }] } }));
    expect(p.map((x) => x.path)).toEqual(['connectors.routing.table.0.match.branch.1', 'connectors.routing.table.1.match.branch']);
  });

  it('checks slots across a route: executions filled upstream are handed on, identities are not', () => {
    // identity upstream: the routed pipelines get executions, but clickhouse still needs identities there.
    const p = problems({
      ...routed(),
      processors: { normalize: {}, identity: {}, scoring: {} },
      service: {
        pipelines: {
          executions: { receivers: ['native', 'junit'], processors: ['normalize', 'identity'], exporters: ['routing'] },
          'executions/local': { receivers: ['routing'], processors: [], exporters: ['debug'] },
          'executions/main': { receivers: ['routing'], processors: ['scoring'], exporters: ['clickhouse'] },
        },
      },
    });
    expect(p).toHaveLength(1);
    expect(p[0]!.path).toBe('service.pipelines.executions/main.processors');
    expect(p[0]!.message).toContain('requires identities');
    expect(p[0]!.message).not.toContain('scoring (processors.0) requires executions');
  });

  it('refuses a loop of routes', () => {
    const p = problems({
      receivers: { native: {} },
      processors: {},
      exporters: { debug: {} },
      connectors: {
        routing: { default_pipelines: ['executions/a'] },
        'routing/back': { default_pipelines: ['executions/b'] },
      },
      service: {
        pipelines: {
          executions: { receivers: ['native'], processors: [], exporters: ['routing'] },
          'executions/a': { receivers: ['routing'], processors: [], exporters: ['routing/back'] },
          'executions/b': { receivers: ['routing/back'], processors: [], exporters: ['debug', 'routing'] },
        },
      },
    });
    expect(p.some((x) => x.message.startsWith('routes go round in a loop'))).toBe(true);
  });
});

// The component model's slots (src/pipeline/slots.ts): an executions pipeline whose order cannot
// fill in what a stage requires is refused, naming the path, what is missing and who provides it.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { builtinRegistry } from '../../src/builtin/components.js';
import { SLOTS, type ProcessorFactory } from '../../src/pipeline/component.js';
import { loadPipelineFile, PipelineConfigError, validatePipelineDoc } from '../../src/pipeline/graph.js';
import { defineProcessor } from '../../src/pipeline/helpers/processor.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const SOURCE = 'test.yaml';
const EXEC = 'service.pipelines.executions';
const registry = builtinRegistry();

/** The default graph with the given executions processors (and only those defined). */
function doc(processors: string[], exporters: string[] = ['clickhouse', 'events']): Record<string, unknown> {
  return {
    receivers: { otlp: {}, junit: {}, native: {} },
    processors: Object.fromEntries(processors.map((p) => [p, {}])),
    exporters: { ...(exporters.includes('clickhouse') ? { clickhouse: {} } : {}), debug: {} },
    connectors: { events: {} },
    service: {
      pipelines: {
        executions: { receivers: ['otlp', 'junit', 'native'], processors, exporters },
        events: { receivers: ['events'], processors: [], exporters: ['debug'] },
      },
    },
  };
}

function refusal(raw: unknown, reg = registry): PipelineConfigError {
  try {
    validatePipelineDoc(raw, reg, SOURCE);
  } catch (err) {
    expect(err).toBeInstanceOf(PipelineConfigError);
    return err as PipelineConfigError;
  }
  throw new Error('expected the pipeline to be refused');
}

/** The one problem of the error, which its message carries as `source: path: message`. */
function only(err: PipelineConfigError): { path: string; message: string } {
  expect(err.problems, err.message).toHaveLength(1);
  const p = err.problems[0]!;
  expect(err.message).toBe(`${SOURCE}: ${p.path}: ${p.message}`);
  return p;
}

describe('slots: the built-in stages declare what they need and give', () => {
  it('identity provides executions and identities; scoring requires them; clickhouse requires what it writes', () => {
    const decl = (type: string, kind: 'processor' | 'exporter' = 'processor'): unknown => {
      const f = registry.get(kind, type);
      return f && (f.kind === 'processor' || f.kind === 'exporter') ? { requires: f.requires, ...(f.kind === 'processor' ? { provides: f.provides } : {}) } : undefined;
    };
    expect(decl('identity')).toEqual({ requires: ['runs'], provides: ['executions', 'identities'] });
    expect(decl('scoring')).toEqual({ requires: ['runs', 'executions'], provides: ['testStates', 'healthEvents'] });
    expect(decl('quarantine')).toEqual({ requires: ['testStates'], provides: ['quarantine', 'healthEvents'] });
    expect(decl('clickhouse', 'exporter')).toEqual({ requires: ['runs', 'executions', 'identities'] });
    expect(registry.providersOf('executions')).toEqual(['identity']);
    expect(registry.providersOf('testStates')).toEqual(['scoring']);
  });
});

/** The stages docs/pipeline.md's requires/provides table must have a row for; any other row present is checked too. */
const DOCUMENTED = ['normalize', 'identity', 'clustering', 'scoring', 'quarantine', 'rollups', 'clickhouse', 'debug'];

describe('slots: docs/pipeline.md', () => {
  it('lists every slot, and each built-in stage with the slots it declares', async () => {
    const doc = await fs.readFile(path.join(REPO_ROOT, 'docs/pipeline.md'), 'utf8');
    for (const slot of Object.keys(SLOTS)) expect(doc).toContain(`| \`${slot}\` |`);
    const codes = (cell: string): string[] => [...cell.replace(/\(.*\)/, '').matchAll(/`(\w+)`/g)].map((m) => m[1]!);
    for (const kind of ['processor', 'exporter'] as const) {
      for (const type of registry.types(kind)) {
        const f = registry.get(kind, type);
        if (!f || (f.kind !== 'processor' && f.kind !== 'exporter')) continue;
        const row = doc.split('\n').find((l) => l.startsWith(`| ${kind} \`${type}\` |`));
        if (!row) {
          expect(DOCUMENTED, `${kind} ${type} has no row`).not.toContain(type);
          continue;
        }
        const [, , requires = '', provides = ''] = row.split('|').map((c) => c.trim());
        expect(codes(requires), `${kind} ${type} requires`).toEqual(f.requires ?? []);
        if (f.kind === 'processor') expect(codes(provides), `${type} provides`).toEqual(f.provides ?? []);
      }
    }
  });
});

describe('slots: valid orders', () => {
  it('the default and the bench pipeline files validate', () => {
    for (const file of ['pipelines/default.yaml', 'bench/pipelines/core.yaml']) {
      const graph = loadPipelineFile(path.join(REPO_ROOT, file), registry, file, {});
      expect(graph.pipelines.map((p) => p.id)).toEqual(['executions', 'events']);
    }
  });

  it('identity alone is enough for clickhouse; normalize is optional', () => {
    expect(() => validatePipelineDoc(doc(['identity']), registry, SOURCE)).not.toThrow();
    expect(() => validatePipelineDoc(doc(['normalize', 'identity', 'scoring']), registry, SOURCE)).not.toThrow();
  });

  it('a factory that declares nothing requires nothing, anywhere in the list', () => {
    const reg = builtinRegistry();
    // Third-party style: a bare factory object, written before slots existed.
    const bare: ProcessorFactory<Record<string, never>> = {
      kind: 'processor',
      type: 'tagger',
      description: 'test',
      signals: ['executions'],
      configSchema: z.object({}).strict(),
      createExecutions: () => ({ start: async () => {}, shutdown: async () => {}, processBatch: async () => {} }),
    };
    reg.register(bare);
    reg.register(defineProcessor({ type: 'counter', description: 'test', configSchema: z.object({}).strict(), start: () => ({ processBatch: async () => {} }) }));
    expect(() => validatePipelineDoc(doc(['tagger', 'counter', 'identity']), reg, SOURCE)).not.toThrow();
  });
});

describe('slots: refusals name the path, what is missing and who provides it', () => {
  it('identity missing', () => {
    const p = only(refusal(doc(['normalize', 'scoring'])));
    expect(p.path).toBe(`${EXEC}.processors`);
    expect(p.message).toMatch(/^identity is missing: /);
    expect(p.message).toContain('scoring (processors.1) and clickhouse (exporters.0) require executions');
    expect(p.message).toContain('clickhouse (exporters.0) requires identities');
    expect(p.message).toMatch(/which identity provides$/);
  });

  it('the default file without identity is refused, once, at the processors list', async () => {
    const text = await fs.readFile(path.join(REPO_ROOT, 'pipelines/default.yaml'), 'utf8');
    const without = text.replace('[normalize, identity, clustering', '[normalize, clustering').replace(/^ {2}identity: \{\}.*\n/m, '');
    expect(without).not.toMatch(/identity: \{\}|, identity,/);
    const err = refusal((await import('yaml')).parse(without));
    const p = only(err);
    expect(p.path).toBe(`${EXEC}.processors`);
    expect(p.message).toContain('clustering (processors.1), scoring (processors.2), rollups (processors.4) and clickhouse (exporters.0) require executions');
  });

  it('scoring before identity: move identity', () => {
    const p = only(refusal(doc(['normalize', 'scoring', 'identity'])));
    expect(p.path).toBe(`${EXEC}.processors.1`);
    expect(p.message).toBe('scoring requires executions, which identity (processors.2) provides later: move identity before scoring');
  });

  it('quarantine without scoring', () => {
    const p = only(refusal(doc(['normalize', 'identity', 'quarantine'])));
    expect(p.path).toBe(`${EXEC}.processors`);
    expect(p.message).toBe('scoring is missing: quarantine (processors.2) requires testStates, which scoring provides');
  });

  it('quarantine before scoring', () => {
    const p = only(refusal(doc(['identity', 'quarantine', 'scoring'])));
    expect(p.path).toBe(`${EXEC}.processors.1`);
    expect(p.message).toContain('quarantine requires testStates, which scoring (processors.2) provides later');
  });

  it('clickhouse without identity (no processors at all)', () => {
    const p = only(refusal(doc([])));
    expect(p.path).toBe(`${EXEC}.processors`);
    expect(p.message).toBe('identity is missing: clickhouse (exporters.0) requires executions, clickhouse (exporters.0) requires identities, which identity provides');
  });

  it('clustering and rollups without identity', () => {
    const p = only(refusal(doc(['clustering', 'rollups'], ['events'])));
    expect(p.message).toBe('identity is missing: clustering (processors.0) and rollups (processors.1) require executions, which identity provides');
  });

  it('normalize after identity: identity read the raw runs', () => {
    const p = only(refusal(doc(['identity', 'normalize'])));
    expect(p.path).toBe(`${EXEC}.processors.1`);
    expect(p.message).toBe('normalize rewrites runs after identity (processors.0) read it: move normalize before identity');
  });

  it('two rewriters of a slot may follow each other; a reader between them is refused', () => {
    const reg = builtinRegistry();
    reg.register(defineProcessor({ type: 'tidy', description: 'test', configSchema: z.object({}).strict(), requires: ['runs'], provides: ['runs'], start: () => ({ processBatch: async () => {} }) }));
    expect(() => validatePipelineDoc(doc(['normalize', 'tidy', 'identity']), reg, SOURCE)).not.toThrow();
    expect(() => validatePipelineDoc(doc(['tidy', 'normalize', 'identity']), reg, SOURCE)).not.toThrow();
    const p = only(refusal(doc(['normalize', 'identity', 'tidy']), reg));
    expect(p.path).toBe(`${EXEC}.processors.2`);
    expect(p.message).toBe('tidy rewrites runs after identity (processors.1) read it: move tidy before identity');
  });

  it('a requirement nothing registered provides says so', () => {
    const reg = builtinRegistry();
    const orphan = defineProcessor({ type: 'orphan', description: 'test', configSchema: z.object({}).strict(), requires: ['quarantine'], start: () => ({ processBatch: async () => {} }) });
    // A registry without quarantine: nothing provides the slot.
    const small = new (reg.constructor as new () => typeof reg)();
    for (const kind of ['receiver', 'processor', 'exporter', 'connector'] as const) {
      for (const type of reg.types(kind)) if (type !== 'quarantine') small.register(reg.get(kind, type)!);
    }
    small.register(orphan);
    const p = only(refusal(doc(['identity', 'orphan']), small));
    expect(p.message).toBe('no registered processor provides it: orphan (processors.1) requires quarantine');
  });

  it('an invalid component is not also reported as missing', () => {
    const raw = doc(['normalize', 'identity', 'scoring']);
    (raw.processors as Record<string, unknown>).identity = { bogus: true };
    const err = refusal(raw);
    expect(err.problems.map((p) => p.path)).toEqual(['processors.identity.bogus']);
  });

  it('events pipelines are not checked (debug requires runs only where it exports executions)', () => {
    expect(() => validatePipelineDoc(doc(['identity'], ['clickhouse', 'events', 'debug']), registry, SOURCE)).not.toThrow();
  });
});

describe('${env:NAME} in pipeline files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'flakehouse-env-'));
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function file(exporters: string): Promise<string> {
    const text = (await fs.readFile(path.join(REPO_ROOT, 'bench/pipelines/core.yaml'), 'utf8')).replace('  debug: {}\n', exporters);
    const f = path.join(dir, `p${Math.random().toString(36).slice(2)}.yaml`);
    await fs.writeFile(f, text);
    return f;
  }

  it('a set variable is substituted (whole value, typed as the schema wants)', async () => {
    const f = await file('  debug:\n    verbosity: ${env:FH_VERBOSITY}\n');
    const graph = loadPipelineFile(f, registry, 'p.yaml', { FH_VERBOSITY: 'detailed' });
    expect(graph.components.get('exporters:debug')?.config).toEqual({ verbosity: 'detailed' });
  });

  it('a default applies when the variable is unset or empty', async () => {
    const f = await file('  debug:\n    verbosity: ${env:FH_VERBOSITY:-detailed}\n');
    expect(loadPipelineFile(f, registry, 'p.yaml', {}).components.get('exporters:debug')?.config).toEqual({ verbosity: 'detailed' });
    expect(loadPipelineFile(f, registry, 'p.yaml', { FH_VERBOSITY: '' }).components.get('exporters:debug')?.config).toEqual({ verbosity: 'detailed' });
    expect(loadPipelineFile(f, registry, 'p.yaml', { FH_VERBOSITY: 'basic' }).components.get('exporters:debug')?.config).toEqual({ verbosity: 'basic' });
  });

  it('an unset variable without a default is refused with its path and name', async () => {
    const f = await file('  debug:\n    verbosity: ${env:FH_VERBOSITY}\n');
    try {
      loadPipelineFile(f, registry, 'p.yaml', {});
      expect.unreachable('an unset variable must be refused');
    } catch (err) {
      expect(err).toBeInstanceOf(PipelineConfigError);
      const e = err as PipelineConfigError;
      expect(e.problems).toHaveLength(1);
      expect(e.message).toMatch(/^p\.yaml: exporters\.debug\.verbosity: environment variable FH_VERBOSITY is not set/);
    }
  });

  it('a substituted value is validated like any other, at its path', async () => {
    const f = await file('  debug:\n    verbosity: ${env:FH_VERBOSITY}\n');
    expect(() => loadPipelineFile(f, registry, 'p.yaml', { FH_VERBOSITY: 'loud' })).toThrow(/^p\.yaml: exporters\.debug\.verbosity: /);
  });
});

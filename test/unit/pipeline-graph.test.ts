import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { builtinRegistry } from '../../src/builtin/components.js';
import { processingRegistry } from '../../src/builtin/processing.js';
import { loadPipelineFile, PipelineConfigError, validatePipelineDoc } from '../../src/pipeline/graph.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const DEFAULT_FILE = path.join(REPO_ROOT, 'pipelines/default.yaml');
const SOURCE = 'test.yaml';
const registry = builtinRegistry();

type Doc = {
  receivers: Record<string, unknown>;
  processors: Record<string, unknown>;
  exporters: Record<string, unknown>;
  connectors: Record<string, unknown>;
  service: { pipelines: Record<string, Record<string, unknown>> };
} & Record<string, unknown>;

/** The default pipeline file as an in-memory object, for tests to break one thing at a time. */
function baseDoc(): Doc {
  return {
    receivers: { otlp: {}, junit: {}, native: {} },
    processors: { normalize: {}, identity: {} },
    exporters: { clickhouse: {}, debug: { verbosity: 'basic' } },
    connectors: { events: {} },
    service: {
      pipelines: {
        executions: {
          receivers: ['otlp', 'junit', 'native'],
          processors: ['normalize', 'identity'],
          exporters: ['clickhouse', 'events'],
        },
        events: { receivers: ['events'], processors: [], exporters: ['debug'] },
      },
    },
  };
}

function pipeline(doc: Doc, id: string): Record<string, unknown> {
  const p = doc.service.pipelines[id];
  if (!p) throw new Error(`no pipeline ${id}`);
  return p;
}

/** Runs fn expecting a PipelineConfigError; returns it for assertions. */
function configError(fn: () => unknown): PipelineConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PipelineConfigError);
    return err as PipelineConfigError;
  }
  throw new Error('expected a PipelineConfigError');
}

const validateError = (doc: unknown): PipelineConfigError => configError(() => validatePipelineDoc(doc, registry, SOURCE));

/** The single problem at `path`, asserting the error's message carries it as `source: path: message`. */
function problemAt(err: PipelineConfigError, path: string): { path: string; message: string } {
  const matches = err.problems.filter((p) => p.path === path);
  expect(matches, `problems: ${JSON.stringify(err.problems)}`).toHaveLength(1);
  const problem = matches[0]!;
  expect(err.message.split('\n')).toContain(`${err.source}: ${path}: ${problem.message}`);
  return problem;
}

describe('validatePipelineDoc: valid graphs', () => {
  it('accepts the in-memory copy of the default graph', () => {
    const graph = validatePipelineDoc(baseDoc(), registry, SOURCE);
    expect(graph.source).toBe(SOURCE);
    expect(graph.pipelines.map((p) => [p.id, p.signal])).toEqual([
      ['executions', 'executions'],
      ['events', 'events'],
    ]);
    expect([...graph.components.keys()].sort()).toEqual(
      [
        'connectors:events',
        'exporters:clickhouse',
        'exporters:debug',
        'processors:identity',
        'processors:normalize',
        'receivers:junit',
        'receivers:native',
        'receivers:otlp',
      ].sort(),
    );
  });

  it('fills in component defaults (debug verbosity) and treats a null config as {}', () => {
    const doc = baseDoc();
    doc.exporters.debug = null;
    const graph = validatePipelineDoc(doc, registry, SOURCE);
    expect(graph.components.get('exporters:debug')?.config).toEqual({ verbosity: 'basic' });
  });

  it('supports named instances (type/name) alongside the plain type', () => {
    const doc = baseDoc();
    doc.exporters['debug/verbose'] = { verbosity: 'detailed' };
    pipeline(doc, 'events').exporters = ['debug', 'debug/verbose'];
    doc.service.pipelines['events/audit'] = { receivers: ['events'], exporters: ['debug/verbose'] };
    const graph = validatePipelineDoc(doc, registry, SOURCE);
    const verbose = graph.components.get('exporters:debug/verbose');
    expect(verbose?.type).toBe('debug');
    expect(verbose?.kind).toBe('exporter');
    expect(verbose?.config).toEqual({ verbosity: 'detailed' });
    expect(graph.components.get('exporters:debug')?.config).toEqual({ verbosity: 'basic' });
    const audit = graph.pipelines.find((p) => p.id === 'events/audit');
    expect(audit).toMatchObject({ signal: 'events', receivers: ['events'], processors: [], exporters: ['debug/verbose'] });
  });
});

describe('validatePipelineDoc: problems name their path', () => {
  it('unknown component type', () => {
    const doc = baseDoc();
    doc.processors.scorer = {};
    const err = validateError(doc);
    const p = problemAt(err, 'processors.scorer');
    expect(p.message).toContain('unknown processor type "scorer"');
    expect(p.message).toContain('identity, memory_limiter, normalize');
    expect(err.problems).toHaveLength(1);
  });

  it('an invalid component is reported once, not again where a pipeline references it', () => {
    const doc = baseDoc();
    doc.processors.scorer = {};
    pipeline(doc, 'executions').processors = ['normalize', 'identity', 'scorer'];
    doc.exporters.debug = { verbosity: 'loud' };
    const err = validateError(doc);
    expect(err.problems.map((p) => p.path).sort()).toEqual(['exporters.debug.verbosity', 'processors.scorer']);
    expect(err.message).not.toContain('not defined');
  });

  it('unknown key in a component config', () => {
    const doc = baseDoc();
    doc.exporters.debug = { verbosityy: 'basic' };
    const err = validateError(doc);
    expect(problemAt(err, 'exporters.debug.verbosityy').message).toContain('unknown key');
    expect(err.problems).toHaveLength(1);
  });

  it('a wrong value in a component config', () => {
    const doc = baseDoc();
    doc.exporters.debug = { verbosity: 'loud' };
    const err = validateError(doc);
    const p = problemAt(err, 'exporters.debug.verbosity');
    expect(p.message).toMatch(/basic/);
    expect(p.message).toMatch(/detailed/);
    expect(err.problems).toHaveLength(1);
  });

  it('an unknown top-level key', () => {
    const doc = baseDoc();
    // (`extensions` is a section now: src/extensions/, test/unit/file-storage.test.ts.)
    doc.exporter = { debug: {} };
    const err = validateError(doc);
    expect(problemAt(err, 'exporter').message).toBe('unknown key');
  });

  it('a missing service section', () => {
    const doc: Partial<Doc> = baseDoc();
    delete doc.service;
    const err = validateError(doc);
    expect(err.problems.map((p) => p.path)).toEqual(['service']);
  });

  it('an unknown key inside a pipeline', () => {
    const doc = baseDoc();
    const p = pipeline(doc, 'executions');
    p.procesors = p.processors;
    delete p.processors;
    const err = validateError(doc);
    expect(problemAt(err, 'service.pipelines.executions.procesors').message).toBe('unknown key');
  });

  it('a component defined but not used by any pipeline', () => {
    const doc = baseDoc();
    pipeline(doc, 'executions').receivers = ['otlp', 'native'];
    const err = validateError(doc);
    expect(problemAt(err, 'receivers.junit').message).toBe('defined but not used in any pipeline');
    expect(err.problems).toHaveLength(1);
  });

  it('a reference to an undefined component', () => {
    const doc = baseDoc();
    pipeline(doc, 'executions').processors = ['normalize', 'scoring', 'identity'];
    const err = validateError(doc);
    const p = problemAt(err, 'service.pipelines.executions.processors.1');
    expect(p.message).toContain('"scoring"');
    expect(p.message).toContain('not defined under processors');
    expect(err.problems).toHaveLength(1);
  });

  it('a pipeline without receivers', () => {
    const doc = baseDoc();
    pipeline(doc, 'executions').receivers = [];
    const err = validateError(doc);
    expect(problemAt(err, 'service.pipelines.executions.receivers').message).toBe('a pipeline needs at least one receiver');
    // Its former receivers are now unused, and each is reported too.
    for (const id of ['otlp', 'junit', 'native']) problemAt(err, `receivers.${id}`);
  });

  it('a pipeline without exporters (omitted key)', () => {
    const doc = baseDoc();
    const events = pipeline(doc, 'events');
    delete events.exporters;
    doc.exporters = { clickhouse: {} };
    const err = validateError(doc);
    expect(problemAt(err, 'service.pipelines.events.exporters').message).toBe('a pipeline needs at least one exporter');
    expect(err.problems).toHaveLength(1);
  });

  it('a pipeline id with an unknown signal', () => {
    const doc = baseDoc();
    doc.service.pipelines.metrics = { receivers: ['otlp'], exporters: ['debug'] };
    const err = validateError(doc);
    const p = problemAt(err, 'service.pipelines.metrics');
    expect(p.message).toContain('executions or events');
    expect(err.problems).toHaveLength(1);
  });

  it('a connector used on one side only', () => {
    const doc = baseDoc();
    delete doc.service.pipelines.events;
    doc.exporters = { clickhouse: {} };
    const err = validateError(doc);
    expect(problemAt(err, 'connectors.events').message).toBe('a connector must be an exporter in one pipeline and a receiver in another');
    expect(err.problems).toHaveLength(1);
  });

  it('a connector whose signal does not match the pipeline', () => {
    const doc = baseDoc();
    // `events` carries executions -> events; as an exporter of the events pipeline it is backwards.
    pipeline(doc, 'events').exporters = ['debug', 'events'];
    const err = validateError(doc);
    const p = problemAt(err, 'service.pipelines.events.exporters.1');
    expect(p.message).toBe('connector "events" carries executions, not events');
    expect(err.problems).toHaveLength(1);
  });

  it('a component that does not support the pipeline signal', () => {
    const doc = baseDoc();
    pipeline(doc, 'events').exporters = ['debug', 'clickhouse'];
    const err = validateError(doc);
    expect(problemAt(err, 'service.pipelines.events.exporters.1').message).toBe('exporter "clickhouse" does not support events pipelines');
  });

  it('a component listed twice in one list', () => {
    const doc = baseDoc();
    pipeline(doc, 'executions').processors = ['normalize', 'identity', 'normalize'];
    const err = validateError(doc);
    expect(problemAt(err, 'service.pipelines.executions.processors.2').message).toBe('"normalize" is listed twice');
    expect(err.problems).toHaveLength(1);
  });

  it('a malformed component id', () => {
    const doc = baseDoc();
    doc.exporters['Debug'] = {};
    const err = validateError(doc);
    expect(problemAt(err, 'exporters.Debug').message).toContain('type or type/name');
  });

  it('reports several problems together, one line each', () => {
    const doc = baseDoc();
    doc.exporters.debug = { verbosityy: 'basic' };
    doc.processors.scorer = {};
    pipeline(doc, 'executions').processors = ['normalize', 'identity', 'sampler'];
    pipeline(doc, 'events').exporters = [];
    const err = validateError(doc);
    const paths = err.problems.map((p) => p.path);
    expect(paths.sort()).toEqual([
      'exporters.debug.verbosityy',
      'processors.scorer',
      'service.pipelines.events.exporters',
      'service.pipelines.executions.processors.2',
    ]);
    const lines = err.message.split('\n');
    expect(lines).toHaveLength(err.problems.length);
    for (const line of lines) expect(line.startsWith(`${SOURCE}: `)).toBe(true);
  });
});

describe('loadPipelineFile', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'flakehouse-graph-'));
  });

  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function write(name: string, text: string): Promise<string> {
    const file = path.join(dir, name);
    await fs.writeFile(file, text);
    return file;
  }

  it('validates pipelines/default.yaml with its two pipelines', () => {
    const graph = loadPipelineFile(DEFAULT_FILE, registry, 'pipelines/default.yaml');
    expect(graph.source).toBe('pipelines/default.yaml');
    expect(graph.pipelines.map((p) => p.id)).toEqual(['executions', 'events']);
    expect(graph.pipelines[0]).toMatchObject({
      receivers: ['otlp', 'junit', 'native'],
      processors: ['normalize', 'identity', 'clustering', 'scoring', 'quarantine', 'rollups'],
      exporters: ['clickhouse', 'events'],
    });
  });

  it('reports a YAML syntax error with its line number', async () => {
    const file = await write('broken.yaml', 'receivers:\n  otlp: {}\n\tjunit: {}\nservice: {}\n');
    const err = configError(() => loadPipelineFile(file, registry, 'broken.yaml'));
    expect(err.source).toBe('broken.yaml');
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]!.path).toBe('line 3');
    expect(err.message).toMatch(/^broken\.yaml: line 3: .*[Tt]ab/);
  });

  it('reports a duplicate key as a YAML error on its line', async () => {
    const file = await write('dup.yaml', 'receivers:\n  otlp: {}\n  otlp: {}\nservice: {}\n');
    const err = configError(() => loadPipelineFile(file, registry, 'dup.yaml'));
    expect(err.problems.map((p) => p.path)).toEqual(['line 3']);
    expect(err.message).toMatch(/^dup\.yaml: line 3: .*unique/);
  });

  it('reports a problem in a file by path, under the display name', async () => {
    const text = (await fs.readFile(DEFAULT_FILE, 'utf8')).replace('verbosity: basic', 'verbosityy: basic');
    const file = await write('bad.yaml', text);
    const err = configError(() => loadPipelineFile(file, registry, 'bad.yaml'));
    expect(err.message).toBe('bad.yaml: exporters.debug.verbosityy: unknown key');
  });

  it('reports a file that cannot be read', () => {
    const err = configError(() => loadPipelineFile(path.join(dir, 'missing.yaml'), registry, 'missing.yaml'));
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]!.path).toBe('(file)');
    expect(err.message).toMatch(/^missing\.yaml: \(file\): cannot read/);
  });

  it('reports an empty file as a missing service section, not a crash', async () => {
    const file = await write('empty.yaml', '');
    const err = configError(() => loadPipelineFile(file, registry, 'empty.yaml'));
    expect(err.problems.map((p) => p.path)).toEqual(['service']);
  });

  it('reports an unresolved alias as a configuration problem', async () => {
    const file = await write('alias.yaml', 'receivers:\n  otlp: *nowhere\nservice:\n  pipelines: {}\n');
    const err = configError(() => loadPipelineFile(file, registry, 'alias.yaml'));
    expect(err.problems).toHaveLength(1);
    expect(err.message).toMatch(/^alias\.yaml: \(file\): invalid YAML: .*alias/i);
  });
});

describe('the shipped pipeline files', () => {
  it('every file under pipelines/ and pipelines/examples/ validates (the agent ones with their gateway variables set)', async () => {
    const env = { SERVICE_GATEWAY_ENDPOINT: 'http://127.0.0.1:4318', SERVICE_GATEWAY_GRPC_ENDPOINT: '127.0.0.1:4317', SERVICE_GATEWAY_TOKEN: 'fh_x' };
    const files: string[] = [];
    for (const sub of ['pipelines', 'pipelines/examples']) {
      for (const name of await fs.readdir(path.join(REPO_ROOT, sub))) if (name.endsWith('.yaml')) files.push(path.join(sub, name));
    }
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const graph = loadPipelineFile(path.join(REPO_ROOT, file), registry, file, env);
      expect(graph.pipelines.length, file).toBeGreaterThan(0);
    }
  });
});

describe("the pipeline thread's registry (receiver types by name only)", () => {
  const threadRegistry = processingRegistry(registry.receiverTypes());

  it('checks every shipped pipeline file as the full registry does, and builds no receiver', () => {
    const env = { SERVICE_GATEWAY_ENDPOINT: 'http://gateway.example:4318', SERVICE_GATEWAY_TOKEN: 'fh_test' };
    for (const file of ['pipelines/default.yaml', 'pipelines/agent.yaml']) {
      const full = loadPipelineFile(path.join(REPO_ROOT, file), registry, file, env);
      const thread = loadPipelineFile(path.join(REPO_ROOT, file), threadRegistry, file, env);
      expect(thread.pipelines).toEqual(full.pipelines);
      expect([...thread.components.keys()]).toEqual([...full.components.keys()]);
      for (const [key, spec] of thread.components) {
        if (spec.kind !== 'receiver') expect(spec.factory).toBe(full.components.get(key)!.factory);
      }
    }
    const standIn = threadRegistry.get('receiver', 'otlp');
    const real = registry.get('receiver', 'otlp');
    if (standIn?.kind !== 'receiver' || real?.kind !== 'receiver') throw new Error('otlp is a receiver type in both registries');
    expect(standIn.signals).toEqual(real.signals);
    expect(() => standIn.create({}, { id: 'otlp', logger: undefined as never })).toThrow(/not built here/);
  });

  it('still refuses an unknown receiver type, and a receiver in a pipeline of a signal it does not feed', () => {
    const doc = baseDoc();
    doc.receivers['nosuch'] = {};
    (doc.service.pipelines['executions']!['receivers'] as string[]).push('nosuch');
    expect(() => validatePipelineDoc(doc, threadRegistry, SOURCE)).toThrow(/unknown receiver type "nosuch"/);
    const events = baseDoc();
    events.service.pipelines['events']!['receivers'] = ['events', 'junit'];
    (events.service.pipelines['executions']!['receivers'] as string[]).splice(1, 1);
    expect(() => validatePipelineDoc(events, threadRegistry, SOURCE)).toThrow(/receiver "junit" does not support events pipelines/);
  });

  it('a registry without the receiver types refuses a file that lists receivers', () => {
    expect(() => validatePipelineDoc(baseDoc(), processingRegistry(), SOURCE)).toThrow(/unknown receiver type "otlp" \(known: none\)/);
  });
});

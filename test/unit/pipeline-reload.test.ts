// What a reload may change (src/pipeline/reload.ts): processors, exporters and connectors, never
// receivers, whose listeners and routes are bound. Graphs validated by the real registry.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { builtinRegistry } from '../../src/builtin/components.js';
import { validatePipelineDoc, type PipelineGraph } from '../../src/pipeline/graph.js';
import { reloadRefusal } from '../../src/pipeline/reload.js';

const BASE = readFileSync(path.resolve(import.meta.dirname, '../../pipelines/default.yaml'), 'utf8');
const graph = (yaml: string): PipelineGraph => validatePipelineDoc(parse(yaml), builtinRegistry(), 'pipeline.yaml');

describe('reloadRefusal', () => {
  it('lets processors and exporters change', () => {
    const filtered = BASE.replace('processors:\n  normalize: {}\n', 'processors:\n  normalize: {}\n  filter:\n    executions:\n      exclude: [{ title: "/^x/" }]\n').replace(
      'processors: [normalize, identity,',
      'processors: [normalize, filter, identity,',
    );
    expect(reloadRefusal(graph(BASE), graph(filtered))).toBeNull();
    expect(reloadRefusal(graph(BASE), graph(BASE.replace('exporters: [debug, notify, tracker, rca]', 'exporters: [notify, tracker, rca, debug]')))).toBeNull();
    // The order of a receivers list alone is no change.
    expect(reloadRefusal(graph(BASE), graph(BASE.replace('receivers: [otlp, junit, native]', 'receivers: [native, otlp, junit]')))).toBeNull();
  });

  it('refuses a receiver removed, naming it and the pipeline whose list changed', () => {
    const refusal = reloadRefusal(graph(BASE), graph(BASE.replace('  junit: {}', '').replace('receivers: [otlp, junit, native]', 'receivers: [otlp, native]')));
    expect(refusal).toMatch(/^pipeline\.yaml: receivers cannot change on reload/);
    expect(refusal).toContain('receivers.junit');
    expect(refusal).toContain('service.pipelines.executions.receivers');
    expect(refusal).not.toContain('receivers.otlp');
  });

  it('refuses a receiver configured differently', () => {
    const refusal = reloadRefusal(graph(BASE), graph(BASE.replace('  otlp: {}', '  otlp: { protocols: { grpc: { endpoint: "127.0.0.1:0" }, http: {} } }')));
    expect(refusal).toContain('receivers.otlp');
    expect(refusal).not.toContain('receivers.native');
    expect(refusal).not.toContain('service.pipelines');
  });
});

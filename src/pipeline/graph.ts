// Loads and validates a pipeline file the way the OpenTelemetry Collector does: every problem is
// reported with its path (`pipelines/default.yaml: processors.scoring.treshold: unknown key`),
// `${env:NAME}` references are expanded first (./env-expand.ts), and an executions pipeline whose
// order cannot fill in what its stages require is refused (./slots.ts).
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { zodIssuesToMessages } from '../config/errors.js';
import type { AnyFactory, ComponentKind, Signal, SlotDeclaration } from './component.js';
import { SIGNALS } from './component.js';
import type { Registry } from './registry.js';
import { expandEnv, type ExpandProblem } from './env-expand.js';
import { checkSlots, type SlotStage } from './slots.js';

export interface ComponentSpec {
  id: string;
  type: string;
  kind: ComponentKind;
  config: unknown;
  factory: AnyFactory;
}

export interface PipelineSpec {
  id: string;
  signal: Signal;
  receivers: string[];
  processors: string[];
  exporters: string[];
}

export interface PipelineGraph {
  source: string;
  components: Map<string, ComponentSpec>;
  pipelines: PipelineSpec[];
}

export class PipelineConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: { path: string; message: string }[],
  ) {
    super(problems.map((p) => `${source}: ${p.path}: ${p.message}`).join('\n'));
    this.name = 'PipelineConfigError';
  }
}

const SECTIONS = { receivers: 'receiver', processors: 'processor', exporters: 'exporter', connectors: 'connector' } as const;
type Section = keyof typeof SECTIONS;

const idList = z.array(z.string()).default([]);
const fileSchema = z
  .object({
    receivers: z.record(z.string(), z.unknown()).default({}),
    processors: z.record(z.string(), z.unknown()).default({}),
    exporters: z.record(z.string(), z.unknown()).default({}),
    connectors: z.record(z.string(), z.unknown()).default({}),
    service: z
      .object({
        pipelines: z.record(
          z.string(),
          z.object({ receivers: idList, processors: idList, exporters: idList }).strict(),
        ),
      })
      .strict(),
  })
  .strict();

const COMPONENT_ID = /^[a-z][a-z0-9_]*(\/[A-Za-z0-9_.-]+)?$/;

/** `env`: where `${env:NAME}` references are looked up (./env-expand.ts); the process's by default. */
export function loadPipelineFile(path: string, registry: Registry, displayName = path, env: NodeJS.ProcessEnv = process.env): PipelineGraph {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new PipelineConfigError(displayName, [{ path: '(file)', message: `cannot read: ${(err as Error).message}` }]);
  }
  // linePos is only filled in with prettyErrors, which also rewrites the message; count lines ourselves.
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter });
  if (doc.errors.length > 0) {
    throw new PipelineConfigError(
      displayName,
      doc.errors.map((e) => ({ path: `line ${e.linePos?.[0]?.line ?? lineCounter.linePos(e.pos[0]).line}`, message: e.message })),
    );
  }
  let raw: unknown;
  try {
    raw = doc.toJS();
  } catch (err) {
    // e.g. an unresolved alias, which parseDocument does not report as an error.
    throw new PipelineConfigError(displayName, [{ path: '(file)', message: `invalid YAML: ${(err as Error).message}` }]);
  }
  const unexpanded: ExpandProblem[] = [];
  const expanded = expandEnv(raw ?? {}, env, unexpanded);
  // Reported alone: a value left as `${env:…}` would only be refused again by its schema.
  if (unexpanded.length > 0) throw new PipelineConfigError(displayName, unexpanded);
  return validatePipelineDoc(expanded, registry, displayName);
}

export function validatePipelineDoc(raw: unknown, registry: Registry, source: string): PipelineGraph {
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) throw new PipelineConfigError(source, zodIssuesToMessages(source, parsed.error));
  const doc = parsed.data;
  const problems: { path: string; message: string }[] = [];
  const components = new Map<string, ComponentSpec>();
  // Defined but invalid (bad id, unknown type, bad config): already reported, so references to
  // them are not reported again as "not defined".
  const invalid = new Set<string>();

  for (const section of Object.keys(SECTIONS) as Section[]) {
    const kind = SECTIONS[section];
    for (const [id, rawConfig] of Object.entries(doc[section])) {
      if (!COMPONENT_ID.test(id)) {
        problems.push({ path: `${section}.${id}`, message: 'component ids look like type or type/name' });
        invalid.add(`${section}:${id}`);
        continue;
      }
      const type = id.split('/')[0]!;
      const factory = registry.get(kind, type);
      if (!factory) {
        const known = registry.types(kind).join(', ') || 'none';
        problems.push({ path: `${section}.${id}`, message: `unknown ${kind} type "${type}" (known: ${known})` });
        invalid.add(`${section}:${id}`);
        continue;
      }
      const cfg = factory.configSchema.safeParse(rawConfig ?? {});
      if (!cfg.success) {
        for (const p of zodIssuesToMessages(source, cfg.error)) {
          problems.push({ path: `${section}.${id}${p.path ? `.${p.path}` : ''}`, message: p.message });
        }
        invalid.add(`${section}:${id}`);
        continue;
      }
      const key = `${section}:${id}`;
      components.set(key, { id, type, kind, config: cfg.data, factory });
    }
  }

  const pipelines: PipelineSpec[] = [];
  const used = new Map<string, Set<'in' | 'out' | 'mid'>>();
  const markUsed = (key: string, how: 'in' | 'out' | 'mid'): void => {
    const set = used.get(key) ?? new Set();
    set.add(how);
    used.set(key, set);
  };

  for (const [pid, p] of Object.entries(doc.service.pipelines)) {
    const base = `service.pipelines.${pid}`;
    const signal = pid.split('/')[0] as Signal;
    if (!SIGNALS.includes(signal)) {
      problems.push({ path: base, message: `pipeline ids start with a signal: ${SIGNALS.join(' or ')}` });
      continue;
    }
    if (p.receivers.length === 0) problems.push({ path: `${base}.receivers`, message: 'a pipeline needs at least one receiver' });
    if (p.exporters.length === 0) problems.push({ path: `${base}.exporters`, message: 'a pipeline needs at least one exporter' });

    const check = (list: string[], role: 'receivers' | 'processors' | 'exporters'): void => {
      const seen = new Set<string>();
      list.forEach((id, i) => {
        const path = `${base}.${role}.${i}`;
        if (seen.has(id)) problems.push({ path, message: `"${id}" is listed twice` });
        seen.add(id);
        const section: Section = role;
        const own = components.get(`${section}:${id}`);
        const connector = role !== 'processors' ? components.get(`connectors:${id}`) : undefined;
        const spec = own ?? connector;
        if (!spec) {
          if (invalid.has(`${section}:${id}`) || (role !== 'processors' && invalid.has(`connectors:${id}`))) return;
          const where = role === 'processors' ? 'processors' : `${role} or connectors`;
          problems.push({ path, message: `"${id}" is not defined under ${where}` });
          return;
        }
        if (spec.factory.kind === 'connector') {
          const needed = role === 'receivers' ? spec.factory.to : spec.factory.from;
          if (needed !== signal) problems.push({ path, message: `connector "${id}" carries ${needed}, not ${signal}` });
          markUsed(`connectors:${id}`, role === 'receivers' ? 'in' : 'out');
          return;
        }
        if (!spec.factory.signals.includes(signal)) {
          problems.push({ path, message: `${spec.kind} "${id}" does not support ${signal} pipelines` });
        }
        markUsed(`${section}:${id}`, 'mid');
      });
    };
    const before = problems.length;
    check(p.receivers, 'receivers');
    check(p.processors, 'processors');
    check(p.exporters, 'exporters');
    // Slots are the WorkBatch's, so only executions pipelines have them; and only a pipeline whose
    // every reference resolved is checked (an invalid `identity` is not also reported missing).
    const stages = signal === 'executions' && problems.length === before ? slotStages(p, components) : null;
    if (stages) problems.push(...checkSlots(base, stages, registry));
    pipelines.push({ id: pid, signal, receivers: p.receivers, processors: p.processors, exporters: p.exporters });
  }

  for (const [key, spec] of components) {
    const how = used.get(key);
    const section = key.split(':')[0]!;
    if (!how) problems.push({ path: `${section}.${spec.id}`, message: 'defined but not used in any pipeline' });
    else if (spec.kind === 'connector' && !(how.has('in') && how.has('out'))) {
      problems.push({
        path: `${section}.${spec.id}`,
        message: 'a connector must be an exporter in one pipeline and a receiver in another',
      });
    }
  }

  if (problems.length > 0) throw new PipelineConfigError(source, problems);
  return { source, components, pipelines };
}

/** The processors and exporters of a pipeline with their declarations; null when a reference did
 * not resolve (an invalid component, already reported). */
function slotStages(p: { processors: string[]; exporters: string[] }, components: Map<string, ComponentSpec>): SlotStage[] | null {
  const stages: SlotStage[] = [];
  for (const [index, id] of p.processors.entries()) {
    const f = components.get(`processors:${id}`)?.factory;
    if (f?.kind !== 'processor') return null;
    const decl: SlotDeclaration = f;
    stages.push({ id, role: 'processors', index, requires: decl.requires ?? [], provides: decl.provides ?? [] });
  }
  for (const [index, id] of p.exporters.entries()) {
    const f = (components.get(`exporters:${id}`) ?? components.get(`connectors:${id}`))?.factory;
    if (f?.kind !== 'exporter' && f?.kind !== 'connector') return null;
    stages.push({ id, role: 'exporters', index, requires: f.requires ?? [], provides: [] });
  }
  return stages;
}

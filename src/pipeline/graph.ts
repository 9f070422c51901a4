// Loads and validates a pipeline file the way the OpenTelemetry Collector does: every problem is
// reported with its path (`pipelines/default.yaml: processors.scoring.treshold: unknown key`),
// `${env:NAME}` references are expanded first (./env-expand.ts), and an executions pipeline whose
// order cannot fill in what its stages require is refused (./slots.ts).
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { zodIssuesToMessages } from '../../client/src/contract/config/errors.js';
import type { AnyFactory, ComponentKind, ConnectorFactory, Signal, Slot, SlotDeclaration } from './component.js';
import { SIGNALS } from './component.js';
import type { Registry } from './registry.js';
import { expandEnv, type ExpandProblem } from './env-expand.js';
import { checkSlots, RECEIVED, type SlotStage } from './slots.js';
import type { ExtensionSpec } from './extension.js';
import { defaultRepositoriesSpec, defaultStorageSpec } from './extensions.js';

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
  /** service.extensions in order, plus the default `file_storage` when none of them is a storage extension and the default `clickhouse_storage` when none offers repositories. */
  extensions: ExtensionSpec[];
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
    extensions: z.record(z.string(), z.unknown()).default({}),
    service: z
      .object({
        extensions: idList,
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

  /** Executions pipelines whose references all resolved: their slots are checked once the routes are known. */
  const slotChecked = new Set<string>();
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
    if (signal === 'executions' && problems.length === before) slotChecked.add(pid);
    pipelines.push({ id: pid, signal, receivers: p.receivers, processors: p.processors, exporters: p.exporters });
  }
  problems.push(...checkRoutes(pipelines, components, new Set(Object.keys(doc.connectors))));
  problems.push(...checkPipelineSlots(pipelines, slotChecked, components, registry));

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

  const extensions = checkExtensions(doc.extensions, doc.service.extensions, registry, source, problems);

  if (problems.length > 0) throw new PipelineConfigError(source, problems);
  return { source, components, pipelines, extensions };
}

/**
 * The `extensions` section and `service.extensions` (types registered like components, see
 * ./extension.ts): each defined extension
 * validated like a component, each listed one defined, each defined one listed. When none listed
 * is a storage extension, a default `file_storage` is added: components' durable state always has
 * a place; when none is a repositories extension, a default `clickhouse_storage`: processors and
 * exporters always have their repositories (docs/pipeline.md "Extensions").
 */
function checkExtensions(defined: Record<string, unknown>, listed: readonly string[], registry: Registry, source: string, problems: { path: string; message: string }[]): ExtensionSpec[] {
  const specs = new Map<string, ExtensionSpec>();
  const invalid = new Set<string>();
  for (const [id, rawConfig] of Object.entries(defined)) {
    const path = `extensions.${id}`;
    if (!COMPONENT_ID.test(id)) {
      problems.push({ path, message: 'extension ids look like type or type/name' });
      invalid.add(id);
      continue;
    }
    const type = id.split('/')[0]!;
    const factory = registry.extension(type);
    if (!factory) {
      problems.push({ path, message: `unknown extension type "${type}" (known: ${registry.extensionTypes().join(', ') || 'none'})` });
      invalid.add(id);
      continue;
    }
    const cfg = factory.configSchema.safeParse(rawConfig ?? {});
    if (!cfg.success) {
      for (const p of zodIssuesToMessages(source, cfg.error)) problems.push({ path: `${path}${p.path ? `.${p.path}` : ''}`, message: p.message });
      invalid.add(id);
      continue;
    }
    specs.set(id, { id, type, config: cfg.data, factory });
  }
  const out: ExtensionSpec[] = [];
  listed.forEach((id, i) => {
    const path = `service.extensions.${i}`;
    if (listed.indexOf(id) !== i) problems.push({ path, message: `"${id}" is listed twice` });
    else if (specs.has(id)) out.push(specs.get(id)!);
    else if (!invalid.has(id)) problems.push({ path, message: `"${id}" is not defined under extensions` });
  });
  for (const id of specs.keys()) {
    if (!listed.includes(id)) problems.push({ path: `extensions.${id}`, message: 'defined but not listed under service.extensions' });
  }
  const fallback = out.some((e) => e.factory.storage) ? undefined : defaultStorageSpec(registry);
  if (fallback) out.push(fallback);
  const repositories = out.some((e) => e.factory.repositories) ? undefined : defaultRepositoriesSpec(registry);
  if (repositories) out.push(repositories);
  return out;
}

/**
 * How executions pipelines connect: the durable queue feeds one of them (the jobs its receivers
 * accept), and connectors that route (the `routing` connector) feed the others inside the same
 * lease. Refused, each with its path:
 * - two executions pipelines fed by receivers: a job is processed once, by one pipeline, so which
 *   one would be a guess; route from one pipeline instead;
 * - a pipeline fed both by receivers and by a routing connector;
 * - a route to a pipeline that does not exist, is not an executions pipeline, or does not list the
 *   connector among its receivers; and a pipeline listing the connector that no route reaches;
 * - a loop of routes.
 */
function checkRoutes(pipelines: readonly PipelineSpec[], components: Map<string, ComponentSpec>, connectorIds: ReadonlySet<string>): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const routerOf = (id: string): ConnectorFactory | undefined => {
    const f = components.get(`connectors:${id}`)?.factory;
    return f?.kind === 'connector' && f.from === 'executions' && f.to === 'executions' ? f : undefined;
  };
  const executions = pipelines.filter((p) => p.signal === 'executions');
  const byId = new Map(pipelines.map((p) => [p.id, p]));
  // Connectors as defined (an invalid one is already reported): they never count as receivers here.
  const fedByReceivers = executions.filter((p) => p.receivers.some((r) => !connectorIds.has(r)));
  for (const p of fedByReceivers.slice(1)) {
    problems.push({
      path: `service.pipelines.${p.id}.receivers`,
      message: `${fedByReceivers[0]!.id} already takes the jobs receivers accept, and a job is processed by one pipeline: list these receivers there and send runs here with a routing connector`,
    });
  }
  for (const p of executions) {
    const routed = p.receivers.filter((r) => routerOf(r));
    if (routed.length > 0 && fedByReceivers.includes(p)) {
      problems.push({ path: `service.pipelines.${p.id}.receivers`, message: `a pipeline takes runs from receivers or from a routing connector (${routed.join(', ')}), not both` });
    }
  }
  // Each routing connector: its targets against the pipelines that list it as a receiver.
  const edges = new Map<string, Set<string>>();
  for (const [key, spec] of components) {
    const f = spec.factory;
    if (!key.startsWith('connectors:') || f.kind !== 'connector' || !f.routesTo) continue;
    const targets = f.routesTo(spec.config);
    const reached = new Set<string>();
    for (const t of targets) {
      const path = `connectors.${spec.id}.${t.path}`;
      const target = byId.get(t.pipeline);
      if (!target) problems.push({ path, message: `no pipeline "${t.pipeline}" under service.pipelines` });
      else if (target.signal !== f.to) problems.push({ path, message: `"${t.pipeline}" is a ${target.signal} pipeline; ${spec.id} routes ${f.to}` });
      else if (!target.receivers.includes(spec.id)) problems.push({ path, message: `"${t.pipeline}" does not list ${spec.id} among its receivers` });
      else reached.add(t.pipeline);
    }
    for (const p of pipelines) {
      const i = p.receivers.indexOf(spec.id);
      if (i >= 0 && !reached.has(p.id) && !targets.some((t) => t.pipeline === p.id)) {
        problems.push({ path: `service.pipelines.${p.id}.receivers.${i}`, message: `${spec.id} never routes here: name "${p.id}" in its default_pipelines or a route's pipelines` });
      }
    }
    for (const from of pipelines.filter((p) => p.exporters.includes(spec.id))) {
      const set = edges.get(from.id) ?? new Set<string>();
      for (const t of reached) set.add(t);
      edges.set(from.id, set);
    }
  }
  const loop = findLoop(edges);
  if (loop) problems.push({ path: `service.pipelines.${loop[0]}.exporters`, message: `routes go round in a loop: ${loop.join(' → ')}` });
  return problems;
}

function findLoop(edges: Map<string, Set<string>>): string[] | null {
  const done = new Set<string>();
  const visit = (node: string, path: string[]): string[] | null => {
    const at = path.indexOf(node);
    if (at >= 0) return [...path.slice(at), node];
    if (done.has(node)) return null;
    for (const next of edges.get(node) ?? []) {
      const loop = visit(next, [...path, node]);
      if (loop) return loop;
    }
    done.add(node);
    return null;
  };
  for (const node of edges.keys()) {
    const loop = visit(node, []);
    if (loop) return loop;
  }
  return null;
}

/**
 * The slot check of every executions pipeline whose references resolved, upstream first: a
 * pipeline fed by a routing connector receives the per-run slots (`runs`, and `executions` when
 * every pipeline routing to it filled them); the lease-wide ones (identities, test states, …) stay
 * with the pipeline that computed them.
 */
function checkPipelineSlots(
  pipelines: readonly PipelineSpec[],
  checked: ReadonlySet<string>,
  components: Map<string, ComponentSpec>,
  registry: Registry,
): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const filledAtEnd = new Map<string, Set<Slot>>();
  const pending = pipelines.filter((p) => checked.has(p.id));
  // Upstream first; a loop (already reported) ends the walk.
  for (let progress = true; progress && pending.length > 0; ) {
    progress = false;
    for (const p of [...pending]) {
      const sources = pipelines.filter((q) => q.signal === 'executions' && q.exporters.some((e) => p.receivers.includes(e) && components.has(`connectors:${e}`)));
      if (sources.some((q) => checked.has(q.id) && !filledAtEnd.has(q.id))) continue;
      const received = new Set<Slot>(RECEIVED);
      if (sources.length > 0 && sources.every((q) => filledAtEnd.get(q.id)?.has('executions'))) received.add('executions');
      const stages = slotStages(p, components);
      if (stages) {
        problems.push(...checkSlots(`service.pipelines.${p.id}`, stages, registry, received));
        const filled = new Set(received);
        for (const s of stages) if (s.role === 'processors') for (const slot of s.provides) filled.add(slot);
        filledAtEnd.set(p.id, filled);
      }
      pending.splice(pending.indexOf(p), 1);
      progress = true;
    }
  }
  return problems;
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

// Reloading the pipeline file (SIGHUP, Daemon.reloadPipeline): the processing half of the graph
// (processors, exporters, connectors and their loops) is rebuilt from the new file and swapped in
// once the lease in hand has finished; receivers stay, their listeners and routes being bound.
// Nothing queued is lost: jobs wait in the durable queue while no runtime leases, and the new one
// takes them. The same class runs on whichever thread processes (daemon.ts or thread/worker.ts).
import type { DomainEvent } from '../domain/events.js';
import type { Registry } from './registry.js';
import { loadPipelineFile, type PipelineGraph } from './graph.js';
import type { PipelineHandle, PipelineRuntime, WorkerStats } from './runtime.js';

/** What a reload answers: the new graph runs, or why the old one still does. */
export type ReloadResult = { ok: true } | { ok: false; error: string };

/** Reads and validates a pipeline file; a refusal names the file and the YAML path (PipelineConfigError). */
export function readPipelineFile(file: string, registry: Registry, displayName: string, env: NodeJS.ProcessEnv = process.env): { ok: true; graph: PipelineGraph } | { ok: false; error: string } {
  try {
    return { ok: true, graph: loadPipelineFile(file, registry, displayName, env) };
  } catch (err) {
    return { ok: false, error: errorMessage(err) };
  }
}

/**
 * Why `next` cannot replace `running` on a reload, or null. Receivers are bound (a listener, a
 * route), so the receivers section and every pipeline's receivers (connectors aside) must stay as
 * they are; so must the admission checks of executions processors (memory_limiter), which run in
 * front of the queue with the receivers.
 */
export function reloadRefusal(running: PipelineGraph, next: PipelineGraph): string | null {
  const changed: string[] = [];
  const receivers = (g: PipelineGraph): Map<string, string> =>
    new Map([...g.components].filter(([key]) => key.startsWith('receivers:')).map(([key, c]) => [key.slice('receivers:'.length), `${c.type}:${stableJson(c.config)}`]));
  const before = receivers(running);
  const after = receivers(next);
  for (const id of new Set([...before.keys(), ...after.keys()])) if (before.get(id) !== after.get(id)) changed.push(`receivers.${id}`);
  const lists = (g: PipelineGraph): Map<string, string> =>
    new Map(g.pipelines.map((p) => [p.id, [...p.receivers].filter((id) => g.components.has(`receivers:${id}`)).sort().join(',')]));
  const listsBefore = lists(running);
  const listsAfter = lists(next);
  for (const id of new Set([...listsBefore.keys(), ...listsAfter.keys()])) {
    if ((listsBefore.get(id) ?? '') !== (listsAfter.get(id) ?? '')) changed.push(`service.pipelines.${id}.receivers`);
  }
  if (changed.length > 0) {
    return `${next.source}: receivers cannot change on reload (their listeners and routes are bound; restart to change them): ${changed.join(', ')} differ from the running graph`;
  }
  const admissionsBefore = admissions(running);
  const admissionsAfter = admissions(next);
  const admissionChanged = [...new Set([...admissionsBefore.keys(), ...admissionsAfter.keys()])].filter((id) => admissionsBefore.get(id) !== admissionsAfter.get(id));
  if (admissionChanged.length > 0) {
    return `${next.source}: ${admissionChanged.map((id) => `processors.${id}`).join(', ')}: its admission check runs with the receivers, which a reload keeps; restart to change it`;
  }
  return null;
}

/** Executions processors with a door check, by id: their type and config. */
function admissions(g: PipelineGraph): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of g.pipelines) {
    if (p.signal !== 'executions') continue;
    for (const id of p.processors) {
      const spec = g.components.get(`processors:${id}`);
      if (spec?.factory.kind === 'processor' && spec.factory.createAdmission) out.set(id, `${spec.type}:${stableJson(spec.config)}`);
    }
  }
  return out;
}

/**
 * The processing runtime of the running graph, swappable for one built from a new graph. It is
 * the PipelineHandle the daemon shows: its event listeners and counters carry over a swap.
 */
export class ReloadablePipeline implements PipelineHandle {
  private current: PipelineRuntime;
  private running: PipelineGraph;
  /** Set while a swap is under way: `exclusive` and `shutdown` wait for it. */
  private swapping: Promise<void> | null = null;
  private reloads: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly listeners = new Set<(e: DomainEvent) => void>();

  /** `build` makes a processing runtime (role 'processing' or, without receivers, 'all') of a graph. */
  constructor(
    graph: PipelineGraph,
    private readonly build: (graph: PipelineGraph) => PipelineRuntime,
  ) {
    this.running = graph;
    this.current = this.adopt(build(graph));
  }

  get stats(): WorkerStats {
    return this.current.stats;
  }

  /** The graph the runtime runs. */
  get graph(): PipelineGraph {
    return this.running;
  }

  start(): Promise<void> {
    return this.current.start();
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    while (this.swapping) await this.swapping;
    await this.current.shutdown();
  }

  async exclusive<T>(f: () => Promise<T>): Promise<T> {
    while (this.swapping) await this.swapping;
    return this.current.exclusive(f);
  }

  onEvent(listener: (e: DomainEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Swaps in the processing components of `next`: refused (the running graph kept) when its
   * receivers differ or a component cannot be built; otherwise the lease in hand finishes, the
   * running components stop, and the new ones start and take the queued jobs. One at a time.
   */
  reload(next: PipelineGraph): Promise<ReloadResult> {
    const run = this.reloads.then(() => this.swap(next));
    this.reloads = run.catch(() => undefined);
    return run;
  }

  private async swap(next: PipelineGraph): Promise<ReloadResult> {
    if (this.closed) return { ok: false, error: 'the pipeline is shutting down' };
    const refusal = reloadRefusal(this.running, next);
    if (refusal) return { ok: false, error: refusal };
    let fresh: PipelineRuntime;
    try {
      fresh = this.build(next);
    } catch (err) {
      return { ok: false, error: `${next.source}: ${errorMessage(err)}` };
    }
    let result: ReloadResult = { ok: true };
    const swapped = (async () => {
      const prev = this.current;
      // Stops leasing (a lease in hand finishes; none starts), then stops the components.
      await prev.shutdown();
      // A maintenance hold on the old runtime (retention) ends before the new one leases.
      await prev.exclusive(() => Promise.resolve());
      try {
        await this.startWithCounters(fresh, prev);
        this.current = fresh;
        this.running = next;
      } catch (err) {
        result = { ok: false, error: `${next.source}: ${errorMessage(err)} (the running graph was started again)` };
        await fresh.shutdown().catch(() => undefined);
        // The old components are stopped: the running graph's are built and started afresh.
        const again = this.build(this.running);
        await this.startWithCounters(again, prev);
        this.current = again;
      }
    })();
    this.swapping = swapped;
    try {
      await swapped;
    } finally {
      this.swapping = null;
    }
    return result;
  }

  /** Starts `fresh` counting on from `prev` (the counters are monotonic; /metrics reads them). */
  private async startWithCounters(fresh: PipelineRuntime, prev: PipelineRuntime): Promise<void> {
    Object.assign(fresh.stats, prev.stats);
    this.adopt(fresh);
    await fresh.start();
  }

  private adopt(runtime: PipelineRuntime): PipelineRuntime {
    runtime.onEvent((e) => {
      for (const l of this.listeners) l(e);
    });
    return runtime;
  }
}

function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b))) : v,
  );
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

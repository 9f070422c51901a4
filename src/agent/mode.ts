// Agent mode is chosen by the graph, not by a flag: a pipeline file none of whose components needs
// the store (each factory declares `needsStore`, src/pipeline/component.ts) runs as an agent
// (src/main/agent.ts), with no database; any other runs as the full daemon (src/main/daemon.ts).
import type { PipelineGraph } from '../pipeline/graph.js';

/**
 * The components of the graph's pipelines that need the store, as `section.id` (`exporters.clickhouse`), as the pipeline file spells their place,
 * in pipeline order; empty for a graph that runs as an agent. Components defined in the file but
 * listed by no pipeline are never built, so they do not count.
 */
export function storeUsers(graph: PipelineGraph): string[] {
  const out = new Set<string>();
  const check = (sections: readonly string[], id: string): void => {
    for (const section of sections) {
      const spec = graph.components.get(`${section}:${id}`);
      if (!spec) continue;
      // Undeclared counts as needing it: only a factory that says so runs without a store.
      if (spec.factory.needsStore !== false) out.add(`${section}.${id}`);
      return;
    }
  };
  for (const p of graph.pipelines) {
    for (const id of p.receivers) check(['receivers', 'connectors'], id);
    for (const id of p.processors) check(['processors'], id);
    for (const id of p.exporters) check(['exporters', 'connectors'], id);
  }
  return [...out];
}

/** Whether `flakehouse serve` runs this graph as an agent: no component of it needs the store. */
export function isAgentGraph(graph: PipelineGraph): boolean {
  return storeUsers(graph).length === 0;
}

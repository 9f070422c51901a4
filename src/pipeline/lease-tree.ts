// The pipelines one lease goes through. The queue feeds one executions pipeline (the graph refuses
// a second); a routing connector among its exporters sends each run on to other executions
// pipelines (src/connectors/routing.ts), inside the same lease. So a lease is processed as a tree:
// every pipeline's processors first (the fed one, then each routed one over its runs, depth
// first), so that the lease's plan can be frozen once with the events of all of them; then every
// pipeline's exporters; then one ack. Routing is a function of the run, so a redelivered lease
// builds the same tree.
import type { JobRouter } from './component.js';
import { WorkBatch, type WorkItem } from './work-batch.js';

/** What the walk needs of a pipeline: its id, its routers and the pipelines they feed. */
export interface RoutablePipeline<P> {
  id: string;
  /** The routing connectors among its exporters. */
  routers: readonly JobRouter[];
  /** Whether anything besides its routers reads the batch after its processors (an exporter). */
  exportsItself: boolean;
  /** The pipelines it can route to, by id. */
  routed(id: string): P | undefined;
}

export interface RoutedBatch<P> {
  pipeline: P;
  batch: WorkBatch;
}

/**
 * Runs `processors` over the fed pipeline's batch and every routed batch, in a fixed order, and
 * returns each pipeline with the batch it processed (the fed one first). A routed batch's
 * `leaseId` is `<lease>/<pipeline>`: its writes deduplicate apart from the fed pipeline's.
 */
export async function processLeaseTree<P extends RoutablePipeline<P>>(
  root: P,
  batch: WorkBatch,
  processors: (pipeline: P, batch: WorkBatch) => Promise<void>,
): Promise<RoutedBatch<P>[]> {
  const out: RoutedBatch<P>[] = [];
  const walk = async (pipeline: P, b: WorkBatch): Promise<void> => {
    await processors(pipeline, b);
    out.push({ pipeline, batch: b });
    for (const [target, items] of routeItems(pipeline, b)) {
      const next = pipeline.routed(target);
      if (!next) throw new Error(`${pipeline.id} routes to ${target}, which is not running`);
      await walk(next, new WorkBatch({ leaseId: `${batch.leaseId}/${target}`, items, now: b.now }));
    }
  };
  await walk(root, batch);
  return out;
}

/** The runs of a batch by the pipeline each goes to, in the order of first use. */
function routeItems<P>(pipeline: RoutablePipeline<P>, batch: WorkBatch): Map<string, WorkItem[]> {
  const groups = new Map<string, WorkItem[]>();
  if (pipeline.routers.length === 0) return groups;
  const targets = batch.items.map((item) => pipeline.routers.flatMap((route) => route(item.job)));
  batch.items.forEach((item, i) => {
    const to = targets[i]!;
    // A run handed to one pipeline and read by nothing else here moves as it is; one read in two
    // places is copied, so a processor that rewrites it (filter, attributes) changes one copy.
    const shared = to.length > 1 || pipeline.exportsItself;
    for (const target of to) {
      const list = groups.get(target) ?? [];
      list.push(shared ? copyItem(item) : item);
      groups.set(target, list);
    }
  });
  return groups;
}

function copyItem(item: WorkItem): WorkItem {
  return structuredClone(item);
}

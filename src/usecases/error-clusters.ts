// The clusters page (the `clusters.list` procedure): the project's error clusters over the last
// `days`, with their counts and RCA.
import type { ClusterRepo } from '../store/clusters.js';

export async function errorClusters(d: { clusters: Pick<ClusterRepo, 'list'> }, projectId: string, days: number, limit: number, now: number) {
  return { items: await d.clusters.list(projectId, { days, limit, now }) };
}

// Error signatures and the LSH band index used to find cluster candidates.
import type { Store } from './client.js';

export class SignatureRepo {
  constructor(private readonly store: Store) {}

  /** signature id → cluster id, for the known ones among `ids`. */
  async clusters(projectId: string, ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.store.query<{ signature_id: string; cluster_id: string }>(
      `SELECT signature_id, any(cluster_id) AS cluster_id FROM ${this.store.table('error_signatures')}
       WHERE project_id = {projectId:UUID} AND signature_id IN {ids:Array(String)} GROUP BY signature_id`,
      { projectId, ids },
    );
    return new Map(rows.map((r) => [r.signature_id, r.cluster_id]));
  }

  /** Signatures sharing at least one band key: an indexed lookup on (project_id, band_key), capped. */
  async candidates(projectId: string, keys: readonly string[]): Promise<{ id: string; clusterId: string; sketch: Uint32Array }[]> {
    if (keys.length === 0) return [];
    const rows = await this.store.query<{ signature_id: string; cluster_id: string; sketch: number[] }>(
      `SELECT signature_id, any(cluster_id) AS cluster_id, any(sketch) AS sketch FROM ${this.store.table('error_signatures')}
       WHERE project_id = {projectId:UUID} AND signature_id IN (
         SELECT DISTINCT signature_id FROM ${this.store.table('signature_bands')}
         WHERE project_id = {projectId:UUID} AND band_key IN {keys:Array(String)} LIMIT 2000)
       GROUP BY signature_id`,
      { projectId, keys },
    );
    return rows.map((r) => ({ id: r.signature_id, clusterId: r.cluster_id, sketch: Uint32Array.from(r.sketch) }));
  }
}

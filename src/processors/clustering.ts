// `clustering` processor: every failed execution gets an error signature (secrets scrubbed,
// message and top frames normalised) and a cluster: a new signature joins the most similar
// existing one when their estimated Jaccard similarity exceeds SERVICE_CLUSTER_THRESHOLD.
// Candidates come from an indexed lookup of equal LSH band keys, so the search stays sub-linear
// in the number of signatures. It runs before the exporter because the ids are stored on the
// executions (rows are immutable once written).
import { z } from 'zod';
import { bandKeys, bestCluster, lshParams, LshIndex, MinHasher } from '../domain/minhash.js';
import { errorSignature, type ErrorSignature } from '../domain/signature.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import { Yielder } from '../pipeline/yield.js';

const config = z.object({ threshold: z.number().min(0).max(1).optional() }).strict();

export const clusteringProcessorFactory = defineProcessor({
  type: 'clustering',
  description: 'error signatures and MinHash/LSH clusters on failed executions',
  configSchema: config,
  // Signature and cluster ids go onto the executions identity built.
  requires: ['executions'],
  provides: ['signatures'],
  start: (host, cfg, { id }) => {
    const repo = host.extensions.repositories('processor', id).signatures;
    const threshold = cfg.threshold ?? host.settings.clusterThreshold;
    const hasher = new MinHasher();
    // signature id → cluster id; a signature's cluster never changes once assigned. Only facts read
    // back from storage are cached: what a lease creates may still fail to commit, and its retry
    // must write those signatures again.
    const known = new Map<string, string>();
    // The same failure text recurs run after run: its signature is computed once (pure function).
    const signatures = new Map<string, ErrorSignature>();
    const signatureOf = (projectId: string, err: { type?: string; message: string; stack?: string }): ErrorSignature => {
      const key = `${projectId}\u0000${err.type ?? ''}\u0000${err.message}\u0000${err.stack ?? ''}`;
      let sig = signatures.get(key);
      if (!sig) {
        sig = errorSignature(projectId, err);
        if (signatures.size >= 20_000) signatures.delete(signatures.keys().next().value!);
        signatures.set(key, sig);
      }
      return sig;
    };
    return {
      async processBatch(batch) {
        const { bands } = lshParams(threshold);
        const y = new Yielder(500);
        // 1. Signatures of this lease's failures, per project.
        const perProject = new Map<string, Map<string, { sig: ErrorSignature; executionId: string; at: number }>>();
        for (const item of batch.items) {
          for (const e of item.executions) {
            const err = e.input.error;
            if (!err || (e.input.status !== 'fail' && e.input.status !== 'flaky')) continue;
            const sig = signatureOf(e.projectId, err);
            e.signatureId = sig.hash;
            const sigs = perProject.get(e.projectId) ?? new Map<string, { sig: ErrorSignature; executionId: string; at: number }>();
            if (!sigs.has(sig.hash)) sigs.set(sig.hash, { sig, executionId: e.id, at: e.input.startedAt });
            perProject.set(e.projectId, sigs);
            await y.tick();
          }
        }
        // Clusters of the signatures this lease creates (not cached beyond the lease).
        const created = new Map<string, string>();
        for (const [projectId, sigs] of perProject) {
          // 2. Already known signatures keep their cluster.
          const unknown = [...sigs.keys()].filter((h) => !known.has(`${projectId}:${h}`));
          for (const [h, c] of await repo.clusters(projectId, unknown)) known.set(`${projectId}:${h}`, c);
          // 3. New ones: candidates by band key — one lookup for all of the lease's new signatures,
          //    then matched in memory (stored ones, and earlier new ones of this lease).
          const pending: { hash: string; sig: ErrorSignature; executionId: string; at: number; sketch: Uint32Array; keys: string[] }[] = [];
          for (const [hash, { sig, executionId, at }] of sigs) {
            if (known.has(`${projectId}:${hash}`)) continue;
            const sketch = hasher.sketch(sig.tokens);
            pending.push({ hash, sig, executionId, at, sketch, keys: bandKeys(sketch, bands) });
            await y.tick(10);
          }
          if (pending.length === 0) continue;
          const stored = await repo.candidates(projectId, [...new Set(pending.flatMap((p) => p.keys))]);
          const index = new LshIndex(bands);
          const info = new Map<string, { clusterId: string; sketch: Uint32Array }>();
          for (const c of stored) {
            index.add(c.id, c.sketch);
            info.set(c.id, { clusterId: c.clusterId, sketch: c.sketch });
          }
          for (const { hash, sig, executionId, at, sketch, keys } of pending) {
            const candidates = [...index.candidates(sketch)].map((id) => ({ id, ...info.get(id)! }));
            const best = bestCluster(sketch, candidates, threshold);
            const clusterId = best?.clusterId ?? hash;
            created.set(`${projectId}:${hash}`, clusterId);
            index.add(hash, sketch);
            info.set(hash, { clusterId, sketch });
            batch.signatures.push({
              projectId,
              signatureId: hash,
              clusterId,
              errorType: sig.type,
              normalizedMessage: sig.normalizedMessage,
              frames: sig.frames,
              sketch,
              bandKeys: keys,
              similarity: best?.similarity ?? 1,
              firstSeenAt: at,
              exampleExecutionId: executionId,
            });
          }
        }
        // 4. Ids onto the executions.
        for (const item of batch.items) {
          for (const e of item.executions) {
            if (e.signatureId) {
              const key = `${e.projectId}:${e.signatureId}`;
              e.clusterId = known.get(key) ?? created.get(key) ?? e.signatureId;
            }
          }
        }
        // Only after step 4, which reads it.
        if (known.size > 500_000) known.clear();
      },
    };
  },
});

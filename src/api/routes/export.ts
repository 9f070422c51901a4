// GET /v1/export (docs/contract.md §6): the token's project as gzipped NDJSON, streamed. Bytes flow
// ClickHouse → gzip → socket with backpressure at every step: a slow client slows the query
// instead of filling memory. An error after the headers went out can only cut the response
// short; the missing summary line tells the client the file is incomplete.
import { Readable, pipeline, type Duplex } from 'node:stream';
import { createGzip } from 'node:zlib';
import { projectPrefix } from '../../artifacts/keys.js';
import type { ArtifactInventory } from '../../project-export/artifacts.js';
import { exportLines, planExport, type ExportPlan } from '../../project-export/project-export.js';
import type { OpenedStore } from '../../store/client.js';
import { errors } from '../../errors.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

/** Level 1: gzip is the export's bottleneck, and level 6 makes the file only ~8% smaller at half the speed. */
const GZIP_LEVEL = 1;

/** The exports in progress, one per project: each holds a ClickHouse stream while its client reads. */
export class RunningExports {
  private readonly byProject = new Map<string, { body?: Duplex }>();

  /** False when the project already has one running. */
  claim(projectId: string): boolean {
    if (this.byProject.has(projectId)) return false;
    this.byProject.set(projectId, {});
    return true;
  }

  attach(projectId: string, body: Duplex): void {
    const entry = this.byProject.get(projectId);
    if (entry) entry.body = body;
  }

  release(projectId: string): void {
    this.byProject.delete(projectId);
  }

  /**
   * Cuts every export short, for shutdown: a client that reads slowly (or not at all) would
   * otherwise hold the server open. Its download ends without the summary line.
   */
  abortAll(): void {
    for (const entry of this.byProject.values()) entry.body?.destroy(new Error('the server is shutting down'));
  }
}

export interface ExportRouteDeps {
  store: OpenedStore;
  /** The artifact bucket's lister; null when artifact storage is off. */
  artifacts: ArtifactInventory | null;
  running: RunningExports;
}

export function exportRoutes(deps: ExportRouteDeps): AnyRouteDef[] {
  const running = deps.running;
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/export',
      summary: "Export the project's rows and artifact inventory as gzipped NDJSON",
      tags: ['export'],
      auth: { kind: 'token', anyOf: ['read'] },
      produces: ['application/gzip'],
      async handler({ principal, reply }) {
        const projectId = principal!.projectId;
        if (!running.claim(projectId)) throw errors.exportRunning();
        let plan: ExportPlan | null;
        try {
          plan = await planExport(deps.store, projectId);
        } catch (err) {
          running.release(projectId);
          throw err;
        }
        if (!plan) {
          running.release(projectId);
          throw errors.notFound('project not found');
        }
        const abort = new AbortController();
        const now = new Date();
        const source = Readable.from(exportLines(deps.store, plan, { artifacts: deps.artifacts, artifactPrefix: projectPrefix(projectId), signal: abort.signal, now }), {
          // Byte mode with a small mark: one ClickHouse chunk waits here at most, not 16.
          objectMode: false,
          highWaterMark: 64 * 1024,
        });
        // Fastify destroys `body` when the client hangs up and logs a failure of it; either way the
        // pipeline ends the generator, which cancels the ClickHouse stream.
        const body = pipeline(source, createGzip({ level: GZIP_LEVEL, chunkSize: 256 * 1024 }), () => {
          running.release(projectId);
          abort.abort();
        });
        running.attach(projectId, body);
        // Returning the reply tells fastify the response is under way (undefined would end it empty).
        return reply
          .header('content-type', 'application/gzip')
          .header('content-disposition', `attachment; filename="service-${plan.slug}-${now.toISOString().slice(0, 10)}.ndjson.gz"`)
          .send(body);
      },
    }),
  ];
}

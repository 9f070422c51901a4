// GET /v1/export (docs/contract.md §6): the token's project as gzipped NDJSON, streamed. Bytes flow
// ClickHouse → gzip → socket with backpressure at every step: a slow client slows the query
// instead of filling memory. What can be checked before the 200 is: the project named (403 for
// another one, as the procedures answer), and the artifact bucket (502 when it cannot be listed).
// A failure after the headers went out ends the file with an `error` line and no summary line,
// the gzip stream closed properly, so the client can read what came and tell it is incomplete.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { Readable, pipeline, type Duplex } from 'node:stream';
import { createGzip } from 'node:zlib';
import { projectPrefix } from '../../../client/src/contract/artifact-keys.js';
import type { ArtifactInventory } from '../../project-export/artifacts.js';
import { exportErrorLine, exportLines, planExport, type ExportPlan } from '../../project-export/project-export.js';
import type { OpenedStore } from '../../store/client.js';
import { errors } from '../../errors/catalogue.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

/** Level 1: gzip is the export's bottleneck, and level 6 makes the file only ~8% smaller at half the speed. */
const GZIP_LEVEL = 1;
/** How long the artifact bucket has to answer the check made before the 200. */
const STORE_PROBE_TIMEOUT_MS = 10_000;

/** The project a caller named (x-flakehouse-project, or `?project=` as the dashboard's links do). */
function namedProject(request: FastifyRequest): string | undefined {
  const header = request.headers['x-flakehouse-project'];
  const query = (request.query as Record<string, unknown> | undefined)?.project;
  const named = typeof header === 'string' && header !== '' ? header : query;
  return typeof named === 'string' && named !== '' ? named : undefined;
}

/**
 * The export's lines; a failure after the 200 (the database or the bucket failing mid-way) ends
 * them with an error line instead of cutting the gzip stream. A client that hung up, or a shutdown,
 * still ends the stream at once.
 */
async function* endedWithErrorLine(lines: AsyncGenerator<Buffer>, signal: AbortSignal, log: FastifyBaseLogger): AsyncGenerator<Buffer> {
  try {
    yield* lines;
  } catch (err) {
    if (signal.aborted) throw err;
    log.error({ err }, 'export failed after its 200; ended with an error line');
    yield exportErrorLine('export_failed', 'the export stopped early (the database or the artifact store failed): the lines above are correct but the export is incomplete (no summary line); retry');
  }
}

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
      async handler({ principal, reply, request }) {
        const projectId = principal!.projectId;
        if (!running.claim(projectId)) throw errors.exportRunning();
        let plan: ExportPlan;
        try {
          const planned = await planExport(deps.store, projectId);
          if (!planned) throw errors.notFound('project not found');
          plan = planned;
          // A project session or token naming another project is refused, as the procedures do
          // (src/api/trpc/core.ts), rather than answered with its own project's data.
          const named = namedProject(request);
          if (named !== undefined && named !== plan.slug) throw errors.otherProject(named);
          if (deps.artifacts) {
            try {
              await deps.artifacts.probe(AbortSignal.timeout(STORE_PROBE_TIMEOUT_MS));
            } catch (err) {
              request.log.warn({ err }, 'export refused: the artifact store cannot be listed');
              throw errors.artifactStoreUnavailable();
            }
          }
        } catch (err) {
          running.release(projectId);
          throw err;
        }
        const abort = new AbortController();
        const now = new Date();
        const lines = exportLines(deps.store, plan, { artifacts: deps.artifacts, artifactPrefix: projectPrefix(projectId), signal: abort.signal, now });
        const source = Readable.from(endedWithErrorLine(lines, abort.signal, request.log), {
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

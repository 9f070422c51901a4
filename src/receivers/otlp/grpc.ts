// The OTLP/gRPC listener (`protocols.grpc` of the otlp receiver): its own HTTP/2 server, beside
// the daemon's HTTP one, serving TraceService/Export. Plaintext, as the Collector's default; TLS
// is a proxy's job, as for the HTTP listener.
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { ApiError } from '../../errors.js';
import { LIMITS } from '../../domain/batch.js';
import type { Host, Receiver } from '../../pipeline/component.js';
import type { Endpoint } from './config.js';
import { exportTraces } from './grpc-export.js';
import { traceServiceDefinition, type ExportTraceResponse } from '../../otlp/grpc-service.js';
import { grpcErrorOf, grpcInternalError } from './grpc-status.js';

/** How long shutdown lets calls in flight finish (each ends once its jobs are durable) before cutting them. */
const DRAIN_MS = 5_000;

function bindAddress({ host, port }: Endpoint): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export function otlpGrpcReceiver(id: string, endpoint: Endpoint, logger: Logger): Receiver {
  let server: Server | undefined;
  return {
    async start(host: Host) {
      const { ingest, ingestDoor: door } = host;
      if (!ingest || !door) return; // worker-only role: nothing to serve
      const s = new Server({
        // The inflated cap of HTTP ingest (grpc-js applies it to decompressed messages too).
        'grpc.max_receive_message_length': LIMITS.inflatedBytes,
      });
      s.addService(traceServiceDefinition, {
        Export(call: ServerUnaryCall<Buffer, ExportTraceResponse>, callback: sendUnaryData<ExportTraceResponse>) {
          exportTraces(call.request, call.metadata, { door, ingest }).then(
            (answer) => callback(null, answer),
            (err: unknown) => {
              if (err instanceof ApiError) return callback(grpcErrorOf(err));
              logger.error({ err }, 'otlp grpc export failed');
              callback(grpcInternalError());
            },
          );
        },
      });
      const address = bindAddress(endpoint);
      const port = await new Promise<number>((resolve, reject) =>
        s.bindAsync(address, ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
      );
      server = s;
      const bound = bindAddress({ host: endpoint.host, port });
      host.listeners?.add(`${id}:grpc`, bound);
      logger.info({ address: bound }, 'otlp grpc listening');
    },
    async shutdown() {
      const s = server;
      server = undefined;
      if (!s) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          s.forceShutdown();
          resolve();
        }, DRAIN_MS);
        timer.unref();
        s.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

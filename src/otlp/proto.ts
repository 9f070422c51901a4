// The OTLP wire protocol both ends of this build speak: the vendored opentelemetry-proto files
// (./proto/, trace service only) loaded once at module load. The OTLP receiver decodes requests
// with them (src/receivers/otlp/decode.ts) and the OTLP/gRPC exporter sends with the service they
// define (./grpc-service.ts): below both, so the pipeline thread, which runs the exporter, loads
// no receiver.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const PROTO_DIR = fileURLToPath(new URL('./proto/', import.meta.url));

/** The vendored trace service protos, loaded once at module load (OTLP/gRPC reads its service from here too). */
export const otlpProtoRoot: protobuf.Root = (() => {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  root.resolveAll();
  return root;
})();

/** OTLP partial success (ExportTracePartialSuccess in its JSON form): how many spans were refused and why. */
export interface PartialSuccess {
  rejectedSpans: number;
  errorMessage: string;
}

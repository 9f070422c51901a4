// The OTLP/gRPC TraceService as @grpc/grpc-js serves it, read from the vendored protos (the same
// files OTLP/HTTP decodes with), and the google.rpc status details a RESOURCE_EXHAUSTED carries.
import type { ServiceDefinition } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { otlpProtoRoot, type PartialSuccess } from './proto.js';

const TraceService = otlpProtoRoot.lookupService('opentelemetry.proto.collector.trace.v1.TraceService');
const ExportMethod = TraceService.methods['Export']!;
const ResponseType = otlpProtoRoot.lookupType(ExportMethod.resolvedResponseType?.fullName ?? 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

/** `/opentelemetry.proto.collector.trace.v1.TraceService/Export`, from the proto's package and names. */
export const EXPORT_PATH = `/${TraceService.fullName.replace(/^\./, '')}/${ExportMethod.name}`;

/** The unary handler's types: the request stays bytes (decoded by decode.ts, as OTLP/HTTP's), the answer is ours. */
export interface ExportTraceResponse {
  partialSuccess?: PartialSuccess;
}

/**
 * Request bytes are not deserialized here: grpc-js would answer a throw from a deserializer with
 * INTERNAL, while a malformed request is the sender's INVALID_ARGUMENT with decode.ts's message.
 */
export const traceServiceDefinition: ServiceDefinition<{ Export: unknown }> = {
  Export: {
    path: EXPORT_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (r: ExportTraceResponse) => Buffer.from(ResponseType.encode(ResponseType.fromObject(r)).finish()),
    responseDeserialize: (b: Buffer): ExportTraceResponse => ResponseType.toObject(ResponseType.decode(b), { longs: Number }),
  },
};

// google.rpc.Status with a google.rpc.RetryInfo detail, the way gRPC servers say "retry after":
// the OTLP spec has clients retry RESOURCE_EXHAUSTED only when RetryInfo is present. Declared
// here rather than vendoring googleapis' protos for four fields.
const rpcRoot = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: {
          nested: {
            Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
            Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
          },
        },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: 'int32', id: 1 },
                message: { type: 'string', id: 2 },
                details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
              },
            },
            RetryInfo: { fields: { retry_delay: { type: 'google.protobuf.Duration', id: 1 } } },
          },
        },
      },
    },
  },
});
const StatusType = rpcRoot.lookupType('google.rpc.Status');
const RetryInfoType = rpcRoot.lookupType('google.rpc.RetryInfo');

/** The `grpc-status-details-bin` value: a google.rpc.Status whose one detail is RetryInfo{retry_delay}. */
export function retryStatusDetails(code: number, message: string, retryDelaySec: number): Buffer {
  const retryInfo = RetryInfoType.encode(RetryInfoType.fromObject({ retry_delay: { seconds: retryDelaySec, nanos: 0 } })).finish();
  const status = StatusType.fromObject({
    code,
    message,
    details: [{ type_url: 'type.googleapis.com/google.rpc.RetryInfo', value: retryInfo }],
  });
  return Buffer.from(StatusType.encode(status).finish());
}

/** Reads back what retryStatusDetails wrote (tests; a client honouring RetryInfo reads the same). */
export function readRetryDelaySec(details: Buffer): number | undefined {
  const status = StatusType.toObject(StatusType.decode(details), { longs: Number, bytes: Buffer }) as { details?: { type_url?: string; value?: Buffer }[] };
  const any = status.details?.find((d) => d.type_url === 'type.googleapis.com/google.rpc.RetryInfo');
  if (!any?.value) return undefined;
  const info = RetryInfoType.toObject(RetryInfoType.decode(any.value), { longs: Number }) as { retry_delay?: { seconds?: number } };
  return info.retry_delay?.seconds;
}

// The otlp receiver's `protocols` (Collector shape) as the pipeline file validates it, and the
// mapping of ingest refusals to gRPC statuses (docs/contract.md §4).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { builtinRegistry } from '../../src/builtin/components.js';
import { PipelineConfigError, validatePipelineDoc } from '../../src/pipeline/graph.js';
import { DEFAULT_PIPELINE } from '../../src/main/daemon.js';
import { enabledProtocols, otlpConfigSchema } from '../../src/receivers/otlp/config.js';
import { grpcStatusOf } from '../../src/receivers/otlp/grpc-status.js';
import { readRetryDelaySec } from '../../src/otlp/grpc-service.js';
import { errors } from '../../src/errors/catalogue.js';

function withOtlp(otlp: unknown): unknown {
  const doc = parse(readFileSync(DEFAULT_PIPELINE, 'utf8')) as { receivers: Record<string, unknown> };
  doc.receivers.otlp = otlp;
  return doc;
}

function problems(otlp: unknown): { path: string; message: string }[] {
  try {
    validatePipelineDoc(withOtlp(otlp), builtinRegistry(), 'p.yaml');
  } catch (err) {
    if (err instanceof PipelineConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('otlp receiver protocols', () => {
  it('serves OTLP/HTTP only without protocols (pipelines/default.yaml)', () => {
    expect(enabledProtocols(otlpConfigSchema.parse({}))).toEqual({ http: true, grpc: undefined });
    expect(problems({})).toEqual([]);
  });

  it('enables gRPC on loopback:4317 by default, as SERVICE_HOST defaults to loopback; only the named protocols', () => {
    expect(enabledProtocols(otlpConfigSchema.parse({ protocols: { grpc: null } }))).toEqual({ http: false, grpc: { host: '127.0.0.1', port: 4317 } });
    expect(enabledProtocols(otlpConfigSchema.parse({ protocols: { grpc: { endpoint: '0.0.0.0:4317' }, http: {} } }))).toEqual({
      http: true,
      grpc: { host: '0.0.0.0', port: 4317 },
    });
    expect(enabledProtocols(otlpConfigSchema.parse({ protocols: { grpc: { endpoint: '[::1]:0' } } })).grpc).toEqual({ host: '::1', port: 0 });
  });

  it('names the YAML path of a bad endpoint, an unknown key, an empty protocols', () => {
    expect(problems({ protocols: { grpc: { endpoint: 'localhost' } } })).toEqual([
      { path: 'receivers.otlp.protocols.grpc.endpoint', message: expect.stringContaining('expected host:port') },
    ]);
    expect(problems({ protocols: { grpc: { endpoint: '127.0.0.1:70000' } } })[0]?.path).toBe('receivers.otlp.protocols.grpc.endpoint');
    expect(problems({ protocols: { grpc: { endpoint: '127.0.0.1:4317', tls: {} } } })[0]?.path).toMatch(/^receivers\.otlp\.protocols\.grpc/);
    expect(problems({ protocols: { thrift: {} } })[0]?.path).toMatch(/^receivers\.otlp\.protocols/);
    expect(problems({ protocols: {} })).toEqual([{ path: 'receivers.otlp.protocols', message: expect.stringContaining('at least one of grpc, http') }]);
  });
});

describe('gRPC status of ingest refusals', () => {
  it('maps as the OTLP spec does, with RetryInfo only where a retry can help', () => {
    const cases: [ReturnType<typeof grpcStatusOf>, GrpcStatus, number | undefined][] = [
      [grpcStatusOf(errors.unauthorized()), GrpcStatus.UNAUTHENTICATED, undefined],
      [grpcStatusOf(errors.insufficientScope('ingest')), GrpcStatus.PERMISSION_DENIED, undefined],
      [grpcStatusOf(errors.invalidPayload([{ path: 'a', message: 'b' }])), GrpcStatus.INVALID_ARGUMENT, undefined],
      [grpcStatusOf(errors.payloadTooLarge('too big')), GrpcStatus.RESOURCE_EXHAUSTED, undefined],
      [grpcStatusOf(errors.backpressure()), GrpcStatus.RESOURCE_EXHAUSTED, 1],
      [grpcStatusOf(errors.rateLimited(7)), GrpcStatus.RESOURCE_EXHAUSTED, 7],
      [grpcStatusOf(errors.insufficientStorage('disk full')), GrpcStatus.RESOURCE_EXHAUSTED, 30],
      [grpcStatusOf(errors.serverBusy('too many request bodies')), GrpcStatus.RESOURCE_EXHAUSTED, 1],
      [grpcStatusOf(errors.requestTimeout()), GrpcStatus.DEADLINE_EXCEEDED, undefined],
      [grpcStatusOf(errors.unsupportedContentEncoding('br')), GrpcStatus.UNIMPLEMENTED, undefined],
    ];
    for (const [err, code, retry] of cases) {
      expect(err.code).toBe(code);
      expect(err.statusDetails === undefined ? undefined : readRetryDelaySec(err.statusDetails)).toBe(retry);
    }
    expect(grpcStatusOf(errors.invalidPayload([{ path: 'a.b', message: 'bad' }], 'a.b: bad')).details).toBe('invalid_payload: a.b: bad');
  });
});

// The `otlp_grpc` exporter's configuration, in the OpenTelemetry Collector's `otlp` exporter shape
// (configgrpc): `endpoint` is `host:port`, `headers` become gRPC metadata. Everything but the
// endpoint and `tls` is otlp_http's (../shared/forwarding-config.ts `forwardingFields`), so both
// exporters read, default and retry alike.
import { z } from 'zod';
import { forwardingFields } from '../shared/forwarding-config.js';

// `host:port`, `[v6]:port`, or the Collector's tolerated `http://host:port` form.
const ENDPOINT_RE = /^(?:http:\/\/)?((?:\[[0-9a-fA-F:.]+\]|[^\s/:[\]]+):\d{1,5})\/?$/;

export const otlpGrpcConfigSchema = z
  .object({
    /** The gateway's gRPC listener, `host:port` (its otlp receiver's `protocols.grpc.endpoint`). */
    endpoint: z.string().transform((text, ctx) => {
      const m = ENDPOINT_RE.exec(text.trim());
      if (!m) {
        ctx.addIssue({ code: 'custom', message: `not a gRPC endpoint: ${JSON.stringify(text)} (host:port, e.g. gateway.internal:4317; TLS is not supported)` });
        return z.NEVER;
      }
      return m[1]!;
    }),
    // Plaintext only, as our gRPC receiver: TLS is a proxy's or a mesh's job. The Collector's
    // default is TLS, so `insecure: true` is accepted to say so explicitly; anything asking for
    // TLS is refused rather than silently sent in the clear.
    tls: z
      .object({ insecure: z.literal(true, { error: 'only `tls: { insecure: true }` (plaintext) is supported; terminate TLS in a proxy' }) })
      .strict()
      .optional(),
    ...forwardingFields,
  })
  .strict();

export type OtlpGrpcConfig = z.infer<typeof otlpGrpcConfigSchema>;

// GET /metrics: this process's metrics in the Prometheus text format. Admin token, like
// /v1/admin/stats (the same numbers): traffic per route and queue depth are an operator's business;
// a Prometheus scrape config sends it with `authorization: { credentials_file: …/admin-token }`.
import type { SelfTelemetry } from '../../telemetry/self-telemetry.js';
import { defineRoute } from '../route.js';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function metricsRoute(telemetry: SelfTelemetry) {
  return defineRoute({
    method: 'GET',
    url: '/metrics',
    summary: 'Self-telemetry of this process in the Prometheus text format (HTTP, queue, worker)',
    tags: ['admin'],
    auth: { kind: 'admin' },
    produces: ['text/plain'],
    async handler({ reply }) {
      const text = await telemetry.prometheus();
      void reply.code(200).type(PROMETHEUS_CONTENT_TYPE).send(text);
    },
  });
}

// Self-telemetry end to end: real traffic through the real daemon, the metrics received by a local
// OTLP/HTTP endpoint (the exporter's JSON encoding, decoded here) and read from GET /metrics in the
// Prometheus text format. Without SERVICE_SELF_OTEL_ENDPOINT nothing is exported.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startHttpSink, type HttpSink } from '../helpers/peers.js';

interface OtlpPoint {
  attributes?: { key: string; value: Record<string, unknown> }[];
  asInt?: string | number;
  asDouble?: number;
  count?: string | number;
  sum?: number;
  bucketCounts?: (string | number)[];
  explicitBounds?: number[];
}
interface OtlpMetric {
  name: string;
  unit?: string;
  sum?: { dataPoints: OtlpPoint[]; isMonotonic?: boolean };
  gauge?: { dataPoints: OtlpPoint[] };
  histogram?: { dataPoints: OtlpPoint[] };
}
interface OtlpBody {
  resourceMetrics: { resource: { attributes: { key: string; value: Record<string, unknown> }[] }; scopeMetrics: { metrics: OtlpMetric[] }[] }[];
}

function attrs(p: OtlpPoint): Record<string, string> {
  return Object.fromEntries((p.attributes ?? []).map((a) => [a.key, String(Object.values(a.value)[0])]));
}

/** Every data point of a metric in an export, with its attributes flattened and value as a number. */
function points(body: OtlpBody, name: string): { attrs: Record<string, string>; value: number; point: OtlpPoint; metric: OtlpMetric }[] {
  const out: { attrs: Record<string, string>; value: number; point: OtlpPoint; metric: OtlpMetric }[] = [];
  for (const rm of body.resourceMetrics) {
    for (const sm of rm.scopeMetrics) {
      for (const m of sm.metrics) {
        if (m.name !== name) continue;
        for (const p of (m.sum ?? m.gauge ?? m.histogram)!.dataPoints) {
          out.push({ attrs: attrs(p), value: Number(p.asInt ?? p.asDouble ?? p.count), point: p, metric: m });
        }
      }
    }
  }
  return out;
}

function one(body: OtlpBody, name: string, where: Record<string, string> = {}): { value: number; point: OtlpPoint; metric: OtlpMetric } {
  const found = points(body, name).filter((p) => Object.entries(where).every(([k, v]) => p.attrs[k] === v));
  expect(found, `${name} ${JSON.stringify(where)}`).toHaveLength(1);
  return found[0]!;
}

describe('self-telemetry', () => {
  let collector: HttpSink;
  let td: TestDaemon;

  beforeAll(async () => {
    collector = await startHttpSink();
    // A long interval: the test exports with flush(), so the numbers it checks are exactly its traffic.
    td = await startTestDaemon({ env: { SERVICE_SELF_OTEL_ENDPOINT: collector.url, SERVICE_SELF_OTEL_INTERVAL_MS: '3600000' } });
    await td.ingest(nativeBatch({ n: 3 }), nativeBatch({ n: 4 }));
    expect((await td.request('GET', '/v1/runs?limit=5')).status).toBe(200);
    expect((await td.request('GET', '/v1/runs/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await td.request('GET', '/v1/runs', { token: 'fh_wrong' })).status).toBe(401);
    expect((await td.request('GET', '/no/such/path')).status).toBe(404);
    // The worker's counters reach this thread a few times a second (the pipeline runs on its own).
    await td.waitFor(async () => td.daemon.runtime.stats.executions === 7);
    await td.daemon.telemetry.flush();
  });

  afterAll(async () => {
    await td?.close();
    await collector?.close();
  });

  it('exports OTLP/HTTP metrics of the API and the worker to SERVICE_SELF_OTEL_ENDPOINT', () => {
    const exports = collector.requests.filter((r) => r.path === '/v1/metrics');
    expect(exports.length).toBeGreaterThanOrEqual(1);
    const last = exports.at(-1)!;
    expect(last.method).toBe('POST');
    expect(last.headers['content-type']).toMatch(/^application\/json/);
    const body = last.json as OtlpBody;
    const resource = attrs({ attributes: body.resourceMetrics[0]!.resource.attributes });
    expect(resource['service.name']).toBe('flakehouse');

    // API: requests by route and status class, 4xx/5xx, latency.
    expect(one(body, 'flakehouse.http.requests', { 'http.route': '/v1/ingest', 'http.request.method': 'POST', 'http.response.status_class': '2xx' }).value).toBe(2);
    expect(one(body, 'flakehouse.http.requests', { 'http.route': '/v1/runs/:runId', 'http.response.status_class': '4xx' }).value).toBe(1);
    expect(one(body, 'flakehouse.http.requests', { 'http.route': 'unmatched', 'http.response.status_class': '4xx' }).value).toBe(1);
    expect(one(body, 'flakehouse.http.errors', { 'http.route': '/v1/runs', 'http.response.status_class': '4xx' }).value).toBe(1);
    expect(one(body, 'flakehouse.http.errors', { 'http.route': '/v1/runs/:runId', 'http.response.status_class': '4xx' }).value).toBe(1);
    expect(points(body, 'flakehouse.http.errors').filter((p) => p.attrs['http.response.status_class'] === '5xx')).toEqual([]);
    const latency = one(body, 'http.server.request.duration', { 'http.route': '/v1/ingest', 'http.response.status_code': '202' });
    expect(latency.metric.unit).toBe('s');
    expect(latency.value).toBe(2);
    expect(latency.point.sum).toBeGreaterThan(0);
    expect(latency.point.bucketCounts!.reduce((a: number, b) => a + Number(b), 0)).toBe(2);

    // Worker: throughput, failures, error ratio, processing lag; and the queue.
    expect(one(body, 'flakehouse.worker.executions').value).toBe(7);
    expect(one(body, 'flakehouse.worker.jobs').value).toBe(2);
    expect(one(body, 'flakehouse.worker.leases').value).toBeGreaterThanOrEqual(1);
    expect(one(body, 'flakehouse.worker.lease_failures').value).toBe(0);
    expect(one(body, 'flakehouse.worker.error_ratio').value).toBe(0);
    const lag = one(body, 'flakehouse.worker.processing_lag');
    expect(lag.metric.unit).toBe('ms');
    expect(lag.value).toBe(2);
    expect(lag.point.explicitBounds!.length).toBeGreaterThan(5);
    expect(lag.point.bucketCounts!.reduce((a: number, b) => a + Number(b), 0)).toBe(2);
    expect(one(body, 'flakehouse.queue.depth', { state: 'pending' }).value).toBe(0);
    expect(one(body, 'flakehouse.queue.depth', { state: 'dead' }).value).toBe(0);
  });

  it('serves GET /metrics in the Prometheus text format to the admin token', async () => {
    const res = await td.request('GET', '/metrics', { token: td.adminToken });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = res.text;
    expect(text).toContain('# TYPE flakehouse_http_requests_total counter');
    expect(text).toContain('flakehouse_http_requests_total{http_request_method="POST",http_response_status_class="2xx",http_route="/v1/ingest"} 2\n');
    expect(text).toContain('flakehouse_http_errors_total{http_response_status_class="4xx",http_route="/v1/runs/:runId"} 1\n');
    expect(text).toContain('# TYPE http_server_request_duration_seconds histogram');
    expect(text).toMatch(/^http_server_request_duration_seconds_bucket\{http_request_method="POST",http_response_status_class="2xx",http_response_status_code="202",http_route="\/v1\/ingest",le="\+Inf"\} 2$/m);
    expect(text).toMatch(/^http_server_request_duration_seconds_count\{[^}]*http_route="\/v1\/ingest"\} 2$/m);
    expect(text).toContain('# TYPE flakehouse_queue_depth gauge');
    expect(text).toContain('flakehouse_queue_depth{state="pending"} 0\n');
    expect(text).toContain('flakehouse_worker_executions_total 7\n');
    expect(text).toContain('flakehouse_worker_jobs_total 2\n');
    expect(text).toContain('flakehouse_worker_lease_failures_total 0\n');
    expect(text).toContain('flakehouse_worker_error_ratio 0\n');
    expect(text).toContain('# TYPE flakehouse_worker_processing_lag_milliseconds histogram');
    expect(text).toContain('flakehouse_worker_processing_lag_milliseconds_bucket{le="+Inf"} 2\n');
    expect(text).toContain('flakehouse_worker_processing_lag_milliseconds_count 2\n');
    // Every sample line belongs to a family announced by # TYPE.
    const typed = new Set([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => m[1]));
    for (const line of text.split('\n').filter((l) => l !== '' && !l.startsWith('#'))) {
      const name = line.split(/[{ ]/)[0]!;
      expect(typed.has(name) || typed.has(name.replace(/_(bucket|sum|count)$/, '')), line).toBe(true);
    }
  });

  it('refuses GET /metrics without the admin token', async () => {
    expect((await td.request('GET', '/metrics', { token: null })).status).toBe(401);
    expect((await td.request('GET', '/metrics')).status).toBe(401); // a project token is not enough
  });

  it('exports nothing without SERVICE_SELF_OTEL_ENDPOINT, while GET /metrics still answers', async () => {
    const quiet = await startTestDaemon();
    try {
      const before = collector.requests.length;
      await quiet.ingest(nativeBatch({ n: 2 }));
      await quiet.waitFor(async () => quiet.daemon.runtime.stats.executions === 2);
      await quiet.daemon.telemetry.flush();
      expect(collector.requests.length).toBe(before);
      const res = await quiet.request('GET', '/metrics', { token: quiet.adminToken });
      expect(res.text).toContain('flakehouse_worker_executions_total 2\n');
    } finally {
      await quiet.close();
    }
  });
});

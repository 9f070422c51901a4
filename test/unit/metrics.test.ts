// Self-telemetry's pure part: the processing-lag histogram, status classes, Prometheus names and
// the text exposition.
import { describe, expect, it } from 'vitest';
import { newLagStats, prometheusName, recordLag, renderPrometheus, statusClass } from '../../src/domain/metrics.js';

describe('processing lag', () => {
  it('counts each job in the first bucket whose bound it does not exceed, the rest in the last', () => {
    const s = newLagStats([10, 100, 1000]);
    for (const ms of [0, 10, 11, 100, 999, 1000, 1001, 50_000, -5]) recordLag(s, ms);
    expect(s.counts).toEqual([3, 2, 2, 2]);
    expect(s.count).toBe(9);
    expect(s.sumMs).toBe(0 + 10 + 11 + 100 + 999 + 1000 + 1001 + 50_000 + 0);
    expect(s.minMs).toBe(0);
    expect(s.maxMs).toBe(50_000);
    expect(s.lastMs).toBe(0);
  });
});

describe('statusClass', () => {
  it('groups statuses by their hundred', () => {
    expect([200, 202, 304, 401, 404, 429, 500, 503, 99, 600].map(statusClass)).toEqual(['2xx', '2xx', '3xx', '4xx', '4xx', '4xx', '5xx', '5xx', 'other', 'other']);
  });
});

describe('prometheusName', () => {
  it('maps OpenTelemetry names, units and counters the OpenTelemetry-to-Prometheus way', () => {
    expect(prometheusName('http.server.request.duration', 's', 'histogram')).toBe('http_server_request_duration_seconds');
    expect(prometheusName('flakehouse.http.requests', '{request}', 'counter')).toBe('flakehouse_http_requests_total');
    expect(prometheusName('flakehouse.worker.processing_lag', 'ms', 'histogram')).toBe('flakehouse_worker_processing_lag_milliseconds');
    expect(prometheusName('flakehouse.worker.error_ratio', '1', 'gauge')).toBe('flakehouse_worker_error_ratio');
    expect(prometheusName('queue-depth', '', 'gauge')).toBe('queue_depth');
    expect(prometheusName('9lives', '', 'counter')).toBe('_9lives_total');
  });
});

describe('renderPrometheus', () => {
  it('writes HELP and TYPE, escaped labels, and cumulative buckets ending in +Inf', () => {
    const text = renderPrometheus([
      {
        name: 'flakehouse_http_requests_total',
        help: 'HTTP requests\nby route',
        type: 'counter',
        points: [
          { labels: { 'http.route': '/v1/runs/:runId', 'http.request.method': 'GET' }, value: 3 },
          { labels: { 'http.route': 'a "quoted" \\ path', 'http.request.method': 'POST' }, value: 1 },
        ],
      },
      { name: 'flakehouse_queue_depth', help: 'Jobs', type: 'gauge', points: [{ labels: {}, value: 0.5 }] },
      {
        name: 'lag_milliseconds',
        help: 'Lag',
        type: 'histogram',
        points: [{ labels: { stage: 'x' }, boundaries: [10, 100], counts: [2, 0, 1], sum: 250.5, count: 3 }],
      },
    ]);
    expect(text).toBe(
      [
        '# HELP flakehouse_http_requests_total HTTP requests\\nby route',
        '# TYPE flakehouse_http_requests_total counter',
        'flakehouse_http_requests_total{http_request_method="GET",http_route="/v1/runs/:runId"} 3',
        'flakehouse_http_requests_total{http_request_method="POST",http_route="a \\"quoted\\" \\\\ path"} 1',
        '# HELP flakehouse_queue_depth Jobs',
        '# TYPE flakehouse_queue_depth gauge',
        'flakehouse_queue_depth 0.5',
        '# HELP lag_milliseconds Lag',
        '# TYPE lag_milliseconds histogram',
        'lag_milliseconds_bucket{stage="x",le="10"} 2',
        'lag_milliseconds_bucket{stage="x",le="100"} 2',
        'lag_milliseconds_bucket{stage="x",le="+Inf"} 3',
        'lag_milliseconds_sum{stage="x"} 250.5',
        'lag_milliseconds_count{stage="x"} 3',
        '',
      ].join('\n'),
    );
  });

  it('is empty for no families', () => {
    expect(renderPrometheus([])).toBe('');
  });
});

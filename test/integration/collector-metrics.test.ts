// Component telemetry under the OpenTelemetry Collector's names (src/telemetry/collector-metrics.ts):
// a known traffic through a pipeline with a `filter` processor, and the exact counts on GET /metrics
// for the receiver (accepted, refused), each processor (incoming, outgoing: the filter drops some),
// the exporter (sent) and the queue gauges.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const PIPELINE = `
receivers:
  native: {}
processors:
  normalize: {}
  filter:
    executions:
      exclude:
        - file: "e2e/legacy/**"
  identity: {}
exporters:
  clickhouse: {}
service:
  pipelines:
    executions:
      receivers: [native]
      processors: [normalize, filter, identity]
      exporters: [clickhouse]
`;

/** The value of one sample line (`name{labels} value`), labels as rendered (sorted). */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

function execution(file: string, i: number): Record<string, unknown> {
  return { filePath: file, suite: 'S', title: `case ${i}`, status: 'pass', startedAt: Date.parse('2026-11-20T10:00:00Z') + i, durationMs: 5 };
}

describe('Collector-named component metrics', () => {
  let dir: string;
  let td: TestDaemon;
  let text: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'fh-collector-metrics-'));
    const pipelineFile = path.join(dir, 'pipeline.yaml');
    writeFileSync(pipelineFile, PIPELINE);
    td = await startTestDaemon({ pipelineFile, env: { SERVICE_MAX_QUEUE_DEPTH: '1000' } });
    // 4 + 3 executions accepted; the filter drops the 2 under e2e/legacy/.
    // (Not td.ingest: it waits for run.processed, and this pipeline has no events connector.)
    for (const body of [
      nativeBatch({ executions: [execution('src/a.test.ts', 0), execution('e2e/legacy/b.test.ts', 1), execution('e2e/legacy/c.test.ts', 2), execution('src/d.test.ts', 3)] }),
      nativeBatch({ n: 3 }),
    ]) {
      expect((await td.request('POST', '/v1/ingest', { body })).status).toBe(202);
    }
    // Decoded, then refused whole (a PR number past ClickHouse's UInt32): its 2 executions. (A body
    // refused before it is decoded, as the Collector's receivers do, counts nothing.)
    const refused = await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 2, resource: { prNumber: 2 ** 33 } }) });
    expect(refused.status).toBe(400);
    await td.waitFor(async () => td.daemon.runtime.stats.executions === 5 && td.daemon.queue.depth() === 0, 20_000);
    const res = await td.request('GET', '/metrics', { token: td.adminToken });
    expect(res.status).toBe(200);
    text = res.text;
  });

  afterAll(async () => {
    await td?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('counts executions accepted and refused by the receiver, by transport', () => {
    expect(text).toContain('# TYPE otelcol_receiver_accepted_spans_total counter');
    expect(sample(text, 'otelcol_receiver_accepted_spans_total', 'receiver="native",transport="http"')).toBe(7);
    expect(sample(text, 'otelcol_receiver_refused_spans_total', 'receiver="native",transport="http"')).toBe(2);
  });

  it('counts executions into and out of each processor (the filter drops 2)', () => {
    expect(text).toContain('# TYPE otelcol_processor_incoming_items_total counter');
    const proc = (id: string): string => `otel_signal="traces",processor="${id}"`;
    expect(sample(text, 'otelcol_processor_incoming_items_total', proc('normalize'))).toBe(7);
    expect(sample(text, 'otelcol_processor_outgoing_items_total', proc('normalize'))).toBe(7);
    expect(sample(text, 'otelcol_processor_incoming_items_total', proc('filter'))).toBe(7);
    expect(sample(text, 'otelcol_processor_outgoing_items_total', proc('filter'))).toBe(5);
    expect(sample(text, 'otelcol_processor_incoming_items_total', proc('identity'))).toBe(5);
    expect(sample(text, 'otelcol_processor_outgoing_items_total', proc('identity'))).toBe(5);
  });

  it('counts executions sent by the exporter, none failed', () => {
    expect(sample(text, 'otelcol_exporter_sent_spans_total', 'exporter="clickhouse"')).toBe(5);
    expect(sample(text, 'otelcol_exporter_send_failed_spans_total', 'exporter="clickhouse"')).toBe(0);
  });

  it('reports the durable queue as the exporter queue: size and capacity (SERVICE_MAX_QUEUE_DEPTH)', () => {
    expect(text).toContain('# TYPE otelcol_exporter_queue_size gauge');
    expect(sample(text, 'otelcol_exporter_queue_size', 'data_type="traces",exporter="clickhouse"')).toBe(0);
    expect(sample(text, 'otelcol_exporter_queue_capacity', 'data_type="traces",exporter="clickhouse"')).toBe(1000);
  });
});

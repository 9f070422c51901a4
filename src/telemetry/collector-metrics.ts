// The component metrics under the OpenTelemetry Collector's own names and attributes (as
// Collector v0.116 emits them; its Prometheus endpoint adds `_total` to counters, as ours does),
// so dashboards built for the Collector read Flakehouse as they read a Collector: an execution is
// our span. Observed at collection time from plain counters (component-stats.ts).
import type { Meter } from '@opentelemetry/api';
import type { PipelineGraph } from '../pipeline/graph.js';
import type { QueueStats } from '../queue/types.js';
import type { ComponentStats, ReceiverStats } from './component-stats.js';

/** The Collector's signal name for what its `_spans` metrics count: our executions. */
const SIGNAL = 'traces';

export interface CollectorMetricSources {
  /** Receiver counts of this thread (the receivers always run where HTTP is served). */
  receivers: () => ReceiverStats;
  /** Processor and exporter counts, wherever the pipeline runs (undefined without a worker). */
  components: () => ComponentStats | undefined;
  queue: () => QueueStats;
  /** Ids of the executions pipelines' exporters: each one's pending work is the durable queue. */
  queueExporters: readonly string[];
  /** SERVICE_MAX_QUEUE_DEPTH (0: no limit, no capacity gauge). */
  queueCapacity: number;
}

export function observeCollectorMetrics(meter: Meter, src: CollectorMetricSources): void {
  const receiver = (name: string, description: string, field: 'accepted' | 'refused'): void => {
    meter.createObservableCounter(name, { description, unit: '{spans}' }).addCallback((r) => {
      for (const [id, byTransport] of Object.entries(src.receivers())) {
        for (const [transport, c] of Object.entries(byTransport)) r.observe(c[field], { receiver: id, transport });
      }
    });
  };
  receiver('otelcol_receiver_accepted_spans', 'Executions (OTLP test spans, JUnit testcases, native executions) durably enqueued', 'accepted');
  receiver('otelcol_receiver_refused_spans', 'Executions of decoded batches that were not enqueued (invalid value, backpressure, storage full)', 'refused');

  const processor = (name: string, description: string, field: 'incoming' | 'outgoing'): void => {
    meter.createObservableCounter(name, { description, unit: '{items}' }).addCallback((r) => {
      for (const [id, c] of Object.entries(src.components()?.processors ?? {})) r.observe(c[field], { processor: id, 'otel.signal': SIGNAL });
    });
  };
  processor('otelcol_processor_incoming_items', 'Executions into the processor, per committed lease', 'incoming');
  processor('otelcol_processor_outgoing_items', 'Executions out of the processor (a filter or sample drops some), per committed lease', 'outgoing');

  const exporter = (name: string, description: string, field: 'sent' | 'failed'): void => {
    meter.createObservableCounter(name, { description, unit: '{spans}' }).addCallback((r) => {
      for (const [id, c] of Object.entries(src.components()?.exporters ?? {})) r.observe(c[field], { exporter: id });
    });
  };
  exporter('otelcol_exporter_sent_spans', 'Executions the exporter wrote or forwarded, per committed lease', 'sent');
  exporter('otelcol_exporter_send_failed_spans', 'Executions of each failed export attempt (the lease is retried)', 'failed');

  meter
    .createObservableGauge('otelcol_exporter_queue_size', { description: 'Jobs in the durable ingest queue (pending + in flight)', unit: '{batches}' })
    .addCallback((r) => {
      const q = src.queue();
      for (const id of src.queueExporters) r.observe(q.pending + q.inflight, { exporter: id, data_type: SIGNAL });
    });
  if (src.queueCapacity > 0) {
    meter
      .createObservableGauge('otelcol_exporter_queue_capacity', { description: 'Jobs the durable ingest queue takes (SERVICE_MAX_QUEUE_DEPTH)', unit: '{batches}' })
      .addCallback((r) => {
        for (const id of src.queueExporters) r.observe(src.queueCapacity, { exporter: id, data_type: SIGNAL });
      });
  }
}

/** The exporters (not connectors) of the executions pipelines, once each. */
export function executionsExporterIds(graph: Pick<PipelineGraph, 'pipelines' | 'components'>): string[] {
  const ids = graph.pipelines.filter((p) => p.signal === 'executions').flatMap((p) => p.exporters);
  return [...new Set(ids)].filter((id) => graph.components.has(`exporters:${id}`));
}

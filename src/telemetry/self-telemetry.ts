// The daemon's own metrics, through the OpenTelemetry metrics SDK: HTTP requests (by route, method
// and status class; a latency histogram; 4xx/5xx counts) recorded as they finish, and the queue and
// worker numbers observed at collection time from queue.stats() and the runtime's WorkerStats
// (plain counters that can be read wherever the worker runs, rather than instruments threaded
// through it). One MeterProvider feeds two readers: GET /metrics (Prometheus text, pulled) and,
// with SERVICE_SELF_OTEL_ENDPOINT, an OTLP/HTTP (JSON) export every SERVICE_SELF_OTEL_INTERVAL_MS.
import { ValueType, type Attributes, type Counter, type Histogram, type Meter } from '@opentelemetry/api';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  DataPointType,
  MeterProvider,
  MetricReader,
  PeriodicExportingMetricReader,
  type CollectionResult,
  type MetricProducer,
  type PushMetricExporter,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import type { Logger } from 'pino';
import { prometheusName, renderPrometheus, statusClass, type HistogramPoint, type MetricFamily, type ScalarPoint } from '../domain/metrics.js';
import type { WorkerStats } from '../pipeline/runtime.js';
import type { QueueStats } from '../queue/types.js';
import { observeCollectorMetrics } from './collector-metrics.js';
import type { ReceiverStats } from './component-stats.js';

/** Makes the OTLP exporter for a metrics URL (loaded only when an endpoint is set: see `create`). */
type OtlpExporterFactory = (url: string, timeoutMillis: number) => PushMetricExporter;

export interface SelfTelemetryOptions {
  /** OTLP/HTTP endpoint (base URL, or the full …/v1/metrics URL); unset: no export, /metrics only. */
  endpoint?: string;
  intervalMs: number;
  logger: Logger;
  queue: () => QueueStats;
  serviceVersion?: string;
  /** For the Collector-named queue gauges: the executions pipelines' exporter ids and SERVICE_MAX_QUEUE_DEPTH. */
  queueExporters?: readonly string[];
  queueCapacity?: number;
}

export interface RequestObservation {
  method: string;
  /** The route pattern (`/v1/runs/:runId`), or 'unmatched' for a path no route serves. */
  route: string;
  status: number;
  durationMs: number;
}

/** OpenTelemetry's recommended buckets for http.server.request.duration (seconds). */
const HTTP_DURATION_BOUNDS_S = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

/** A reader that collects on demand: what GET /metrics renders. */
class PullReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

export class SelfTelemetry {
  private readonly provider: MeterProvider;
  private readonly pull: PullReader;
  private readonly push: PeriodicExportingMetricReader | null;
  private readonly requests: Counter;
  private readonly errors: Counter;
  private readonly duration: Histogram;
  private worker: (() => WorkerStats) | null = null;
  private receivers: (() => ReceiverStats) | null = null;
  private readonly resource: Resource;
  private readonly startTime = hrTime(Date.now());
  /** Set when a push export fails, so a down collector is logged once per outage, not every interval. */
  private exportFailing = false;

  /**
   * Loads the OTLP exporter only when there is an endpoint to export to: the package and its
   * dependencies are about a tenth of a second of every daemon start otherwise.
   */
  static async create(opts: SelfTelemetryOptions): Promise<SelfTelemetry> {
    if (!opts.endpoint) return new SelfTelemetry(opts);
    const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-http');
    return new SelfTelemetry(opts, (url, timeoutMillis) => new OTLPMetricExporter({ url, timeoutMillis }));
  }

  private constructor(
    private readonly opts: SelfTelemetryOptions,
    otlpExporter?: OtlpExporterFactory,
  ) {
    this.resource = resourceFromAttributes({ 'service.name': 'flakehouse', 'service.version': opts.serviceVersion ?? '0.0.0' });
    // The lag histogram is made from WorkerStats' buckets: no instrument can observe a histogram.
    const lag: MetricProducer = { collect: async () => this.lagMetrics() };
    this.pull = new PullReader({ metricProducers: [lag] });
    this.push =
      opts.endpoint && otlpExporter
        ? new PeriodicExportingMetricReader({
            exporter: this.logged(otlpExporter(metricsUrl(opts.endpoint), Math.min(10_000, opts.intervalMs))),
            exportIntervalMillis: opts.intervalMs,
            exportTimeoutMillis: Math.min(10_000, opts.intervalMs),
            metricProducers: [lag],
          })
        : null;
    this.provider = new MeterProvider({ resource: this.resource, readers: this.push ? [this.pull, this.push] : [this.pull] });
    const meter = this.provider.getMeter('flakehouse');
    this.duration = meter.createHistogram('http.server.request.duration', {
      description: 'Duration of HTTP server requests',
      unit: 's',
      advice: { explicitBucketBoundaries: HTTP_DURATION_BOUNDS_S },
    });
    this.requests = meter.createCounter('flakehouse.http.requests', { description: 'HTTP requests by route, method and status class', unit: '{request}' });
    this.errors = meter.createCounter('flakehouse.http.errors', { description: 'HTTP requests answered 4xx or 5xx, by route and status class', unit: '{request}' });
    this.observeQueue(meter);
    this.observeWorker(meter);
    observeCollectorMetrics(meter, {
      receivers: () => this.receivers?.() ?? {},
      components: () => this.worker?.().components,
      queue: opts.queue,
      queueExporters: opts.queueExporters ?? [],
      queueCapacity: opts.queueCapacity ?? 0,
    });
    if (opts.endpoint) opts.logger.info({ endpoint: metricsUrl(opts.endpoint), intervalMs: opts.intervalMs }, 'self-telemetry export on');
  }

  /** The worker's stats, in a process that runs the worker. */
  attachWorker(stats: () => WorkerStats): void {
    this.worker = stats;
  }

  /** The receivers' counts, in the process that serves ingest. */
  attachReceivers(stats: () => ReceiverStats): void {
    this.receivers = stats;
  }

  recordRequest(r: RequestObservation): void {
    const cls = statusClass(r.status);
    const attrs: Attributes = { 'http.request.method': r.method, 'http.route': r.route, 'http.response.status_class': cls };
    this.requests.add(1, attrs);
    this.duration.record(r.durationMs / 1000, { ...attrs, 'http.response.status_code': r.status });
    if (r.status >= 400) this.errors.add(1, { 'http.route': r.route, 'http.response.status_class': cls });
  }

  /** Everything, in the Prometheus text format. */
  async prometheus(): Promise<string> {
    const { resourceMetrics, errors } = await this.pull.collect();
    if (errors.length > 0) this.opts.logger.warn({ errors: errors.map(String) }, 'metric collection had errors');
    return renderPrometheus(toFamilies(resourceMetrics));
  }

  /** Exports now (tests; shutdown does it too). */
  async flush(): Promise<void> {
    await this.push?.forceFlush();
  }

  async shutdown(): Promise<void> {
    try {
      await this.provider.shutdown();
    } catch (err) {
      this.opts.logger.warn({ err }, 'self-telemetry shutdown failed');
    }
  }

  private observeQueue(meter: Meter): void {
    meter
      .createObservableGauge('flakehouse.queue.depth', { description: 'Jobs in the ingest queue by state (pending includes delayed retries)', unit: '{job}' })
      .addCallback((r) => {
        const q = this.opts.queue();
        r.observe(q.pending, { state: 'pending' });
        r.observe(q.inflight, { state: 'inflight' });
        r.observe(q.delayed, { state: 'delayed' });
        r.observe(q.dead, { state: 'dead' });
      });
  }

  private observeWorker(meter: Meter): void {
    const counter = (name: string, description: string, unit: string, read: (s: WorkerStats) => number): void => {
      meter.createObservableCounter(name, { description, unit }).addCallback((r) => {
        const s = this.worker?.();
        if (s) r.observe(read(s));
      });
    };
    counter('flakehouse.worker.leases', 'Leases committed (each one or more jobs)', '{lease}', (s) => s.leases);
    counter('flakehouse.worker.jobs', 'Jobs (accepted batches) committed', '{job}', (s) => s.jobs);
    counter('flakehouse.worker.executions', 'Executions committed (throughput)', '{execution}', (s) => s.executions);
    counter('flakehouse.worker.lease_failures', 'Leases that failed and were handed back for a retry', '{lease}', (s) => s.failures);
    counter('flakehouse.worker.events.delivered', 'Domain events delivered to the events pipelines', '{event}', (s) => s.eventsDelivered);
    counter('flakehouse.worker.events.failed', 'Domain events skipped after their retries ran out', '{event}', (s) => s.eventFailures);
    meter
      .createObservableGauge('flakehouse.worker.error_ratio', { description: 'Failed leases / (committed + failed leases), since start', unit: '1' })
      .addCallback((r) => {
        const s = this.worker?.();
        if (s) r.observe(s.leases + s.failures === 0 ? 0 : s.failures / (s.leases + s.failures));
      });
    meter
      .createObservableGauge('flakehouse.worker.processing_lag.last', { description: 'Processing lag of the most recently committed job (now − received)', unit: 'ms' })
      .addCallback((r) => {
        const s = this.worker?.();
        if (s && s.lag.count > 0) r.observe(s.lag.lastMs);
      });
  }

  private async lagMetrics(): Promise<CollectionResult> {
    const s = this.worker?.();
    const resourceMetrics: ResourceMetrics = { resource: this.resource, scopeMetrics: [] };
    if (s) {
      resourceMetrics.scopeMetrics.push({
        scope: { name: 'flakehouse.worker' },
        metrics: [
          {
            descriptor: { name: 'flakehouse.worker.processing_lag', description: 'Processing lag: now − received of each job when its lease commits', unit: 'ms', valueType: ValueType.DOUBLE },
            aggregationTemporality: AggregationTemporality.CUMULATIVE,
            dataPointType: DataPointType.HISTOGRAM,
            dataPoints: [
              {
                startTime: this.startTime,
                endTime: hrTime(Date.now()),
                attributes: {},
                value: {
                  buckets: { boundaries: [...s.lag.boundsMs], counts: [...s.lag.counts] },
                  sum: s.lag.sumMs,
                  count: s.lag.count,
                  ...(s.lag.count > 0 ? { min: s.lag.minMs, max: s.lag.maxMs } : {}),
                },
              },
            ],
          },
        ],
      });
    }
    return { resourceMetrics, errors: [] };
  }

  /** The exporter, logging a failing collector once per outage (the SDK itself stays silent). */
  private logged(inner: PushMetricExporter): PushMetricExporter {
    const logger = this.opts.logger;
    return {
      export: (metrics, done) => {
        inner.export(metrics, (result) => {
          // ExportResultCode.SUCCESS is 0 (@opentelemetry/core, not a dependency of ours).
          const failed = Number(result.code) !== 0;
          if (failed && !this.exportFailing) logger.warn({ err: result.error?.message }, 'self-telemetry export failed');
          else if (!failed && this.exportFailing) logger.info('self-telemetry export recovered');
          this.exportFailing = failed;
          done(result);
        });
      },
      forceFlush: () => inner.forceFlush(),
      shutdown: () => inner.shutdown(),
      ...(inner.selectAggregationTemporality ? { selectAggregationTemporality: inner.selectAggregationTemporality.bind(inner) } : {}),
      ...(inner.selectAggregation ? { selectAggregation: inner.selectAggregation.bind(inner) } : {}),
    };
  }
}

/** SERVICE_SELF_OTEL_ENDPOINT as OTEL_EXPORTER_OTLP_ENDPOINT reads: a base URL gets /v1/metrics. */
export function metricsUrl(endpoint: string): string {
  const u = endpoint.replace(/\/+$/, '');
  return u.endsWith('/v1/metrics') ? u : `${u}/v1/metrics`;
}

function hrTime(ms: number): [number, number] {
  return [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];
}

/** OpenTelemetry's collected data as Prometheus families (same name across scopes merged). */
function toFamilies(rm: ResourceMetrics): MetricFamily[] {
  const families = new Map<string, MetricFamily>();
  const labels = (a: Attributes): Record<string, string> => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, String(v)]));
  for (const scope of rm.scopeMetrics) {
    for (const m of scope.metrics) {
      const { name, unit, description } = m.descriptor;
      if (m.dataPointType === DataPointType.HISTOGRAM) {
        const pname = prometheusName(name, unit, 'histogram');
        const f = families.get(pname) ?? { name: pname, help: description, type: 'histogram' as const, points: [] as HistogramPoint[] };
        if (f.type !== 'histogram') continue;
        for (const p of m.dataPoints) {
          f.points.push({ labels: labels(p.attributes), boundaries: p.value.buckets.boundaries, counts: p.value.buckets.counts, sum: p.value.sum ?? 0, count: p.value.count });
        }
        families.set(pname, f);
      } else if (m.dataPointType === DataPointType.SUM || m.dataPointType === DataPointType.GAUGE) {
        const type = m.dataPointType === DataPointType.SUM && m.isMonotonic ? 'counter' : 'gauge';
        const pname = prometheusName(name, unit, type);
        const f = families.get(pname) ?? { name: pname, help: description, type, points: [] as ScalarPoint[] };
        if (f.type === 'histogram') continue;
        for (const p of m.dataPoints) f.points.push({ labels: labels(p.attributes), value: p.value });
        families.set(pname, f);
      }
    }
  }
  return [...families.values()];
}

// Self-telemetry, the pure part: the worker's processing-lag histogram (kept in WorkerStats, so it
// can be read wherever the worker runs), HTTP status classes, and the Prometheus text exposition
// (format 0.0.4) of a few metric families.

/** Upper bounds (ms) of the processing-lag buckets: from an idle worker's tens of ms to a backlog's minutes. */
export const LAG_BOUNDS_MS: readonly number[] = [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000];

/** now − receivedAt of each job at its lease's commit, since start. */
export interface LagStats {
  boundsMs: readonly number[];
  /** Per bucket (not cumulative); one more than boundsMs: the last counts what exceeds them all. */
  counts: number[];
  sumMs: number;
  count: number;
  minMs: number;
  maxMs: number;
  /** The most recent job's lag. */
  lastMs: number;
}

export function newLagStats(boundsMs: readonly number[] = LAG_BOUNDS_MS): LagStats {
  return { boundsMs, counts: new Array<number>(boundsMs.length + 1).fill(0), sumMs: 0, count: 0, minMs: 0, maxMs: 0, lastMs: 0 };
}

export function recordLag(s: LagStats, lagMs: number): void {
  // A clock step backwards must not make a negative lag.
  const v = Math.max(0, lagMs);
  let i = 0;
  while (i < s.boundsMs.length && v > s.boundsMs[i]!) i++;
  s.counts[i] = (s.counts[i] ?? 0) + 1;
  s.minMs = s.count === 0 ? v : Math.min(s.minMs, v);
  s.maxMs = s.count === 0 ? v : Math.max(s.maxMs, v);
  s.sumMs += v;
  s.count++;
  s.lastMs = v;
}

/** '2xx' … '5xx' ('1xx' too); anything else 'other'. */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
}

// ─── Prometheus text exposition ─────────────────────────────────────────────────────────────────

export type Labels = Readonly<Record<string, string>>;

export interface ScalarPoint {
  labels: Labels;
  value: number;
}

export interface HistogramPoint {
  labels: Labels;
  /** Bucket upper bounds, ascending. */
  boundaries: readonly number[];
  /** Per bucket, not cumulative; boundaries.length + 1 entries (the last is above every bound). */
  counts: readonly number[];
  sum: number;
  count: number;
}

export type MetricFamily =
  | { name: string; help: string; type: 'counter' | 'gauge'; points: ScalarPoint[] }
  | { name: string; help: string; type: 'histogram'; points: HistogramPoint[] };

const UNIT_SUFFIX: Record<string, string> = { s: 'seconds', ms: 'milliseconds', By: 'bytes', '1': 'ratio' };

/**
 * An OpenTelemetry instrument name as a Prometheus metric name, as the OpenTelemetry-to-Prometheus
 * convention has it: invalid characters (dots) become '_', the unit is a suffix
 * (`http.server.request.duration` in s → `http_server_request_duration_seconds`), counters end in
 * `_total`. Annotation units like `{request}` add nothing.
 */
export function prometheusName(name: string, unit: string, type: MetricFamily['type']): string {
  let n = name.replace(/[^a-zA-Z0-9_:]/g, '_').replace(/_+/g, '_');
  if (/^[0-9]/.test(n)) n = `_${n}`;
  const suffix = UNIT_SUFFIX[unit];
  if (suffix && !n.endsWith(`_${suffix}`)) n = `${n}_${suffix}`;
  if (type === 'counter' && !n.endsWith('_total')) n = `${n}_total`;
  return n;
}

export function prometheusLabelName(key: string): string {
  const n = key.replace(/[^a-zA-Z0-9_]/g, '_');
  return /^[0-9]/.test(n) ? `_${n}` : n;
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function num(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const pairs = Object.entries(labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${prometheusLabelName(k)}="${escapeLabel(v)}"`);
  if (extra) pairs.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return pairs.length > 0 ? `{${pairs.join(',')}}` : '';
}

/** The families as Prometheus text (one # HELP and # TYPE each; histogram buckets cumulative, with +Inf). */
export function renderPrometheus(families: readonly MetricFamily[]): string {
  const out: string[] = [];
  for (const f of families) {
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    if (f.type === 'histogram') {
      for (const p of f.points) {
        let cumulative = 0;
        for (const [i, bound] of p.boundaries.entries()) {
          cumulative += p.counts[i] ?? 0;
          out.push(`${f.name}_bucket${labelText(p.labels, ['le', num(bound)])} ${cumulative}`);
        }
        out.push(`${f.name}_bucket${labelText(p.labels, ['le', '+Inf'])} ${p.count}`);
        out.push(`${f.name}_sum${labelText(p.labels)} ${num(p.sum)}`);
        out.push(`${f.name}_count${labelText(p.labels)} ${p.count}`);
      }
    } else {
      for (const p of f.points) out.push(`${f.name}${labelText(p.labels)} ${num(p.value)}`);
    }
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

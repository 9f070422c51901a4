// Line/bar charts through uPlot: small, fast on large series, and its legend shows the numbers
// under the cursor (hover, or focus the chart and use the values table below it). uPlot sets
// element.style from script, which the CSP allows (style-src governs style attributes in markup).
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  /** Format for the legend value. */
  format?: (v: number) => string;
  bars?: boolean;
}

const COLORS = ['#1e6fd9', '#d93526', '#2a8c4a', '#b86e00', '#7a4fbf', '#0f8a8a'];
const DAY_S = 86_400;
/** Width an x-axis day label needs ("Mar 05" in the axis font), gap included. */
const DAY_LABEL_PX = 56;

/** A day (epoch seconds, UTC midnight) as the x axis writes it: "Mar 5". */
export function dayLabel(s: number): string {
  return new Date(s * 1000).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

/**
 * The x range drawn: a lone point (one day, one execution) gets room on both sides instead of a
 * zero-width scale uPlot would widen to years; daily charts keep half a day around their first and
 * last day so their bars and dots are not cut at the edges (half a week for weekly ones: `step`,
 * the smallest distance between two points).
 */
export function xRange(min: number, max: number, days: boolean, step = DAY_S): [number, number] {
  if (days) return [min - step / 2, max + step / 2];
  if (min === max) {
    const pad = Math.max(1, Math.abs(min) * 1e-6, 60);
    return [min - pad, max + pad];
  }
  return [min, max];
}

/** The days the x axis labels: every day when they fit, else every k-th (the last one always). */
export function dayTicks(x: readonly number[], widthPx: number): number[] {
  if (x.length === 0) return [];
  const fit = Math.max(1, Math.floor(widthPx / DAY_LABEL_PX));
  const step = Math.ceil(x.length / fit);
  const ticks = x.filter((_, i) => (x.length - 1 - i) % step === 0);
  return ticks;
}

/** The values with no value beside them (a gap or the edge on both sides): a line draws nothing there. */
export function loneIndices(values: readonly (number | null)[]): number[] {
  const has = (i: number) => i >= 0 && i < values.length && values[i] !== null && values[i] !== undefined;
  return values.flatMap((_, i) => (has(i) && !has(i - 1) && !has(i + 1) ? [i] : []));
}

/**
 * `unit` names the y axis (e.g. "%", "min", "tests"); `yFormat` writes its ticks. A null value is a
 * gap in the line, not a 0; the figure's `data-gaps` counts them (for tests and for the curious).
 * `days`: x holds UTC days (epoch seconds at midnight): the axis labels those days, never hours or
 * years. Every point is drawn as a dot, so a series of one value (a single day) is visible; the
 * figure's `data-points` counts the non-null values drawn, `data-x-labels` lists what the x axis wrote,
 * `data-x-range` the x scale's min and max.
 */
export function Chart({
  title,
  x,
  series,
  height = 220,
  xTime = true,
  days = false,
  unit,
  yFormat,
}: {
  title: string;
  x: number[];
  series: ChartSeries[];
  height?: number;
  xTime?: boolean;
  days?: boolean;
  unit?: string;
  yFormat?: (v: number) => string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const fig = useRef<HTMLElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || x.length === 0) return;
    const width = () => Math.max(280, el.clientWidth);
    const step = x.slice(1).reduce((m, v, i) => Math.min(m, v - x[i]!), Number.POSITIVE_INFINITY);
    const xAxis: uPlot.Axis = days
      ? {
          splits: (u) => dayTicks(x, u.bbox.width / (devicePixelRatio || 1)),
          values: (_u, splits) => {
            const labels = splits.map((s) => dayLabel(s));
            fig.current?.setAttribute('data-x-labels', labels.join('|'));
            return labels;
          },
        }
      : {};
    const opts: uPlot.Options = {
      width: width(),
      height,
      scales: {
        // One point: uPlot widens a time scale to min + 86400 / ms (1000 days in seconds: the axis
        // read 2027 to 2029), so the lone point's own value is the range's centre.
        x: { time: xTime, range: (_u, min, max) => (x.length === 1 ? xRange(x[0]!, x[0]!, days) : xRange(min, max, days, Number.isFinite(step) && step > 0 ? step : DAY_S)) },
        // Counts and shares start at 0, so bar heights and levels compare honestly.
        y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] },
      },
      series: [
        { label: xTime ? (days ? 'Day' : 'Time') : 'x', value: xTime ? (_u, v) => (v == null ? '–' : new Date(v * 1000).toISOString().slice(0, days ? 10 : 16).replace('T', ' ')) : undefined },
        ...series.map((s, i) => {
          const color = COLORS[i % COLORS.length]!;
          return {
            label: s.label,
            stroke: color,
            width: 2,
            // Dots on every point while they are few; among many, on the lone ones (a value between
            // gaps has no line to be part of): one day's value is a dot, never nothing.
            points: { show: true, size: 7, fill: color, stroke: color, filter: x.length < 60 ? null : loneIndices(s.values) },
            value: (_u: uPlot, v: number | null) => (v == null ? '–' : s.format ? s.format(v) : String(Math.round(v * 1000) / 1000)),
            ...(s.bars ? { paths: uPlot.paths.bars!({ size: [0.6, 40, 6] }), fill: `${color}55` } : {}),
          };
        }),
      ],
      axes: [xAxis, { size: unit ? 64 : 56, ...(unit ? { label: unit, labelSize: 18 } : {}), ...(yFormat ? { values: (_u: uPlot, ticks: number[]) => ticks.map((t) => yFormat(t)) } : {}) }],
      legend: { live: true },
      cursor: { focus: { prox: 16 } },
      // The x range drawn, in the figure's data-x-range (for tests and for the curious).
      hooks: { setScale: [(u, key) => void (key === 'x' && fig.current?.setAttribute('data-x-range', `${u.scales.x!.min},${u.scales.x!.max}`))] },
    };
    const chart = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => chart.setSize({ width: width(), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      chart.destroy();
    };
  }, [JSON.stringify(x), JSON.stringify(series.map((s) => [s.label, s.values])), height, xTime, days, unit]);
  const gaps = series.reduce((n, s) => n + s.values.filter((v) => v === null).length, 0);
  const points = series.reduce((n, s) => n + s.values.filter((v) => v !== null).length, 0);
  return (
    <figure class="chart" ref={fig} data-gaps={gaps} data-points={points} data-unit={unit}>
      <figcaption>{title}</figcaption>
      {x.length === 0 ? <p class="muted">No data in this period yet.</p> : <div ref={box} role="img" aria-label={`${title}: chart${unit ? ` in ${unit}` : ''}, hover for values; the table below lists them`} />}
    </figure>
  );
}

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

/**
 * `unit` names the y axis (e.g. "%", "min", "tests"); `yFormat` writes its ticks. A null value is a
 * gap in the line, not a 0; the figure's `data-gaps` counts them (for tests and for the curious).
 */
export function Chart({
  title,
  x,
  series,
  height = 220,
  xTime = true,
  unit,
  yFormat,
}: {
  title: string;
  x: number[];
  series: ChartSeries[];
  height?: number;
  xTime?: boolean;
  unit?: string;
  yFormat?: (v: number) => string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || x.length === 0) return;
    const width = () => Math.max(280, el.clientWidth);
    const opts: uPlot.Options = {
      width: width(),
      height,
      // Counts and shares start at 0, so bar heights and levels compare honestly.
      scales: { x: { time: xTime }, y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
      series: [
        { label: xTime ? 'Time' : 'x', value: xTime ? (_u, v) => (v == null ? '–' : new Date(v * 1000).toISOString().slice(0, 10)) : undefined },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          points: { show: x.length < 60 },
          value: (_u: uPlot, v: number | null) => (v == null ? '–' : s.format ? s.format(v) : String(Math.round(v * 1000) / 1000)),
          ...(s.bars ? { paths: uPlot.paths.bars!({ size: [0.6, 40] }), fill: `${COLORS[i % COLORS.length]}55` } : {}),
        })),
      ],
      axes: [{}, { size: unit ? 64 : 56, ...(unit ? { label: unit, labelSize: 18 } : {}), ...(yFormat ? { values: (_u: uPlot, ticks: number[]) => ticks.map((t) => yFormat(t)) } : {}) }],
      legend: { live: true },
      cursor: { focus: { prox: 16 } },
    };
    const chart = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => chart.setSize({ width: width(), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      chart.destroy();
    };
  }, [JSON.stringify(x), JSON.stringify(series.map((s) => [s.label, s.values])), height, xTime, unit]);
  const gaps = series.reduce((n, s) => n + s.values.filter((v) => v === null).length, 0);
  return (
    <figure class="chart" data-gaps={gaps} data-unit={unit}>
      <figcaption>{title}</figcaption>
      {x.length === 0 ? <p class="muted">No data in this period yet.</p> : <div ref={box} role="img" aria-label={`${title}: chart${unit ? ` in ${unit}` : ''}, hover for values; the table below lists them`} />}
    </figure>
  );
}

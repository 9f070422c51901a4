// Flaky tests per day on the health page: distinct tests with a flaky execution per UTC day over
// the page's period (its selector), from the flaky_trends rollup (health.flakyTests). A day without executions is
// a gap in the line, not a zero. Its own query, so it loads beside the page's metrics.
import { api } from '../api.js';
import { Chart } from '../ui/chart.js';
import { num } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async } from '../ui/states.js';

const epoch = (day: string): number => Date.parse(`${day}T00:00:00Z`) / 1000;

export function FlakyTestsPerDay({ slug, days = 30 }: { slug: string; days?: number }) {
  const q = useQuery(() => api(slug).health.flakyTests.query({ days }), [slug, days]);
  return (
    <div data-testid="flaky-per-day" data-unit={q.data?.unit} data-days={q.data?.days.length}>
      <Async q={q} what="flaky tests per day">
        {(s) => {
          const known = s.days.filter((d) => d.flakyTests !== null);
          const peak = known.reduce((m, d) => Math.max(m, d.flakyTests ?? 0), 0);
          return (
            <>
              <Chart
                title={`Flaky tests per day (last ${days} days; a gap: no executions that day)`}
                x={s.days.map((d) => epoch(d.day))}
                series={[{ label: 'flaky tests', values: s.days.map((d) => d.flakyTests), bars: true, format: (v) => `${num(v)} ${v === 1 ? 'test' : 'tests'}` }]}
                unit={s.unit}
                days
              />
              <small class="muted" data-testid="flaky-per-day-summary">
                {known.length === 0 ? 'No executions in this period.' : `Peak ${num(peak)} ${peak === 1 ? 'test' : 'tests'} in a day; ${num(known.at(-1)?.flakyTests ?? 0)} on the latest day with runs.`}
              </small>
            </>
          );
        }}
      </Async>
    </div>
  );
}

// Project health: MTTR (flaky or broken → fixed), tests turning flaky or broken and fixed per week
// (the state transitions), the quarantine backlog, the reliability trend and the cost of flakiness
// (charts with the numbers on hover, and the same numbers in tables); suite health from the daily rollups.
import { api, type Outputs } from '../api.js';
import type { PageProps } from '../app.js';
import { navigate, projectPath, withQuery, type Location } from '../router.js';
import { Chart } from '../ui/chart.js';
import { field } from '../ui/form.js';
import { duration, num, pct } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { PeriodTabs, periodDays } from '../ui/period.js';
import { UrlInput } from '../ui/url-input.js';
import { Async, Empty, PageTitle, TableScroll } from '../ui/states.js';
import { HeadRow } from '../ui/table.js';
import { NoRunsHelp } from './no-runs.js';

const epoch = (day: string) => Math.floor(new Date(`${day.slice(0, 10)}T00:00:00Z`).getTime() / 1000);

function Tabs({ slug, current }: { slug: string; current: 'health' | 'suites' }) {
  return (
    <nav class="tabs" aria-label="Health views">
      <a href={projectPath(slug, 'health')} aria-current={current === 'health' ? 'page' : undefined}>
        Project health
      </a>
      <a href={projectPath(slug, 'suites')} aria-current={current === 'suites' ? 'page' : undefined}>
        Suite health
      </a>
    </nav>
  );
}

const RANGES = [30, 90, 180, 365];

export function HealthPage({ params, loc }: PageProps) {
  const slug = params.slug!;
  const days = RANGES.includes(Number(loc.query.get('days'))) ? Number(loc.query.get('days')) : 90;
  const owner = loc.query.get('owner')?.trim() || undefined;
  const q = useQuery(() => api(slug).health.metrics.query({ days, ...(owner ? { owner } : {}) }), [slug, days, owner]);
  return (
    <>
      <PageTitle title="Health">How flakiness in this project changes over time.</PageTitle>
      <Tabs slug={slug} current="health" />
      <RangeForm loc={loc} days={days} owner={owner} />
      <Async q={q} what="health metrics">
        {(h) => {
          if (h.reliabilityTrend.length === 0 && h.weekly.length === 0 && h.quarantine.currentBacklog === 0) return <NoRunsHelp slug={slug} what="No health data yet" />;
          return (
            <>
              <section class="cards" aria-label="Totals">
                <article>
                  <small class="muted">Mean time to fix a flaky or broken test</small>
                  <div class="value" data-testid="mttr-mean">
                    {h.mttr.meanMs === null ? '–' : duration(h.mttr.meanMs)}
                  </div>
                  <small>
                    median {h.mttr.medianMs === null ? '–' : duration(h.mttr.medianMs)} · {h.mttr.resolvedCount} fixed, {h.mttr.openCount} flaky or broken now
                  </small>
                </article>
                <article>
                  <small class="muted">Quarantine backlog</small>
                  <div class="value" data-testid="quarantine-backlog">
                    {h.quarantine.currentBacklog}
                  </div>
                  <small>tests quarantined now</small>
                </article>
                <article>
                  <small class="muted">Cost of flakiness ({h.rangeDays} days)</small>
                  <div class="value" data-testid="cost-total">
                    {num(h.cost.total)}
                  </div>
                  <small>
                    CI {num(h.cost.ciSpend)} + people {num(h.cost.peopleSpend)} · {h.cost.flakyOccurrences} flaky failures, {duration(h.cost.rerunMs)} of reruns
                  </small>
                </article>
              </section>
              <div class="charts">
                <Chart
                  title="Tests turning flaky or broken, and fixed, per week"
                  x={h.weekly.map((w) => epoch(w.weekStart))}
                  series={[
                    { label: 'turned flaky or broken', values: h.weekly.map((w) => w.introduced), bars: true },
                    { label: 'fixed', values: h.weekly.map((w) => w.resolved), bars: true },
                  ]}
                />
                <Chart title="Quarantine backlog" x={h.quarantine.trend.map((d) => epoch(d.day))} series={[{ label: 'quarantined', values: h.quarantine.trend.map((d) => d.count) }]} />
                <Chart
                  title="Reliability: share of executions passing"
                  x={h.reliabilityTrend.map((d) => epoch(d.day))}
                  series={[
                    { label: 'pass rate', values: h.reliabilityTrend.map((d) => d.passRate), format: (v) => pct(v, 1) },
                  ]}
                />
                <Chart title="Executions per day" x={h.reliabilityTrend.map((d) => epoch(d.day))} series={[{ label: 'executions', values: h.reliabilityTrend.map((d) => d.total), bars: true }]} />
              </div>
              <details>
                <summary>The numbers behind the charts</summary>
                <TableScroll label="Tests turning flaky or broken, and fixed, per week">
                  <table>
                    <HeadRow cols={['Week of', { label: 'Turned flaky or broken', num: true }, { label: 'Fixed', num: true }]} />
                    <tbody>
                      {h.weekly.map((w) => (
                        <tr key={w.weekStart}>
                          <td>{w.weekStart.slice(0, 10)}</td>
                          <td class="num">{w.introduced}</td>
                          <td class="num">{w.resolved}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </TableScroll>
                <p class="muted">
                  Cost rates: CI minute {num(h.cost.rates.ciMinute)}, developer hour {num(h.cost.rates.developerHour)}, {num(h.cost.rates.investigationMinutes)} minutes of
                  investigation per flaky failure (Settings → Policy).
                </p>
              </details>
            </>
          );
        }}
      </Async>
    </>
  );
}

function RangeForm({ loc, days, owner }: { loc: Location; days: number; owner: string | undefined }) {
  return (
    <form
      class="filters"
      aria-label="Health range"
      onSubmit={(e) => {
        e.preventDefault();
        const f = new FormData(e.currentTarget);
        navigate(withQuery(loc, { days: field(f, 'days'), owner: field(f, 'owner') }));
      }}
    >
      <label>
        Period
        <select name="days" value={String(days)} onChange={(e) => e.currentTarget.form!.requestSubmit()}>
          {RANGES.map((d) => (
            <option key={d} value={d}>
              last {d} days
            </option>
          ))}
        </select>
      </label>
      <label>
        Owner
        <UrlInput name="owner" urlValue={owner ?? ''} placeholder="@team" />
      </label>
      <button type="submit">Show</button>
    </form>
  );
}

type SuiteData = Outputs['health']['suites'];

export function SuitesPage({ params, loc }: PageProps) {
  const slug = params.slug!;
  const suite = loc.query.get('suite') || undefined;
  const day = /^\d{4}-\d{2}-\d{2}$/.test(loc.query.get('day') ?? '') ? loc.query.get('day')! : undefined;
  const days = periodDays(loc, RANGES, 30);
  const q = useQuery(() => api(slug).health.suites.query({ days, ...(suite ? { suite } : {}) }), [slug, suite, days]);
  const oneDay = useQuery(() => (day ? api(slug).health.suites.query({ day, ...(suite ? { suite } : {}) }) : Promise.resolve(null)), [slug, suite, day]);
  return (
    <>
      <PageTitle title="Suite health">{suite ? <>Suite <code>{suite}</code>, per UTC day, from the daily rollups.</> : 'Every suite, per UTC day, from the daily rollups.'}</PageTitle>
      <Tabs slug={slug} current="suites" />
      {suite ? (
        <p>
          <a href={projectPath(slug, 'suites')}>← All suites</a>
        </p>
      ) : null}
      <PeriodTabs loc={loc} ranges={RANGES} days={days} fallback={30} />
      {day && oneDay.data ? <DayNumbers data={oneDay.data} day={day} /> : null}
      <Async q={q} what="suite health">
        {(data) =>
          data.suites.length === 0 ? (
            suite ? (
              <Empty title="No rollups for this suite">
                <p>
                  Nothing was recorded for <code>{suite}</code> in the last {days} days. <a href={projectPath(slug, 'suites')}>See every suite</a>.
                </p>
              </Empty>
            ) : (
              <NoRunsHelp slug={slug} what="No suite rollups yet" />
            )
          ) : suite ? (
            <SuiteCharts data={data} suite={suite} />
          ) : (
            <SuiteTable slug={slug} data={data} />
          )
        }
      </Async>
    </>
  );
}

function DayNumbers({ data, day }: { data: SuiteData; day: string }) {
  return (
    <article aria-label={`Suites on ${day}`}>
      <h2>On {day}</h2>
      {data.suites.length === 0 ? (
        <p class="muted">No executions that day.</p>
      ) : (
        <ul>
          {data.suites.map((s) => (
            <li key={s.suite}>
              <code>{s.suite || '(no suite)'}</code>: {num(s.executions)} executions, {pct(s.failRate, 1)} failed, {pct(s.flakyRate, 1)} flaky, mean{' '}
              {duration(s.executions ? s.durationMs / s.executions : 0)}
            </li>
          ))}
        </ul>
      )}
    </article>
  );
}

function SuiteTable({ slug, data }: { slug: string; data: SuiteData }) {
  return (
    <>
      <p class="muted">
        {data.fromDay} to {data.toDay}, worst first (failed + flaky share).
      </p>
      <TableScroll label="Suites">
        <table class="striped row-cards suites">
          <HeadRow cols={['Suite', { label: 'Executions', num: true }, { label: 'Failed', num: true }, { label: 'Flaky', num: true }, { label: 'Mean duration', num: true }]} />
          <tbody>
            {data.suites.map((s) => (
              <tr key={s.suite}>
                <td data-label="Suite">
                  <a href={`${projectPath(slug, 'suites')}?suite=${encodeURIComponent(s.suite)}`}>{s.suite || '(no suite)'}</a>
                </td>
                <td class="num" data-label="Executions">
                  {num(s.executions)}
                </td>
                <td class="num" data-label="Failed">
                  {pct(s.failRate, 1)}
                </td>
                <td class="num" data-label="Flaky">
                  {pct(s.flakyRate, 1)}
                </td>
                <td class="num" data-label="Mean duration">
                  {duration(s.executions ? s.durationMs / s.executions : 0)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </>
  );
}

function SuiteCharts({ data, suite }: { data: SuiteData; suite: string }) {
  const rows = data.days.filter((d) => d.suite === suite).sort((a, b) => a.day.localeCompare(b.day));
  const x = rows.map((d) => epoch(d.day));
  return (
    <div class="charts">
      <Chart
        title="Failed and flaky share per day"
        x={x}
        series={[
          { label: 'failed', values: rows.map((d) => d.failRate), format: (v) => pct(v, 1) },
          { label: 'flaky', values: rows.map((d) => d.flakyRate), format: (v) => pct(v, 1) },
        ]}
      />
      <Chart title="Mean duration per day" x={x} series={[{ label: 'mean duration', values: rows.map((d) => (d.executions ? d.durationMs / d.executions : null)), format: (v) => duration(v) }]} />
      <Chart title="Executions per day" x={x} series={[{ label: 'executions', values: rows.map((d) => d.executions), bars: true }]} />
    </div>
  );
}

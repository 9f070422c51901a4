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

/** As src/api/routes/project-health.ts: fewer graded executions on a day leave its pass rate out. */
const MIN_PASS_RATE_EXECUTIONS = 5;
import { HeadRow } from '../ui/table.js';
import { NoRunsHelp } from './no-runs.js';
import { FlakyTestsPerDay } from './flaky-per-day.js';

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
/** The health page's periods: a week too (the suites tabs keep RANGES). */
const HEALTH_RANGES = [7, ...RANGES];
const DAY_MS = 86_400_000;

/** An amount in the configured currency ("$618.77", "618,77 €"); a code Intl does not know is written after the number. */
export function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
  } catch {
    return `${num(Math.round(amount * 100) / 100)} ${currency}`;
  }
}

const minutes = (ms: number): string => `${(ms / 60_000).toLocaleString(undefined, { maximumFractionDigits: 1 })} min`;

/** Every UTC day of the window (oldest first) with its pass rate, null where there is none (a gap in the line). */
function passRateDays(trend: { day: string; passRate: number | null }[], rangeDays: number): { x: number[]; values: (number | null)[] } {
  const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const byDay = new Map(trend.map((d) => [d.day.slice(0, 10), d.passRate]));
  const x: number[] = [];
  const values: (number | null)[] = [];
  for (let i = rangeDays - 1; i >= 0; i--) {
    const day = new Date(today - i * DAY_MS).toISOString().slice(0, 10);
    x.push(epoch(day));
    values.push(byDay.get(day) ?? null);
  }
  return { x, values };
}

export function HealthPage({ params, loc }: PageProps) {
  const slug = params.slug!;
  const days = HEALTH_RANGES.includes(Number(loc.query.get('days'))) ? Number(loc.query.get('days')) : 90;
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
          const rate = passRateDays(h.reliabilityTrend, h.rangeDays);
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
                    {money(h.cost.total, h.cost.currency)}
                  </div>
                  <small data-testid="cost-parts">
                    CI {money(h.cost.ciSpend, h.cost.currency)}: retried attempts {minutes(h.cost.rerunMs)}, re-runs {minutes(h.cost.reRunMs)} ({h.cost.reRunCount}{' '}
                    {h.cost.reRunCount === 1 ? 'job' : 'jobs'} run again) · people {money(h.cost.peopleSpend, h.cost.currency)}: {h.cost.flakyOccurrences} flaky{' '}
                    {h.cost.flakyOccurrences === 1 ? 'failure' : 'failures'} to investigate
                  </small>
                </article>
              </section>
              <div class="charts">
                <Chart
                  title="Tests turning flaky or broken, and fixed, per week"
                  x={h.weekly.map((w) => epoch(w.weekStart))}
                  series={[
                    { label: 'turned flaky or broken', values: h.weekly.map((w) => w.introduced), bars: true, format: (v) => `${num(v)} tests` },
                    { label: 'fixed', values: h.weekly.map((w) => w.resolved), bars: true, format: (v) => `${num(v)} tests` },
                  ]}
                  unit="tests"
                  days
                />
                <Chart
                  title="Quarantine backlog"
                  x={h.quarantine.trend.map((d) => epoch(d.day))}
                  series={[{ label: 'quarantined', values: h.quarantine.trend.map((d) => d.count), format: (v) => `${num(v)} tests` }]}
                  unit="tests"
                  days
                />
                <Chart
                  title={`Reliability: share of executions passing (a gap: no data, or fewer than ${MIN_PASS_RATE_EXECUTIONS} executions that day)`}
                  x={rate.x}
                  series={[{ label: 'pass rate', values: rate.values, format: (v) => pct(v, 1) }]}
                  unit="%"
                  yFormat={(v) => pct(v)}
                  days
                />
                <Chart
                  title="Executions per day"
                  x={h.reliabilityTrend.map((d) => epoch(d.day))}
                  series={[{ label: 'executions', values: h.reliabilityTrend.map((d) => d.total), bars: true, format: (v) => `${num(v)} executions` }]}
                  unit="executions"
                  days
                />
                <FlakyTestsPerDay slug={slug} days={h.rangeDays} />
              </div>
              <details>
                <summary>The numbers behind the charts</summary>
                <TableScroll label="Tests turning flaky or broken, and fixed, per week">
                  <table class="striped row-cards weekly">
                    <HeadRow cols={['Week of', { label: 'Turned flaky or broken', num: true }, { label: 'Fixed', num: true }]} />
                    <tbody>
                      {h.weekly.map((w) => (
                        <tr key={w.weekStart}>
                          <td data-label="Week of">{w.weekStart.slice(0, 10)}</td>
                          <td class="num" data-label="Turned flaky or broken">
                            {w.introduced}
                          </td>
                          <td class="num" data-label="Fixed">
                            {w.resolved}
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </TableScroll>
                <p class="muted">
                  Cost rates: CI minute {money(h.cost.rates.ciMinute, h.cost.currency)}, developer hour {money(h.cost.rates.developerHour, h.cost.currency)},{' '}
                  {num(h.cost.rates.investigationMinutes)} minutes of investigation per flaky failure (Settings → Policy; <code>cost.*</code> in service.yml). CI minutes are
                  retried attempts (attempt 2 and later) and whole-job re-runs: a later run of the same commit, branch, trigger and shard (scheduled runs excepted),
                  its wall time less the retries inside it.
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
          {HEALTH_RANGES.map((d) => (
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
        days
      />
      <Chart days title="Mean duration per day" x={x} series={[{ label: 'mean duration', values: rows.map((d) => (d.executions ? d.durationMs / d.executions : null)), format: (v) => duration(v) }]} />
      <Chart days title="Executions per day" x={x} series={[{ label: 'executions', values: rows.map((d) => d.executions), bars: true }]} />
    </div>
  );
}

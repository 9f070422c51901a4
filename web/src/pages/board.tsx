// The flaky board: scored tests, worst first, filtered and sorted through the URL (shareable),
// paged on the server; quarantine/release with a reason; CSV of the filtered board.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ALL_STATES, DEFAULT_BRANCH, PAGE_SIZE, RANGES, SORTS, STATE_FILTERS, boardCsv, boardInput, type BoardRow } from '../lib/board.js';
import type { PageProps } from '../app.js';
import { navigate, projectPath, withQuery, type Location } from '../router.js';
import { hasScope, useSession } from '../session.js';
import { ReasonDialog } from '../ui/dialog.js';
import { field } from '../ui/form.js';
import { ago, num, pct, score } from '../ui/format.js';
import { money } from './health.js';
import { RAW_RATE_DEF, flakeShare, rawShare, showsSince, sinceSha } from '../lib/state.js';
import { Term } from '../ui/term.js';
import { StatePill } from '../ui/state.js';
import { useQuery } from '../ui/query.js';
import { SlowedMark, useSlowed } from './board-slowed.js';
import { UrlInput } from '../ui/url-input.js';
import { Async, Empty, PageTitle, TableScroll } from '../ui/states.js';
import { NoRunsHelp } from './no-runs.js';

/** What each column of the board means: on hover and keyboard focus of its header. */
const COLUMN_DEFS = {
  test: "The test's title, with its suite and file below; opens the test's page.",
  state:
    'new (too few runs to judge), healthy, flaky (passes and fails on the same code: a quarantine candidate), broken (failing on its mainline since a commit) or fixed. For a flaky test: how often it flakes, the estimate and the raw share of its recent runs.',
  score:
    "Flakiness score from 0 to 1: how strong the evidence that the test is flaky is (1.00: certain). Its trend below. Tests with the same score rank by CI minutes lost, then failed runs.",
  rerun: 'Pass on rerun: of its runs whose first attempt failed, the share that passed on a retry in the same run.',
  flips: 'Flip rate: how often its result changed from one run to the next (pass to fail or back), over its last 32 runs.',
  impact: "What the test cost over the board's range (30 days when none is chosen). Sort by it with Sort by → Impact.",
  fails: 'Runs this test failed: its final attempt failed, so the run failed.',
  prs: 'Pull requests among those failed runs.',
  ciMin: 'CI minutes lost: its retried attempts, plus its share of the whole-job re-runs of the runs it failed.',
  cost: 'CI minutes lost × the cost of a CI minute (cost.ciMinute in the settings).',
  owners: 'Its owners by CODEOWNERS (uploaded with PUT /v1/codeowners).',
  flaked: 'When it last showed a sign of flakiness (failed, then passed on the same code).',
  quarantine: "A quarantined test's failures no longer fail the gate. Quarantine or release it here, with a reason.",
} as const;

export function BoardPage({ params, loc }: PageProps) {
  const slug = params.slug!;
  const { session } = useSession();
  const page = Math.max(0, Number(loc.query.get('page') ?? '0') || 0);
  const input = boardInput(loc.query, page);
  const q = useQuery(() => api(slug).flaky.board.query(input), [slug, input]);
  const [dialog, setDialog] = useState<{ row: BoardRow; action: 'quarantine' | 'release' } | null>(null);
  const slowed = useSlowed(slug, q.data?.items.map((r) => r.testIdentityId) ?? []);
  const canQuarantine = hasScope(session, 'quarantine');
  const filtered = ['owner', 'suite', 'file', 'minScore', 'quarantined', 'branch', 'range'].some((k) => loc.query.get(k));
  // No state in the URL: the default view, what needs attention; `state=all` or one state: chosen.
  const attention = input.attention === true;
  // Nothing needs attention: is there any scored test at all (else: how to send the first run)?
  const nothing = attention && !filtered && page === 0 && q.data?.items.length === 0;
  const anyTest = useQuery(() => (nothing ? api(slug).flaky.board.query({ limit: 1 }) : Promise.resolve(null)), [slug, nothing]);

  return (
    <>
      <PageTitle title="Flaky board">
        {attention ? 'Tests that need attention (flaky, broken or quarantined), worst first. ' : 'Tests ranked by flakiness score, worst first. '}
        {attention ? <a href={withQuery(loc, { state: ALL_STATES, page: null })}>Show all tests</a> : null}
      </PageTitle>
      <Filters loc={loc} />
      <Async q={q} what="the flaky board">
        {(data) =>
          data.items.length === 0 && page === 0 ? (
            attention && !filtered ? (
              !anyTest.data ? (
                <p aria-busy="true">Loading…</p>
              ) : anyTest.data.items.length === 0 ? (
                <NoRunsHelp slug={slug} what="No scored tests yet" />
              ) : (
                <Empty title="Nothing needs attention">
                  <p>
                    No test is flaky, broken or quarantined. <a href={withQuery(loc, { state: ALL_STATES, page: null })}>Show all tests</a>.
                  </p>
                </Empty>
              )
            ) : filtered || loc.query.get('state') ? (
              <Empty title="No test matches these filters">
                <p>
                  <a href={loc.path}>Clear the filters</a> or lower the minimum score.
                </p>
              </Empty>
            ) : (
              <NoRunsHelp slug={slug} what="No scored tests yet" />
            )
          ) : (
            <>
              <div class="toolbar">
                <span>
                  Tests {page * PAGE_SIZE + 1}–{page * PAGE_SIZE + data.items.length}{data.nextCursor ? ' (more on the next page)' : ''}
                  {q.loading ? <span aria-busy="true" class="muted"> updating</span> : null}
                </span>
                <CsvButton slug={slug} query={loc.query} />
              </div>
              <TableScroll label="Flaky tests">
                <table class="striped board row-cards">
                  <thead>
                    <tr>
                      <th scope="col" rowSpan={2}>
                        <Term def={COLUMN_DEFS.test}>Test</Term>
                      </th>
                      <th scope="col" rowSpan={2}>
                        <Term def={COLUMN_DEFS.state}>State</Term>
                      </th>
                      <th scope="col" rowSpan={2} class="num">
                        <Term def={COLUMN_DEFS.score}>Score</Term>
                      </th>
                      <th scope="col" rowSpan={2} class="num">
                        <Term def={COLUMN_DEFS.rerun}>Passed on retry</Term>
                      </th>
                      <th scope="col" rowSpan={2} class="num">
                        <Term def={COLUMN_DEFS.flips}>Result changes</Term>
                      </th>
                      <th scope="colgroup" colSpan={4} class="impact-group">
                        <Term def={COLUMN_DEFS.impact}>Impact, last {input.days ?? 30} days</Term>
                      </th>
                      <th scope="col" rowSpan={2}>
                        <Term def={COLUMN_DEFS.owners}>Owners</Term>
                      </th>
                      <th scope="col" rowSpan={2}>
                        <Term def={COLUMN_DEFS.flaked}>Last flaked</Term>
                      </th>
                      <th scope="col" rowSpan={2}>
                        <Term def={COLUMN_DEFS.quarantine}>Quarantine</Term>
                      </th>
                    </tr>
                    <tr>
                      <th scope="col" class="num">
                        <Term def={COLUMN_DEFS.fails}>Failed runs</Term>
                      </th>
                      <th scope="col" class="num">
                        <Term def={COLUMN_DEFS.prs}>PRs blocked</Term>
                      </th>
                      <th scope="col" class="num">
                        <Term def={COLUMN_DEFS.ciMin}>CI minutes lost</Term>
                      </th>
                      <th scope="col" class="num">
                        <Term def={COLUMN_DEFS.cost}>Cost</Term>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((row) => (
                      <tr key={row.testIdentityId}>
                        <td class="title-cell" data-label="Test">
                          <a href={projectPath(slug, 'tests', row.testIdentityId)}>{row.title}</a>
                          <SlowedMark info={slowed.get(row.testIdentityId)} />
                          <br />
                          <small class="muted">
                            {row.suite ? `${row.suite} · ` : ''}
                            {row.filePath}
                          </small>
                        </td>
                        <StateCell row={row} />
                        <td class="num score-cell" data-label="Score" title={`score ${row.score}${row.impact ? `; ${num(Math.round(row.impact.minutesLost * 10) / 10)} CI minutes lost (ties rank by it)` : ''}`}>
                          {score(row.score)}
                          <small class={`trend trend-${row.trend}`}>{row.trend}</small>
                          {row.quarantineCandidate ? (
                            <span class="pill" title="flaky: a quarantine candidate">
                              candidate
                            </span>
                          ) : null}
                        </td>
                        <td class="num" data-label="Passed on retry">
                          {pct(row.passOnRerunRate)}
                        </td>
                        <td class="num" data-label="Result changes">
                          {pct(row.flipRate)}
                        </td>
                        <ImpactCells row={row} />
                        <td class="owners" data-label="Owners">{row.owners.length ? row.owners.map((o) => <span key={o}>{o}</span>) : <span class="muted">none</span>}</td>
                        <td class="nowrap" data-label="Last flaked">
                          {ago(row.lastFlakedAt)}
                        </td>
                        <td class="quarantine" data-label="Quarantine">
                          {row.quarantined ? <span class="pill">quarantined</span> : <span class="muted">no</span>}{' '}
                          {canQuarantine ? (
                            <button
                              type="button"
                              class="small outline"
                              aria-label={`${row.quarantined ? 'Release' : 'Quarantine'} ${row.title}`}
                              onClick={() => setDialog({ row, action: row.quarantined ? 'release' : 'quarantine' })}
                            >
                              {row.quarantined ? 'Release' : 'Quarantine'}
                            </button>
                          ) : null}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableScroll>
              <Pager loc={loc} page={page} hasNext={data.nextCursor !== undefined} />
            </>
          )
        }
      </Async>
      {dialog ? (
        <QuarantineDialog
          slug={slug}
          testIdentityId={dialog.row.testIdentityId}
          title={dialog.row.title}
          action={dialog.action}
          onDone={q.reload}
          onClose={() => setDialog(null)}
        />
      ) : null}
    </>
  );
}

/** The row's impact over the board's window (its range, else 30 days). */
function ImpactCells({ row }: { row: BoardRow }) {
  const i = row.impact;
  return (
    <>
      <td class="num" data-label="Failed runs">
        {i ? num(i.failuresCaused) : '–'}
      </td>
      <td class="num" data-label="PRs blocked">
        {i ? num(i.prsBlocked) : '–'}
      </td>
      <td class="num" data-label="CI minutes lost">
        {i ? num(Math.round(i.minutesLost * 10) / 10) : '–'}
      </td>
      <td class="num nowrap" data-label="Cost">
        {i ? money(i.cost, i.currency) : '–'}
      </td>
    </>
  );
}

/** The row's state; broken and fixed name the commit it began with, flaky how often it flakes. */
function StateCell({ row }: { row: BoardRow }) {
  const since = showsSince(row.state) ? row.stateSince : null;
  const raw = rawShare(row.recentRuns);
  return (
    <td class="state-cell" data-label="State">
      <StatePill state={row.state} />
      {since?.commitSha ? (
        <>
          {' '}
          <small>
            since <code title={`${since.branch} ${since.commitSha}`}>{sinceSha(since.commitSha)}</code>
          </small>
        </>
      ) : row.state === 'flaky' ? (
        <>
          {' '}
          <small class="muted">in {flakeShare(row.flakeRate)} of runs</small>
          {raw ? (
            <>
              {' '}
              <small class="muted raw-rate" data-testid="board-raw-rate">
                <Term def={RAW_RATE_DEF}>({raw})</Term>
              </small>
            </>
          ) : null}
        </>
      ) : null}
    </td>
  );
}

export function QuarantineDialog({
  slug,
  testIdentityId,
  title,
  action,
  onDone,
  onClose,
}: {
  slug: string;
  testIdentityId: string;
  title: string;
  action: 'quarantine' | 'release';
  onDone: () => void;
  onClose: () => void;
}) {
  return (
    <ReasonDialog
      title={action === 'quarantine' ? 'Quarantine this test' : 'Release this test'}
      description={
        action === 'quarantine'
          ? `“${title}” will be reported as quarantined: its failures stop failing the gate. The decision and your reason are logged.`
          : `“${title}” will count again: its failures fail the gate. The decision and your reason are logged.`
      }
      confirmLabel={action === 'quarantine' ? 'Quarantine' : 'Release'}
      onConfirm={async (reason) => {
        const t = api(slug).test;
        if (action === 'quarantine') await t.quarantine.mutate({ testIdentityId, reason });
        else await t.release.mutate({ testIdentityId, reason });
        onDone();
      }}
      onClose={onClose}
    />
  );
}

function Filters({ loc }: { loc: Location }) {
  const q = loc.query;
  const apply = (form: HTMLFormElement) => {
    const f = new FormData(form);
    const get = (k: string) => field(f, k);
    const branchMode = get('branchMode');
    const branch = branchMode === 'named' ? get('branchName') : branchMode;
    navigate(
      withQuery(loc, {
        owner: get('owner'),
        suite: get('suite'),
        file: get('file'),
        minScore: get('minScore'),
        quarantined: get('quarantined'),
        state: get('state'),
        branch,
        range: get('range'),
        sort: get('sort') === 'score' ? null : get('sort'),
        page: null,
      }),
    );
  };
  const urlBranch = q.get('branch') ?? '';
  const [named, setNamed] = useState(urlBranch !== '' && urlBranch !== DEFAULT_BRANCH);
  return (
    <form
      class="filters"
      aria-label="Board filters"
      onSubmit={(e) => {
        e.preventDefault();
        apply(e.currentTarget);
      }}
    >
      <label>
        Owner
        <UrlInput name="owner" urlValue={q.get('owner') ?? ''} placeholder="@team or user" />
      </label>
      <label>
        Suite
        <UrlInput name="suite" urlValue={q.get('suite') ?? ''} />
      </label>
      <label>
        File
        <UrlInput name="file" urlValue={q.get('file') ?? ''} placeholder="src/cart.test.ts" />
      </label>
      <label>
        Minimum score
        <UrlInput name="minScore" type="number" min="0" max="1" step="0.05" urlValue={q.get('minScore') ?? ''} placeholder="0" />
      </label>
      <label>
        State
        <select name="state" value={q.get('state') ?? ''} onChange={(e) => apply(e.currentTarget.form!)}>
          <option value="">needs attention</option>
          <option value={ALL_STATES}>all tests</option>
          {STATE_FILTERS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Branch
        <select
          name="branchMode"
          value={named ? 'named' : urlBranch}
          onChange={(e) => {
            const v = e.currentTarget.value;
            setNamed(v === 'named');
            if (v !== 'named') apply(e.currentTarget.form!);
          }}
        >
          <option value="">any branch</option>
          <option value={DEFAULT_BRANCH}>default branch</option>
          <option value="named">another branch…</option>
        </select>
      </label>
      {named ? (
        <label>
          Branch name
          <UrlInput name="branchName" urlValue={urlBranch === DEFAULT_BRANCH ? '' : urlBranch} placeholder="main" />
        </label>
      ) : null}
      <label>
        Seen in
        <select name="range" value={q.get('range') ?? ''} onChange={(e) => apply(e.currentTarget.form!)}>
          <option value="">any time</option>
          {RANGES.map(([value, , label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Quarantined
        <select name="quarantined" value={q.get('quarantined') ?? ''} onChange={(e) => apply(e.currentTarget.form!)}>
          <option value="">all tests</option>
          <option value="true">quarantined only</option>
          <option value="false">not quarantined</option>
        </select>
      </label>
      <label>
        Sort by
        <select name="sort" value={q.get('sort') ?? 'score'} onChange={(e) => apply(e.currentTarget.form!)}>
          {SORTS.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Apply filters</button>
    </form>
  );
}

export function Pager({ loc, page, hasNext }: { loc: Location; page: number; hasNext: boolean }) {
  if (page === 0 && !hasNext) return null;
  return (
    <nav class="pager" aria-label="Pages">
      {page > 0 ? <a href={withQuery(loc, { page: page - 1 || null })}>← Previous page</a> : null}
      <span>Page {page + 1}</span>
      {hasNext ? <a href={withQuery(loc, { page: page + 1 })}>Next page →</a> : null}
    </nav>
  );
}

/** The whole filtered board (every page, up to 10,000 rows) as a CSV file. */
function CsvButton({ slug, query }: { slug: string; query: URLSearchParams }) {
  const [busy, setBusy] = useState(false);
  const [failed, setFailed] = useState('');
  const download = async () => {
    setBusy(true);
    setFailed('');
    try {
      const rows: BoardRow[] = [];
      for (let page = 0; page < 20; page++) {
        const data = await api(slug).flaky.board.query(boardInput(query, page, 500));
        rows.push(...data.items);
        if (!data.nextCursor) break;
      }
      const url = URL.createObjectURL(new Blob([boardCsv(rows)], { type: 'text/csv' }));
      const a = document.createElement('a');
      a.href = url;
      a.download = `flaky-board-${slug}.csv`;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      setFailed(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" class="small secondary" aria-busy={busy} disabled={busy} onClick={() => void download()}>
        Download CSV
      </button>
      {failed ? <span role="alert">CSV failed: {failed}</span> : null}
    </>
  );
}

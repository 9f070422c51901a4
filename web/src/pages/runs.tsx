// Runs, newest first, filtered by branch, commit, PR and status (all in the URL), cursor-paged;
// one run's page is run.tsx.
import { api, type Inputs } from '../api.js';
import type { PageProps } from '../app.js';
import { navigate, projectPath, withQuery, type Location } from '../router.js';
import { field } from '../ui/form.js';
import { ciJob, duration } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { UrlInput } from '../ui/url-input.js';
import { Async, Empty, PageTitle, TableScroll } from '../ui/states.js';
import { HeadRow, StartCells, type Column } from '../ui/table.js';
import { NoRunsHelp } from './no-runs.js';

export { RunPage } from './run.js';

type RunsInput = Exclude<Inputs['runs']['list'], void | undefined>;

/** The runs table's columns, each with its definition (on hover and keyboard focus). */
const RUN_COLUMNS: readonly Column[] = [
  { label: 'Started', title: 'When the run started (UTC); opens the run' },
  { label: 'Status', title: 'How the run ended: passed, failed (a test failed on its last attempt), running or canceled' },
  { label: 'Branch', title: 'The branch the run tested, and the CI job (with its matrix values) when the sender named it' },
  { label: 'Commit', title: 'The commit the run tested; opens its gate verdict and summary' },
  { label: 'PR', title: 'The pull request the run belongs to, if any' },
  { label: 'Tests', num: true, title: 'Tests in the run (each counted once, whatever its attempts)' },
  { label: 'Failed', num: true, title: 'Tests whose last attempt failed' },
  { label: 'Flaky', num: true, title: 'Tests that failed, then passed on a retry in the same run' },
  { label: 'Duration', num: true, title: "The run's wall time: from its start to its end" },
];
const STATUSES = ['passed', 'failed', 'running', 'canceled'] as const;

function runsInput(q: URLSearchParams): RunsInput {
  const input: RunsInput = { limit: 25 };
  const branch = q.get('branch')?.trim();
  if (branch) input.branch = branch;
  const sha = q.get('commitSha')?.trim();
  if (sha) input.commitSha = sha;
  const pr = Number(q.get('prNumber'));
  if (q.get('prNumber') && Number.isInteger(pr) && pr > 0) input.prNumber = pr;
  const status = q.get('status');
  if (status && (STATUSES as readonly string[]).includes(status)) input.status = status as RunsInput['status'];
  const cursor = q.get('cursor');
  if (cursor) input.cursor = cursor;
  return input;
}

export function RunsPage({ params, loc }: PageProps) {
  const slug = params.slug!;
  const input = runsInput(loc.query);
  const q = useQuery(() => api(slug).runs.list.query(input), [slug, input]);
  const filtered = ['branch', 'commitSha', 'prNumber', 'status'].some((k) => loc.query.get(k));
  return (
    <>
      <PageTitle title="Runs">Test runs, newest first.</PageTitle>
      <RunFilters loc={loc} />
      <Async q={q} what="runs">
        {(data) =>
          data.items.length === 0 && !input.cursor ? (
            filtered ? (
              <Empty title="No run matches these filters">
                <p>
                  <a href={loc.path}>Show every run</a>.
                </p>
              </Empty>
            ) : (
              <NoRunsHelp slug={slug} what="No runs yet" />
            )
          ) : (
            <>
              <TableScroll label="Runs">
                <table class="striped runs">
                  <HeadRow cols={RUN_COLUMNS} />
                  <tbody>
                    {data.items.map((r) => (
                      <tr key={r.id}>
                        <StartCells slug={slug} href={projectPath(slug, 'runs', r.id)} startedAt={r.startedAt} status={r.status} branch={r.branch} commitSha={r.commitSha} job={ciJob(r.ciJobName, r.ciJobMatrix)} />
                        <td class="nowrap">{r.prNumber !== null ? <a href={projectPath(slug, 'pulls', r.prNumber)}>#{r.prNumber}</a> : <span class="muted">–</span>}</td>
                        <td class="num">{r.counts.total}</td>
                        <td class="num">{r.counts.failed}</td>
                        <td class="num">{r.counts.flaky}</td>
                        <td class="num">{duration(r.durationMs)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableScroll>
              <nav class="pager" aria-label="Pages">
                {input.cursor ? <a href={withQuery(loc, { cursor: null })}>← Newest runs</a> : null}
                {data.nextCursor ? <a href={withQuery(loc, { cursor: data.nextCursor })}>Older runs →</a> : null}
              </nav>
            </>
          )
        }
      </Async>
    </>
  );
}

function RunFilters({ loc }: { loc: Location }) {
  const q = loc.query;
  const apply = (form: HTMLFormElement) => {
    const f = new FormData(form);
    const get = (k: string) => field(f, k);
    navigate(withQuery(loc, { branch: get('branch'), commitSha: get('commitSha'), prNumber: get('prNumber'), status: get('status'), cursor: null }));
  };
  return (
    <form
      class="filters"
      aria-label="Run filters"
      onSubmit={(e) => {
        e.preventDefault();
        apply(e.currentTarget);
      }}
    >
      <label>
        Branch
        <UrlInput name="branch" urlValue={q.get('branch') ?? ''} placeholder="main" />
      </label>
      <label>
        Commit
        <UrlInput name="commitSha" urlValue={q.get('commitSha') ?? ''} placeholder="3f2c1ab…" />
      </label>
      <label>
        Pull request
        <UrlInput name="prNumber" type="number" min="1" urlValue={q.get('prNumber') ?? ''} />
      </label>
      <label>
        Status
        <select name="status" value={q.get('status') ?? ''} onChange={(e) => apply(e.currentTarget.form!)}>
          <option value="">any</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Apply filters</button>
    </form>
  );
}

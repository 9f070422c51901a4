// One run, starting with what failed: one row per test with its attempts inside it, the tests whose
// final attempt failed first, then the flaky ones (failed, then passed), and the rest collapsed
// behind "N passed"; links to the CI job, the commit (on GitHub when it is there) and the PR.
import { useState } from 'preact/hooks';
import { api, type Outputs } from '../api.js';
import type { PageProps } from '../app.js';
import { projectPath } from '../router.js';
import { Artifacts, isArtifactView } from '../ui/artifacts.js';
import { duration, shortSha, when } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async, PageTitle, TableScroll } from '../ui/states.js';
import { Status } from '../ui/status.js';
import { CommitLink, HeadRow } from '../ui/table.js';

type Run = Outputs['run']['get'];
type Execution = Run['executions'][number];
type Outcome = 'failed' | 'flaky' | 'passed' | 'skipped';

/** A test of the run: its attempts in order and what they came to. */
export interface RunTest {
  testIdentityId: string;
  title: string;
  filePath: string;
  attempts: Execution[];
  outcome: Outcome;
  durationMs: number;
  /** The newest error of its attempts. */
  errorMessage: string | null;
  quarantined: boolean;
}

/**
 * The run's executions as tests: failed (the final attempt failed), flaky (an attempt failed or
 * flaked, the final one passed), passed, skipped (every attempt skipped); each kept in the order
 * its first attempt ran.
 */
export function runTests(executions: readonly Execution[]): RunTest[] {
  const byTest = new Map<string, Execution[]>();
  for (const e of executions) {
    const list = byTest.get(e.testIdentityId) ?? [];
    list.push(e);
    byTest.set(e.testIdentityId, list);
  }
  const rank: Record<Outcome, number> = { failed: 0, flaky: 1, passed: 2, skipped: 3 };
  const tests = [...byTest.values()].map((list, order) => {
    const attempts = list.map((e, i) => ({ e, i })).sort((a, b) => a.e.attempt - b.e.attempt || a.i - b.i).map((x) => x.e);
    const ran = attempts.filter((e) => e.status !== 'skip');
    const final = ran.at(-1);
    const outcome: Outcome = !final
      ? 'skipped'
      : final.status !== 'pass' && final.status !== 'flaky'
        ? 'failed'
        : ran.some((e) => e.status !== 'pass')
          ? 'flaky'
          : 'passed';
    const last = attempts.at(-1)!;
    return {
      order,
      test: {
        testIdentityId: last.testIdentityId,
        title: last.title,
        filePath: last.filePath,
        attempts,
        outcome,
        durationMs: attempts.reduce((s, e) => s + e.durationMs, 0),
        errorMessage: [...attempts].reverse().find((e) => e.errorMessage)?.errorMessage ?? null,
        quarantined: attempts.some((e) => e.quarantined),
      },
    };
  });
  return tests.sort((a, b) => rank[a.test.outcome] - rank[b.test.outcome] || a.order - b.order).map((x) => x.test);
}

export function RunPage({ params }: PageProps) {
  const slug = params.slug!;
  const runId = params.runId!;
  const q = useQuery(() => api(slug).run.get.query({ runId }), [slug, runId]);
  return (
    <Async q={q} what="the run" page="Run">
      {(r) => {
        const tests = runTests(r.executions);
        const of = (o: Outcome) => tests.filter((t) => t.outcome === o);
        const failed = of('failed');
        const flaky = of('flaky');
        const rest = [...of('passed'), ...of('skipped')];
        return (
          <>
            <PageTitle title={`Run on ${r.branch}`}>
              <Status status={r.status} /> {when(r.startedAt)} · {duration(r.durationMs)} · {r.ciProvider} ({r.trigger})
            </PageTitle>
            <RunLinks slug={slug} r={r} />
            <section class="cards" aria-label="Counts">
              {(['total', 'passed', 'failed', 'flaky', 'skipped'] as const).map((k) => (
                <article key={k}>
                  <small class="muted">{k}</small>
                  <div class="value" data-testid={`run-${k}`}>
                    {r.counts[k]}
                  </div>
                </article>
              ))}
            </section>
            {failed.length ? <TestTable slug={slug} title={`Failed (${failed.length})`} tests={failed} /> : null}
            {flaky.length ? <TestTable slug={slug} title={`Flaky: failed, then passed (${flaky.length})`} tests={flaky} /> : null}
            {!failed.length && !flaky.length && tests.length ? <p>Every test of this run passed.</p> : null}
            {rest.length ? <PassedTests slug={slug} tests={rest} /> : null}
            {!tests.length ? <p class="muted">This run has no executions.</p> : null}
          </>
        );
      }}
    </Async>
  );
}

/** The run's commit (here and on GitHub), CI job, pull request and the branch's other runs. */
function RunLinks({ slug, r }: { slug: string; r: Run }) {
  return (
    <p class="run-links">
      <span>
        Commit <CommitLink slug={slug} sha={r.commitSha} />
        {r.commitUrl ? (
          <>
            {' ('}
            <a href={r.commitUrl} rel="noopener noreferrer" aria-label={`Commit ${shortSha(r.commitSha)} on GitHub`}>
              on GitHub
            </a>
            {')'}
          </>
        ) : null}
        {r.repository ? (
          <>
            {' '}
            in <code>{r.repository}</code>
          </>
        ) : null}
      </span>
      {r.ciJobUrl ? (
        <span>
          <a href={r.ciJobUrl} rel="noopener noreferrer">
            CI job
          </a>
        </span>
      ) : null}
      {r.prNumber !== null ? (
        <span>
          <a href={projectPath(slug, 'pulls', r.prNumber)}>pull request #{r.prNumber}</a>
        </span>
      ) : null}
      <span>
        <a href={`${projectPath(slug, 'runs')}?branch=${encodeURIComponent(r.branch)}`}>other runs on {r.branch}</a>
      </span>
    </p>
  );
}

function TestTable({ slug, title, tests, errors = true }: { slug: string; title?: string; tests: RunTest[]; errors?: boolean }) {
  const table = (
    <TableScroll label={title ?? 'Passed tests'}>
      <table class="striped row-cards run-tests">
        <HeadRow cols={['Test', 'Result', 'Attempts', { label: 'Duration', num: true }, errors ? 'Error' : null]} />
        <tbody>
          {tests.map((t) => (
            <tr key={t.testIdentityId} data-outcome={t.outcome}>
              <td class="title-cell">
                <a href={projectPath(slug, 'tests', t.testIdentityId)}>{t.title}</a>
                {t.quarantined ? <span class="pill">quarantined</span> : null}
                <br />
                <small class="muted">{t.filePath}</small>
              </td>
              <td data-label="Result">
                <Status status={t.outcome} />
              </td>
              <td data-label="Attempts">
                <ol class="attempts">
                  {t.attempts.map((e) => (
                    <li key={e.id}>
                      <a href={projectPath(slug, 'executions', e.id)}>attempt {e.attempt}</a> <Status status={e.status} /> <small class="muted">{duration(e.durationMs)}</small>
                    </li>
                  ))}
                </ol>
              </td>
              <td class="num" data-label="Duration">
                {duration(t.durationMs)}
              </td>
              {errors ? (
                <td data-label="Error" class="run-error">
                  {t.errorMessage ? <small>{t.errorMessage.slice(0, 200)}</small> : <span class="muted">–</span>}
                  <RunArtifacts t={t} />
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
  if (!title) return table;
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      {table}
    </section>
  );
}

/** Images and downloads of the test's attempts (videos are on the execution page); nothing when there are none. */
function RunArtifacts({ t }: { t: RunTest }) {
  const items = t.attempts.flatMap((e) => e.artifacts).filter(isArtifactView).filter((a) => !a.contentType.startsWith('video/'));
  return items.length ? <Artifacts items={items} /> : null;
}

/** Tests that passed (or were skipped): collapsed, their rows rendered only once opened. */
function PassedTests({ slug, tests }: { slug: string; tests: RunTest[] }) {
  const [open, setOpen] = useState(false);
  const passed = tests.filter((t) => t.outcome === 'passed').length;
  const skipped = tests.length - passed;
  return (
    <details class="run-passed" open={open} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        {passed} passed{skipped ? `, ${skipped} skipped` : ''}
      </summary>
      {open ? <TestTable slug={slug} tests={tests} errors={false} /> : null}
    </details>
  );
}

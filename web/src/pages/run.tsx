// One run, starting with what failed: one row per test with its attempts inside it, the tests whose
// final attempt failed first, then the tests `flakehouse run` verified (--verify-new, --verify-fix,
// --retry-failed: their attempts marked, each with its verdict), then the flaky ones (failed, then
// passed), and the rest collapsed behind "N passed"; links to the CI job, the commit (on GitHub when
// it is there) and the PR.
import { useState } from 'preact/hooks';
import { api, type Outputs } from '../api.js';
import type { PageProps } from '../app.js';
import { projectPath } from '../router.js';
import { Artifacts, isArtifactView } from '../ui/artifacts.js';
import { ciJob, duration, shortSha, when } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async, PageTitle, TableScroll } from '../ui/states.js';
import { Status } from '../ui/status.js';
import { CommitLink, HeadRow } from '../ui/table.js';

type Run = Outputs['run']['get'];
type Execution = Run['executions'][number];
type Outcome = 'failed' | 'flaky' | 'passed' | 'skipped';
type VerifyKind = NonNullable<Execution['verify']>;

/** What `flakehouse run` proved of a test it re-ran, as its own output and the PR comment say it. */
export interface Verification {
  kind: VerifyKind;
  /** Attempts counted: for a new test every graded attempt (the job's own too), else the re-runs. */
  runs: number;
  failed: number;
  /** Whether the verdict holds the build (a new test that failed, a fix that did not hold). */
  blocks: boolean;
  /** The verdict in words: "new test failed 1 of 13", "fix verified: passed 20 of 20". */
  verdict: string;
  /** The status word beside it. */
  status: 'passed' | 'failed' | 'flaky';
}

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
  /** Set when `flakehouse run` re-ran the test itself (its attempts are marked). */
  verification: Verification | null;
}

/** The verdict of a verified test's attempts (client/src/contract/verify.ts verifyLine's words). */
export function verificationOf(attempts: readonly Execution[]): Verification | null {
  const marked = attempts.filter((e) => e.verify !== null);
  const kind = marked[0]?.verify;
  if (!kind) return null;
  // A new test's own attempts are marked too and count; a fix's and a retry's are the re-runs alone.
  const counted = (kind === 'new' ? attempts : marked).filter((e) => e.status !== 'skip');
  const runs = counted.length;
  const failed = counted.filter((e) => e.status === 'fail').length;
  if (kind === 'new') {
    return failed > 0
      ? { kind, runs, failed, blocks: true, verdict: `new test failed ${failed} of ${runs}: blocks the gate`, status: 'failed' }
      : { kind, runs, failed, blocks: false, verdict: `new test passed ${runs} of ${runs}`, status: 'passed' };
  }
  if (kind === 'fix') {
    return failed > 0 || runs === 0
      ? { kind, runs, failed, blocks: true, verdict: runs === 0 ? 'fix not verified: no clean re-run' : `fix not verified: failed ${failed} of ${runs}`, status: 'failed' }
      : { kind, runs, failed, blocks: false, verdict: `fix verified: passed ${runs} of ${runs}`, status: 'passed' };
  }
  return runs > failed
    ? { kind, runs, failed, blocks: false, verdict: `passed on a retry of the same code (${failed} failed ${failed === 1 ? 'retry' : 'retries'} before)`, status: 'flaky' }
    : { kind, runs, failed, blocks: false, verdict: `failed every retry (${runs})`, status: 'failed' };
}

const VERIFY_WORDS: Record<VerifyKind, string> = {
  new: 'new test, re-run to prove it (--verify-new)',
  fix: 'fix, re-run to prove it (--verify-fix)',
  retry: 'failed, retried by flakehouse run (--retry-failed)',
};

/** Each attempt's label: the job's own "attempt 2"; a verification's "run 3 of 13", "re-run 4 of 20", "retry 1 of 3". */
export function attemptLabels(attempts: readonly Execution[]): string[] {
  const marked = attempts.filter((e) => e.verify !== null);
  const kind = marked[0]?.verify ?? null;
  let i = 0;
  return attempts.map((e) => {
    if (kind === 'new') return `run ${attempts.indexOf(e) + 1} of ${attempts.length}`;
    if (e.verify === null) return `attempt ${e.attempt}`;
    i += 1;
    return `${e.verify === 'fix' ? 're-run' : e.verify === 'retry' ? 'retry' : 'run'} ${i} of ${marked.length}`;
  });
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
        verification: verificationOf(attempts),
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
        const job = ciJob(r.ciJobName, r.ciJobMatrix);
        // Tests `flakehouse run` re-ran itself are shown with their verdict, not as flakes or failures.
        const verified = tests.filter((t) => t.verification !== null).sort((a, b) => Number(b.verification!.blocks) - Number(a.verification!.blocks));
        const of = (o: Outcome) => tests.filter((t) => t.outcome === o && t.verification === null);
        const failed = of('failed');
        const flaky = of('flaky');
        const rest = [...of('passed'), ...of('skipped')];
        return (
          <>
            <PageTitle title={`Run on ${r.branch}`}>
              <Status status={r.status} /> {when(r.startedAt)} · <span title="The job's wall time as reported: from the run's start to its end (with flakehouse run, its re-runs included)">{duration(r.durationMs)}</span> ·{' '}
              {r.ciProvider} ({r.trigger})
              {job ? <span data-testid="run-job"> · job {job}</span> : null}
            </PageTitle>
            <RunLinks slug={slug} r={r} />
            <section class="cards counts" aria-label="Counts">
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
            {verified.length ? <TestTable slug={slug} title={`Verified by flakehouse run (${verified.length})`} tests={verified} verify /> : null}
            {flaky.length ? <TestTable slug={slug} title={`Flaky: failed, then passed (${flaky.length})`} tests={flaky} /> : null}
            {!failed.length && !flaky.length && !verified.length && tests.length ? <p>Every test of this run passed.</p> : null}
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

function TestTable({ slug, title, tests, errors = true, verify = false }: { slug: string; title?: string; tests: RunTest[]; errors?: boolean; verify?: boolean }) {
  const table = (
    <TableScroll label={title ?? 'Passed tests'}>
      <table class="striped row-cards run-tests">
        <HeadRow
          cols={[
            'Test',
            verify ? 'Verdict' : 'Result',
            'Attempts',
            { label: 'Time in tests', num: true, title: "The test's attempts added up (the run's own duration is its wall time, above)" },
            errors ? 'Error' : null,
          ]}
        />
        <tbody>
          {tests.map((t) => {
            const labels = attemptLabels(t.attempts);
            return (
              <tr key={t.testIdentityId} data-outcome={t.outcome} data-verify={t.verification?.kind}>
                <td class="title-cell">
                  <a href={projectPath(slug, 'tests', t.testIdentityId)}>{t.title}</a>
                  {t.quarantined ? <span class="pill">quarantined</span> : null}
                  <br />
                  <small class="muted">{t.filePath}</small>
                </td>
                <td data-label={verify ? 'Verdict' : 'Result'} data-testid={verify ? 'verify-verdict' : undefined}>
                  {t.verification ? (
                    <>
                      <Status status={t.verification.status} /> <span class="verdict">{t.verification.verdict}</span>
                      <br />
                      <small class="muted">{VERIFY_WORDS[t.verification.kind]}</small>
                    </>
                  ) : (
                    <Status status={t.outcome} />
                  )}
                </td>
                <td data-label="Attempts">
                  <Attempts slug={slug} attempts={t.attempts} labels={labels} />
                </td>
                <td class="num" data-label="Time in tests">
                  {duration(t.durationMs)}
                </td>
                {errors ? (
                  <td data-label="Error" class="run-error">
                    {t.errorMessage ? <small>{t.errorMessage.slice(0, 200)}</small> : <span class="muted">–</span>}
                    <RunArtifacts t={t} />
                  </td>
                ) : null}
              </tr>
            );
          })}
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

/** A test's attempts, each linked to its execution; more than 6 (a verification's re-runs) folded behind their tally. */
function Attempts({ slug, attempts, labels }: { slug: string; attempts: Execution[]; labels: string[] }) {
  const list = (
    <ol class="attempts">
      {attempts.map((e, i) => (
        <li key={e.id}>
          <a href={projectPath(slug, 'executions', e.id)}>{labels[i]}</a> <Status status={e.status} /> <small class="muted">{duration(e.durationMs)}</small>
        </li>
      ))}
    </ol>
  );
  if (attempts.length <= 6) return list;
  const failed = attempts.filter((e) => e.status === 'fail').length;
  const skipped = attempts.filter((e) => e.status === 'skip').length;
  return (
    <details class="attempts-more">
      <summary>
        {attempts.length} attempts: {attempts.length - failed - skipped} passed, {failed} failed{skipped ? `, ${skipped} skipped` : ''}
      </summary>
      {list}
    </details>
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

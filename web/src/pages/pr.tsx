// A commit or a pull request: the summary and the gate verdict as the PR comment shows them; a pull
// request lists every commit with its verdict (pr-commits.tsx).
import { api, type Outputs } from '../api.js';
import type { PageProps } from '../app.js';
import { projectPath } from '../router.js';
import { CopyButton } from '../ui/copy.js';
import { pct, score, shortSha } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async, PageTitle, TableScroll } from '../ui/states.js';
import { Status } from '../ui/status.js';
import { CommitLink, HeadRow } from '../ui/table.js';
import { CLASSIFICATION_TEXT, STATUS_CLASS, statusOf, type GateTest } from '../lib/gate.js';
import { PrCommits } from './pr-commits.js';

type Pr = Outputs['pr']['summary'];

export function CommitPage({ params }: PageProps) {
  const slug = params.slug!;
  const sha = params.sha!;
  const q = useQuery(() => api(slug).pr.summary.query({ commitSha: sha }), [slug, sha]);
  return (
    <>
      <PageTitle title={`Commit ${shortSha(sha)}`}>
        <a href={`${projectPath(slug, 'runs')}?commitSha=${encodeURIComponent(sha)}`}>Runs of this commit</a>
      </PageTitle>
      <Async q={q} what="the commit summary">
        {(data) => <PrView slug={slug} data={data} />}
      </Async>
    </>
  );
}

/** Every commit of the PR with its verdict, newest first; the latest opens on its summary and gate. */
export function PullPage({ params }: PageProps) {
  const slug = params.slug!;
  const pr = Number(params.prNumber);
  const q = useQuery(() => api(slug).pr.summary.query({ prNumber: pr }), [slug, pr]);
  const commits = useQuery(() => api(slug).pr.commits.query({ prNumber: pr }), [slug, pr]);
  return (
    <>
      <PageTitle title={`Pull request #${params.prNumber}`}>
        <a href={`${projectPath(slug, 'runs')}?prNumber=${encodeURIComponent(params.prNumber!)}`}>Runs of this pull request</a>
      </PageTitle>
      <Async q={q} what="the pull request summary">
        {(data) => (
          <Async q={commits} what="the pull request's commits">
            {(list) =>
              list.commits.length ? (
                <PrCommits slug={slug} data={list} latestSha={data.commitSha} latest={<PrView slug={slug} data={data} />} view={(d) => <PrView slug={slug} data={d} />} />
              ) : (
                <PrView slug={slug} data={data} />
              )
            }
          </Async>
        )}
      </Async>
    </>
  );
}

/**
 * One commit: its header and its table read the gate's one summary (client/src/contract/pr-summary.ts
 * prTally): the status is the gate's verdict over every job of the commit, never the newest run's,
 * and the counts are the gate's, as its JSON, its markdown and the CLI say them.
 */
function PrView({ slug, data }: { slug: string; data: Pr }) {
  const s = data.summary;
  const g = data.gate;
  const verdictClass = !g ? 'verdict-pending' : g.verdict === 'pass' ? 'verdict-pass' : 'verdict-fail';
  const status = g ? statusOf(g) : (s.status ?? null);
  // Failed and flaky from the same answer as the counts (the gate's), so the two add up to the same tests.
  const failed = g?.failed ?? s.failed;
  const flaky = g?.flaky ?? s.flaky;
  const jobs = g?.jobs ?? s.jobs;
  return (
    <>
      <article class={verdictClass} aria-label="Gate verdict">
        <h2 data-testid="gate-verdict">{!g ? 'No gate verdict' : g.verdict === 'pass' ? 'Gate: pass' : 'Gate: blocked'}</h2>
        {g ? (
          <p>
            Against <code>{g.baseBranch}</code>: <span data-testid="gate-counts">{g.countsText}</span> (strictness {g.strictness}).
            {g.complete ? '' : ' Runs of this commit are still arriving: the verdict may change.'}
          </p>
        ) : (
          <p class="muted">The gate has not judged this commit.</p>
        )}
        <p>
          Commit{' '}
          <CommitLink slug={slug} sha={s.commitSha} />{' '}
          on <code>{s.branch}</code>
          {s.prNumber !== null ? (
            <>
              {' '}
              · <a href={projectPath(slug, 'pulls', s.prNumber)}>#{s.prNumber}</a>
            </>
          ) : null}{' '}
          {status ? (
            <>
              ·{' '}
              <span class={`status ${STATUS_CLASS[status]}`} data-testid="pr-status">
                {status}
              </span>{' '}
            </>
          ) : null}
          {jobs !== undefined && jobs > 1 ? `· ${jobs} jobs ` : ''}· {s.totalTests} tests ran, <span data-testid="summary-failed">{failed}</span> failed,{' '}
          <span data-testid="summary-flaky">{flaky}</span> flaky
        </p>
      </article>
      {s.tests.length ? (
        <TableScroll label="Failing and flaky tests">
          <table class="striped row-cards pr-tests">
            <HeadRow cols={['Test', 'Status', 'Gate', { label: 'Score', num: true }, 'Why']} />
            <tbody>
              {s.tests.map((t) => {
                const gt = g?.tests.find((x) => x.testIdentityId === t.testIdentityId);
                return (
                  <tr key={t.testIdentityId} data-classification={gt?.classification}>
                    <td class="title-cell" data-label="Test">
                      <a href={projectPath(slug, 'tests', t.testIdentityId)}>{t.title}</a>
                      <br />
                      <small class="muted">{t.filePath}</small>
                      {t.errorMessage ? (
                        <>
                          <br />
                          <small>{t.errorMessage.slice(0, 200)}</small>
                        </>
                      ) : null}
                    </td>
                    <td data-label="Status">
                      <Status status={t.status} />
                      {t.quarantined ? <span class="pill">quarantined</span> : null}
                    </td>
                    <td data-label="Gate">
                      {gt && g ? (
                        <GateCell slug={slug} t={gt} baseBranch={g.baseBranch} />
                      ) : (
                        <span class="muted">–</span>
                      )}
                    </td>
                    <td class="num" data-label="Score">
                      {score(t.score)}
                    </td>
                    <td data-label="Why">{t.topReason ?? <span class="muted">–</span>}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableScroll>
      ) : (
        <p>Every test of this commit passed.</p>
      )}
      <PrComment which="summary" markdown={data.summaryMarkdown} testid="pr-markdown" />
      {data.gateMarkdown ? <PrComment which="gate" markdown={data.gateMarkdown} testid="gate-markdown" /> : null}
    </>
  );
}

/** The gate's word for a failing test; one already broken on the base names the break's first failing commit there. */
function GateCell({ slug, t, baseBranch }: { slug: string; t: GateTest; baseBranch: string }) {
  return (
    <>
      {t.classification === 'broken_on_base' ? (
        <span data-testid="gate-broken-on-base">
          already broken on <code>{baseBranch}</code>
          {t.brokenSince ? (
            <>
              {' '}
              since <CommitLink slug={slug} sha={t.brokenSince.commitSha} />
            </>
          ) : null}
        </span>
      ) : (
        CLASSIFICATION_TEXT[t.classification]
      )}
      <br />
      <small class="muted">
        base fails {pct(t.baseFailRate)} of {t.baseSampleSize}
      </small>
    </>
  );
}

function PrComment({ which, markdown, testid }: { which: 'summary' | 'gate'; markdown: string; testid: string }) {
  return (
    <details>
      <summary>{`The PR comment: ${which} (Markdown)`}</summary>
      <p>
        <CopyButton text={markdown} label={`Copy the ${which} comment`} />
      </p>
      <pre class="markdown" data-testid={testid}>
        {markdown}
      </pre>
    </details>
  );
}

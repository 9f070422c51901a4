// Error clusters: failures grouped by error signature, by occurrences and tests affected, each
// with its root-cause report when one was written.
import { api } from '../api.js';
import type { PageProps } from '../app.js';
import { projectPath } from '../router.js';
import { ago, num, pct } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async, PageTitle } from '../ui/states.js';
import { PeriodTabs, periodDays } from '../ui/period.js';
import { NoRunsHelp } from './no-runs.js';

const RANGES = [7, 30, 90, 365];

export function ClustersPage({ params, loc }: PageProps) {
  const slug = params.slug!;
  const days = periodDays(loc, RANGES, 30);
  const q = useQuery(() => api(slug).clusters.list.query({ days }), [slug, days]);
  return (
    <>
      <PageTitle title="Error clusters">Failures grouped by their error signature, most frequent first.</PageTitle>
      <PeriodTabs loc={loc} ranges={RANGES} days={days} fallback={30} />
      <Async q={q} what="error clusters">
        {(data) =>
          data.items.length === 0 ? (
            <NoRunsHelp slug={slug} what={`No failures clustered in the last ${days} days`} />
          ) : (
            <>
              {data.items.map((c) => (
                <article key={c.clusterId} id={`cluster-${c.clusterId}`} aria-labelledby={`cluster-h-${c.clusterId}`}>
                  <header>
                    <h2 id={`cluster-h-${c.clusterId}`} class="cluster-title">
                      {c.errorType ? <code>{c.errorType}</code> : null} {c.errorMessage.slice(0, 300) || '(no message)'}
                    </h2>
                    <small>
                      <span data-testid="cluster-occurrences">{num(c.occurrences)}</span> occurrences · <span data-testid="cluster-tests">{num(c.testsAffected)}</span> tests
                      affected · first {ago(c.firstSeenAt)}, last {ago(c.lastSeenAt)}
                    </small>
                  </header>
                  <p>
                    Example: <a href={projectPath(slug, 'executions', c.exampleExecutionId)}>a failing execution</a> of{' '}
                    <a href={projectPath(slug, 'tests', c.exampleTestId)}>its test</a>.
                  </p>
                  {c.rca ? (
                    <section aria-label="Root cause">
                      <p>
                        <strong>{c.rca.summary}</strong> <small class="muted">confidence {pct(c.rca.confidence)}</small>
                      </p>
                      <p>
                        <em>Likely cause:</em> {c.rca.likelyCause}
                      </p>
                      <p>
                        <em>Suggested action:</em> {c.rca.suggestedAction}
                      </p>
                    </section>
                  ) : (
                    <p class="muted">No root-cause report for this cluster.</p>
                  )}
                </article>
              ))}
            </>
          )
        }
      </Async>
    </>
  );
}

// Error clusters: failures grouped by error signature, by occurrences and tests affected, each
// with its root-cause report when one was written.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import type { PageProps } from '../app.js';
import { projectPath } from '../router.js';
import { ago, num, pct } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async, PageTitle } from '../ui/states.js';
import { PeriodTabs, periodDays } from '../ui/period.js';
import { NoRunsHelp } from './no-runs.js';

const RANGES = [7, 30, 90, 365];
/** Lines of an error shown before "Show all". */
const ERROR_LINES = 4;

function plural(n: number, one: string, many: string): string {
  return n === 1 ? one : many;
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0]!.trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/** The error as it was written (monospace, lines kept), its first lines only until asked for all. */
function ErrorText({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  if (!text) return <p class="muted">(no message)</p>;
  const long = text.split('\n').length > ERROR_LINES || text.length > 320;
  return (
    <div class="cluster-error">
      <pre class={long && !open ? 'clamped' : undefined} data-testid="cluster-error">
        {text}
      </pre>
      {long ? (
        <button type="button" class="secondary outline small" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Show less' : 'Show the whole error'}
        </button>
      ) : null}
    </div>
  );
}

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
                      {c.errorType || firstLine(c.errorMessage) || 'Error without a message'}
                    </h2>
                    <small>
                      <span data-testid="cluster-occurrences">{num(c.occurrences)}</span> {plural(c.occurrences, 'occurrence', 'occurrences')} ·{' '}
                      <span data-testid="cluster-tests">{num(c.testsAffected)}</span> {plural(c.testsAffected, 'test', 'tests')} affected · first {ago(c.firstSeenAt)}, last{' '}
                      {ago(c.lastSeenAt)}
                    </small>
                  </header>
                  <ErrorText text={c.errorMessage} />
                  <p data-testid="cluster-example">
                    Example:{' '}
                    <a href={projectPath(slug, 'executions', c.exampleExecutionId)}>a failing execution</a> of{' '}
                    <a href={projectPath(slug, 'tests', c.exampleTestId)}>
                      {c.exampleSuite ? `${c.exampleSuite} › ` : ''}
                      {c.exampleTitle || 'its test'}
                    </a>
                    {c.exampleFilePath ? (
                      <>
                        {' '}
                        in <code>{c.exampleFilePath}</code>
                      </>
                    ) : null}
                    .
                  </p>
                  {c.rca ? (
                    <details class="cluster-rca" aria-label="Root cause">
                      <summary>
                        <strong>{c.rca.summary}</strong> <small class="muted">confidence {pct(c.rca.confidence)}</small>
                      </summary>
                      <p>
                        <em>Likely cause:</em> {c.rca.likelyCause}
                      </p>
                      <p>
                        <em>Suggested action:</em> {c.rca.suggestedAction}
                      </p>
                    </details>
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

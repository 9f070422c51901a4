// One execution: error and stack, its attempts, the RCA report and its artifacts.
import { api } from '../api.js';
import type { PageProps } from '../app.js';
import { projectPath } from '../router.js';
import { Artifacts } from '../ui/artifacts.js';
import { duration, when } from '../ui/format.js';
import { RcaReport } from '../ui/rca.js';
import { useQuery } from '../ui/query.js';
import { Async, PageTitle, TableScroll } from '../ui/states.js';
import { Status } from '../ui/status.js';
import { CommitLink, HeadRow } from '../ui/table.js';

export function ExecutionPage({ params }: PageProps) {
  const slug = params.slug!;
  const id = params.executionId!;
  const q = useQuery(() => api(slug).execution.get.query({ executionId: id }), [slug, id]);
  return (
    <Async q={q} what="the execution" page="Execution">
      {(e) => (
        <>
          <PageTitle title={e.title}>
            <Status status={e.status} /> attempt {e.attempt} · {duration(e.durationMs)} · {when(e.startedAt)}
          </PageTitle>
          <p>
            Test: <a href={projectPath(slug, 'tests', e.testIdentityId)}>{e.title}</a> <small class="muted">{e.filePath}</small>
            <br />
            Run: <a href={projectPath(slug, 'runs', e.runId)}>{e.runId}</a> on <code>{e.branch}</code> at{' '}
            <CommitLink slug={slug} sha={e.commitSha} />
          </p>

          <section aria-labelledby="err">
            <h2 id="err">Error</h2>
            {e.errorMessage || e.errorStack ? (
              <>
                {e.errorType ? (
                  <p>
                    <code>{e.errorType}</code>
                  </p>
                ) : null}
                {e.errorMessage ? <pre class="wrap" data-testid="error-message">{e.errorMessage}</pre> : null}
                {e.errorStack ? (
                  <details open>
                    <summary>Stack trace</summary>
                    <pre class="stack">{e.errorStack}</pre>
                  </details>
                ) : null}
              </>
            ) : (
              <p class="muted">No error: this execution {e.status === 'skip' ? 'was skipped' : 'passed'}.</p>
            )}
          </section>

          <section aria-labelledby="attempts">
            <h2 id="attempts">Attempts in this run</h2>
            <TableScroll label="Attempts">
              <table>
                <HeadRow cols={['Attempt', 'Status', { label: 'Duration', num: true }, 'Error']} />
                <tbody>
                  {e.attempts.map((a) => (
                    <tr key={a.id} aria-current={a.id === e.id ? 'true' : undefined}>
                      <td>{a.id === e.id ? `${a.attempt} (this one)` : <a href={projectPath(slug, 'executions', a.id)}>{a.attempt}</a>}</td>
                      <td>
                        <Status status={a.status} />
                      </td>
                      <td class="num">{duration(a.durationMs)}</td>
                      <td>{a.errorMessage ? <small>{a.errorMessage.slice(0, 200)}</small> : null}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          </section>

          <section aria-labelledby="rca">
            <h2 id="rca">Root cause</h2>
            {e.rca ? (
              <RcaReport slug={slug} report={e.rca} />
            ) : (
              <p class="muted">No root-cause report for this execution: reports are written for the first failure of each new error cluster when the RCA exporter is on.</p>
            )}
          </section>

          <section aria-labelledby="artifacts">
            <h2 id="artifacts">Artifacts</h2>
            <Artifacts items={e.artifacts} />
          </section>
        </>
      )}
    </Async>
  );
}

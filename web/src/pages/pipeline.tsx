// The running pipeline for operators: each pipeline of the YAML file drawn as receivers →
// processors → exporters columns, each component with its counters, plus the worker's counters,
// queue depth, lag and dead jobs; refreshed every 3 s.
import { api, type Outputs } from '../api.js';
import type { PageProps } from '../app.js';
import { isAdmin, useSession } from '../session.js';
import { duration, num, when } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async, Empty, PageTitle, TableScroll } from '../ui/states.js';
import { HeadRow } from '../ui/table.js';

type Graph = Outputs['pipeline']['graph'];
type Component = Graph['components'][number];

const REFRESH_MS = 3000;

export function PipelinePage(_: PageProps) {
  const { session } = useSession();
  if (!isAdmin(session)) {
    return (
      <>
        <PageTitle title="Pipeline" />
        <Empty title="For operators">
          <p>The pipeline page needs the admin token: sign out and sign in with it.</p>
        </Empty>
      </>
    );
  }
  return <PipelineView />;
}

function PipelineView() {
  const q = useQuery(() => api(null).pipeline.graph.query(), [], { refreshMs: REFRESH_MS });
  return (
    <>
      <PageTitle title="Pipeline">The running graph; counters refresh every {REFRESH_MS / 1000} seconds.</PageTitle>
      <Async q={q} what="the pipeline">
        {(g) => (
          <>
            <section class="cards" aria-label="Queue">
              <Card label="Queue depth" testid="queue-depth" value={num(g.queue.depth)} note={`${num(g.queue.pending)} waiting, ${num(g.queue.inflight)} leased, ${num(g.queue.delayed)} delayed`} />
              <Card
                label="Lag"
                testid="queue-lag"
                value={g.lag.lastMs === null ? '–' : duration(g.lag.lastMs)}
                note={g.lag.count ? `accepted → stored, last job; mean ${duration(g.lag.meanMs)}, max ${duration(g.lag.maxMs)}` : 'no job processed since start'}
              />
              <Card label="Dead jobs" testid="dead-jobs" value={num(g.deadJobs.count)} note={g.deadJobs.count ? 'listed below; replay with POST /v1/admin/dead-jobs' : 'none'} />
              <Card label="Executions stored" testid="worker-executions" value={num(g.worker.executions)} note={`${num(g.worker.jobs)} jobs, ${num(g.worker.failures)} failed attempts`} />
            </section>
            {g.pipelines.map((p) => (
              <section key={p.id} aria-labelledby={`pipeline-${p.id}`}>
                <h2 id={`pipeline-${p.id}`}>
                  Pipeline <code>{p.id}</code> {p.signal !== p.id ? <small class="muted">{p.signal}</small> : null}
                </h2>
                <div class="graph" role="group" aria-label={`Pipeline ${p.id}: receivers, processors, exporters`}>
                  <Column pipeline={p.id} title="Receivers" kind="receivers" ids={p.receivers} components={g.components} />
                  <Column pipeline={p.id} title="Processors" kind="processors" ids={p.processors} components={g.components} />
                  <Column pipeline={p.id} title="Exporters" kind="exporters" ids={p.exporters} components={g.components} />
                </div>
              </section>
            ))}
            <section aria-labelledby="ingest-h">
              <h2 id="ingest-h">Receivers' ingest routes</h2>
              <TableScroll label="Ingest routes since start">
                <table class="striped">
                  <HeadRow cols={['Route', { label: 'Requests', num: true }, { label: 'Refused (4xx)', num: true }, { label: 'Failed (5xx)', num: true }]} />
                  <tbody>
                    {g.ingest.map((r) => (
                      <tr key={r.method + r.url}>
                        <td>
                          <code>
                            {r.method} {r.url}
                          </code>
                        </td>
                        <td class="num">{num(r.requests)}</td>
                        <td class="num">{num(r.clientErrors)}</td>
                        <td class="num">{num(r.serverErrors)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableScroll>
            </section>
            <p class="muted">
              Loaded from <code>{g.source}</code>. Events delivered {num(g.worker.eventsDelivered)}, event failures {num(g.worker.eventFailures)}.
            </p>
            <section aria-labelledby="dead-h">
              <h2 id="dead-h">Dead jobs</h2>
              {g.deadJobs.newest.length === 0 ? (
                <p class="muted">No dead job: every accepted batch was stored.</p>
              ) : (
                <TableScroll label="Dead jobs">
                  <table class="striped">
                    <HeadRow cols={['Died', 'Project', 'Source', { label: 'Attempts', num: true }, 'Last error']} />
                    <tbody>
                      {g.deadJobs.newest.map((j) => (
                        <tr key={j.id}>
                          <td class="nowrap">{when(j.diedAt)}</td>
                          <td>{j.projectSlug ?? <span class="muted">unknown</span>}</td>
                          <td>{j.source}</td>
                          <td class="num">{j.attempts}</td>
                          <td>
                            <small>{j.lastError}</small>
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </TableScroll>
              )}
            </section>
            <p class="muted" aria-live="polite">
              {q.error ? `Refresh failed: ${q.error.message} (${q.error.code})` : null}
            </p>
          </>
        )}
      </Async>
    </>
  );
}

function Card({ label, value, note, testid }: { label: string; value: string; note: string; testid: string }) {
  return (
    <article>
      <small class="muted">{label}</small>
      <div class="value" data-testid={testid}>
        {value}
      </div>
      <small>{note}</small>
    </article>
  );
}

const KIND: Record<string, string> = { receivers: 'receiver', processors: 'processor', exporters: 'exporter' };

function Column({ pipeline, title, kind, ids, components }: { pipeline: string; title: string; kind: string; ids: string[]; components: Component[] }) {
  return (
    <section class={`graph-column ${kind}`} aria-label={`${title} of ${pipeline}`}>
      <h3>{title}</h3>
      {ids.length === 0 ? (
        <p class="muted">none</p>
      ) : (
        <ol>
          {ids.map((id) => {
            const c = components.find((x) => x.id === id && String(x.kind) === KIND[kind]) ?? components.find((x) => x.id === id);
            return (
              <li key={id}>
                <strong>{id}</strong> {c && c.type !== id ? <small class="muted">{c.type}</small> : null}
                {c && kind !== 'receivers' ? (
                  <dl>
                    <dt>time in it</dt>
                    <dd>{duration(c.busyMs)}</dd>
                  </dl>
                ) : null}
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}

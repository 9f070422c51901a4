// A test: its score, its state (since which commit) and why, its history (oldest → newest, each
// cell a link to the execution), the trend, stitches and aliases, owners, state changes and
// quarantine decisions, and its error clusters.
import { useState } from 'preact/hooks';
import { api, type Outputs } from '../api.js';
import type { PageProps } from '../app.js';
import { reasonName, reasonText } from '../reasons.js';
import { Term } from '../ui/term.js';
import { projectPath } from '../router.js';
import { hasScope, useSession } from '../session.js';
import { Chart } from '../ui/chart.js';
import { ago, duration, pct, score, shortSha, when } from '../ui/format.js';
import { useQuery } from '../ui/query.js';
import { Async, PageTitle, TableScroll } from '../ui/states.js';
import { Status } from '../ui/status.js';
import { HeadRow, StartCells } from '../ui/table.js';
import { QuarantineDialog } from './board.js';
import { TestStateCard } from './test-state.js';
import { TestTrendsCard } from './test-trends.js';
import { eventText, heldByPerson } from '../lib/state.js';

type Detail = Outputs['test']['get'];
type HistoryCell = Outputs['test']['history']['items'][number];

export function TestPage({ params }: PageProps) {
  const slug = params.slug!;
  const id = params.testIdentityId!;
  const q = useQuery(() => api(slug).test.get.query({ testIdentityId: id, historyLimit: 20 }), [slug, id]);
  return (
    <Async q={q} what="the test" page="Test">
      {(t) => <TestView slug={slug} t={t} reload={q.reload} />}
    </Async>
  );
}

function TestView({ slug, t, reload }: { slug: string; t: Detail; reload: () => void }) {
  const { session } = useSession();
  const [dialog, setDialog] = useState<'quarantine' | 'release' | null>(null);
  const [logVersion, setLogVersion] = useState(0);
  return (
    <>
      <PageTitle title={t.title}>
        {t.suite ? `${t.suite} · ` : ''}
        <code>{t.filePath}</code>
      </PageTitle>
      <section class="cards" aria-label="Summary">
        <article>
          <small class="muted">Flakiness score</small>
          <div class="score-big" data-testid="test-score">
            {score(t.score)}
          </div>
        </article>
        <TestStateCard slug={slug} t={t} />
        <TestTrendsCard slug={slug} id={t.id} />
        <article>
          <small class="muted">Quarantine</small>
          <div class="value" data-testid="test-quarantine">
            {t.quarantined ? 'quarantined' : 'not quarantined'}
          </div>
          {heldByPerson(t) ? (
            <p data-testid="test-held">
              <strong>broken, held by a person</strong>: the scorer releases a broken test, a person kept this one quarantined.
            </p>
          ) : null}
          {t.quarantineReason ? <small>{t.quarantineReason}</small> : null}
          {hasScope(session, 'quarantine') ? (
            <p>
              <button type="button" class="small outline" onClick={() => setDialog(t.quarantined ? 'release' : 'quarantine')}>
                {t.quarantined ? 'Release' : 'Quarantine'}
              </button>
            </p>
          ) : null}
        </article>
        <article>
          <small class="muted">Owners</small>
          <div>{t.owners.length ? t.owners.join(', ') : <span class="muted">none (upload CODEOWNERS with PUT /v1/codeowners)</span>}</div>
        </article>
      </section>

      <section aria-labelledby="why">
        <h2 id="why">Why this score</h2>
        <dl>
          {t.reasonCodes.map((r) => (
            <div key={r.code} data-testid="reason">
              <dt>
                <Term def={reasonText(r.code)}>
                  <strong>{reasonName(r.code)}</strong>
                </Term>{' '}
                — {r.message}
              </dt>
              <dd>
                {reasonText(r.code)} <small class="muted">(code <code>{r.code}</code>)</small>
              </dd>
            </div>
          ))}
        </dl>
      </section>

      <History slug={slug} id={t.id} />
      <Identity t={t} />
      <QuarantineLog slug={slug} id={t.id} version={logVersion} />
      <Clusters slug={slug} id={t.id} />

      {dialog ? (
        <QuarantineDialog
          slug={slug}
          testIdentityId={t.id}
          title={t.title}
          action={dialog}
          onDone={() => {
            reload();
            setLogVersion((v) => v + 1);
          }}
          onClose={() => setDialog(null)}
        />
      ) : null}
    </>
  );
}

function History({ slug, id }: { slug: string; id: string }) {
  const q = useQuery(() => api(slug).test.history.query({ testIdentityId: id }), [slug, id]);
  return (
    <section aria-labelledby="history">
      <h2 id="history">History</h2>
      <Async q={q} what="the history">
        {(h) =>
          h.items.length === 0 ? (
            <p class="muted">No executions yet.</p>
          ) : (
            <>
              <p class="muted">
                The last {h.items.length} executions, oldest on the left; each cell opens the execution.
              </p>
              <ol class="strip" aria-label="Execution history, oldest first" data-testid="history-strip">
                {h.items.map((c) => (
                  <li key={c.executionId}>
                    <a
                      href={projectPath(slug, 'executions', c.executionId)}
                      class={`status-${statusClass(c.status)}`}
                      aria-label={`${c.status}, ${when(c.startedAt)}, ${c.branch} ${shortSha(c.commitSha)}`}
                      title={`${c.status} · ${when(c.startedAt)} · ${c.branch} ${shortSha(c.commitSha)}`}
                    />
                  </li>
                ))}
              </ol>
              <p class="strip-legend muted">
                <span>
                  <Status status="pass" /> passed
                </span>
                <span>
                  <Status status="flaky" /> passed on retry
                </span>
                <span>
                  <Status status="fail" /> failed
                </span>
                <span>
                  <Status status="skip" /> skipped
                </span>
              </p>
              <Trend cells={h.items} />
              <Recent slug={slug} cells={h.items} />
            </>
          )
        }
      </Async>
    </section>
  );
}

function statusClass(s: string): string {
  const x = s.toLowerCase();
  if (/^(pass|passed|success)$/.test(x)) return 'pass';
  if (/^(fail|failed|failure|error|timedout)$/.test(x)) return 'fail';
  if (x === 'flaky') return 'flaky';
  if (/^(skip|skipped|cancelled)$/.test(x)) return 'skip';
  return 'other';
}

/** Failure share over the last 10 executions and duration, execution by execution. */
function Trend({ cells }: { cells: HistoryCell[] }) {
  const x: number[] = [];
  const failShare: number[] = [];
  const durations: number[] = [];
  const window: boolean[] = [];
  let lastX = 0;
  for (const c of cells) {
    // uPlot needs strictly increasing x: executions in the same second are spread by 1 s.
    const t = Math.max(Math.floor(new Date(c.startedAt).getTime() / 1000), lastX + 1);
    lastX = t;
    window.push(statusClass(c.status) !== 'pass' && statusClass(c.status) !== 'skip');
    if (window.length > 10) window.shift();
    x.push(t);
    failShare.push(window.filter(Boolean).length / window.length);
    durations.push(c.durationMs);
  }
  return (
    <div class="charts">
      <Chart title="Not passing cleanly (last 10 executions)" x={x} series={[{ label: 'failed or retried', values: failShare, format: (v) => pct(v) }]} />
      <Chart title="Duration" x={x} series={[{ label: 'duration', values: durations, format: (v) => duration(v) }]} yFormat={(v) => duration(v)} />
    </div>
  );
}

function Recent({ slug, cells }: { slug: string; cells: HistoryCell[] }) {
  const newest = [...cells].reverse().slice(0, 20);
  return (
    <details>
      <summary>Recent executions (newest first)</summary>
      <TableScroll label="Recent executions">
        <table class="striped">
          <HeadRow cols={['When', 'Status', 'Branch', 'Commit', { label: 'Duration', num: true }, 'Error']} />
          <tbody>
            {newest.map((c) => (
              <tr key={c.executionId}>
                <StartCells slug={slug} href={projectPath(slug, 'executions', c.executionId)} startedAt={c.startedAt} status={c.status} branch={c.branch} commitSha={c.commitSha} />
                <td class="num">{duration(c.durationMs)}</td>
                <td>{c.errorMessage ? <small>{c.errorMessage.slice(0, 160)}</small> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </details>
  );
}

function Identity({ t }: { t: Detail }) {
  return (
    <section aria-labelledby="identity">
      <h2 id="identity">Identity: stitches and aliases</h2>
      {t.aliases.length === 0 && t.stitches.length === 0 ? (
        <p class="muted">This test has kept its name and file since it was first seen.</p>
      ) : (
        <>
          {t.aliases.length ? (
            <>
              <h3>Also known as</h3>
              <ul>
                {t.aliases.map((a) => (
                  <li key={a}>
                    <code>{a}</code>
                  </li>
                ))}
              </ul>
            </>
          ) : null}
          {t.stitches.length ? (
            <TableScroll label="Stitches">
              <table>
                <HeadRow cols={['When', 'Level', 'From', 'To', { label: 'Confidence', num: true }]} />
                <tbody>
                  {t.stitches.map((s) => (
                    <tr key={s.createdAt + s.fromTitle}>
                      <td class="nowrap">{when(s.createdAt)}</td>
                      <td>{s.level}</td>
                      <td>
                        {s.fromTitle}
                        <br />
                        <small class="muted">{s.fromFilePath}</small>
                      </td>
                      <td>
                        {s.toTitle}
                        <br />
                        <small class="muted">{s.toFilePath}</small>
                      </td>
                      <td class="num">{pct(s.confidence)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          ) : null}
        </>
      )}
      <p class="muted">
        Fingerprint <code>{t.fingerprint}</code>
      </p>
    </section>
  );
}

function QuarantineLog({ slug, id, version }: { slug: string; id: string; version: number }) {
  const q = useQuery(() => api(slug).test.quarantineLog.query({ testIdentityId: id }), [slug, id, version]);
  return (
    <section aria-labelledby="qlog">
      <h2 id="qlog">State changes and quarantine decisions</h2>
      <Async q={q} what="quarantine decisions">
        {(log) => (
          <>
            <p>
              Now: <strong>{log.quarantined ? 'quarantined' : 'not quarantined'}</strong>
              {log.reason ? ` (${log.reason})` : ''}.{' '}
              {log.decision ? (
                <>
                  A person {log.decision.override === 'quarantined' ? 'quarantined' : 'released'} it {ago(log.decision.decidedAt)}
                  {log.decision.reason ? <>: “{log.decision.reason}”</> : ' (no reason given)'}.
                </>
              ) : (
                <>The scorer decides: {log.auto.quarantined ? `quarantined automatically${log.auto.since ? ` since ${when(log.auto.since)}` : ''}` : 'not quarantined automatically'}.</>
              )}
            </p>
            {log.events.length === 0 ? (
              <p class="muted">No transitions yet: the test never became flaky, broke, was fixed, or was quarantined or released.</p>
            ) : (
              <TableScroll label="State and quarantine transitions">
                <table>
                  <HeadRow cols={['When', 'What happened', { label: 'Score then', num: true }]} />
                  <tbody>
                    {[...log.events].reverse().map((e) => (
                      <tr key={e.at + e.kind}>
                        <td class="nowrap">{when(e.at)}</td>
                        <td>{eventText(e.kind)}</td>
                        <td class="num">{score(e.score)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableScroll>
            )}
          </>
        )}
      </Async>
    </section>
  );
}

function Clusters({ slug, id }: { slug: string; id: string }) {
  const q = useQuery(() => api(slug).test.clusters.query({ testIdentityId: id }), [slug, id]);
  return (
    <section aria-labelledby="tclusters">
      <h2 id="tclusters">Error clusters</h2>
      <Async q={q} what="error clusters">
        {(c) =>
          c.items.length === 0 ? (
            <p class="muted">No failure of this test in the last 90 days has been clustered.</p>
          ) : (
            <TableScroll label="Error clusters of this test">
              <table>
                <HeadRow cols={['Error', { label: 'Occurrences', num: true }, { label: 'Tests affected', num: true }, 'Last seen', 'Root cause']} />
                <tbody>
                  {c.items.map((k) => (
                    <tr key={k.clusterId}>
                      <td>
                        <a href={`${projectPath(slug, 'clusters')}#cluster-${k.clusterId}`}>
                          {k.errorType ? `${k.errorType}: ` : ''}
                          {k.errorMessage.slice(0, 200) || k.clusterId}
                        </a>
                      </td>
                      <td class="num">{k.occurrences}</td>
                      <td class="num">{k.testsAffected}</td>
                      <td class="nowrap">{ago(k.lastSeenAt)}</td>
                      <td>{k.rca ? k.rca.summary : <span class="muted">none</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          )
        }
      </Async>
    </section>
  );
}

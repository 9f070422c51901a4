// An RCA report as the model wrote it, with its confidence and similar past failures.
import type { Outputs } from '../api.js';
import { projectPath } from '../router.js';
import { pct, when } from './format.js';

type Report = NonNullable<Outputs['rca']['get']>;

export function RcaReport({ slug, report }: { slug: string; report: Report }) {
  return (
    <article class="rca" aria-label="Root-cause analysis">
      <header>
        <strong>{report.summary}</strong>
        <br />
        <small class="muted">
          confidence {pct(report.confidence)} · {report.llmModel} · {when(report.createdAt)}
        </small>
      </header>
      <h3>Likely cause</h3>
      <p class="wrap-text">{report.likelyCause}</p>
      <h3>Suggested action</h3>
      <p class="wrap-text">{report.suggestedAction}</p>
      {report.similarPast.length ? (
        <>
          <h3>Similar past failures</h3>
          <ul>
            {report.similarPast.map((s) => (
              <li key={s.rcaId}>
                <a href={projectPath(slug, 'executions', s.executionId)}>{s.summary}</a> <small class="muted">{when(s.createdAt)}</small>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </article>
  );
}

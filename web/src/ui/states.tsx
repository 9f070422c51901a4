// Loading, empty and error states: every page shows one of these or its data.
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import type { ApiFailure } from '../api.js';
import type { QueryState } from './query.js';

export function Loading({ what }: { what: string }) {
  return (
    <p aria-busy="true" class="loading">
      Loading {what}…
    </p>
  );
}

export function ErrorView({ error, retry }: { error: ApiFailure; retry?: () => void }) {
  const title =
    error.status === 404 ? 'Not found' : error.status === 403 ? 'Not allowed' : error.status === 429 ? 'Too many requests' : error.status === 0 ? 'No answer' : 'Something went wrong';
  return (
    <div role="alert" class="error-box">
      <h2>{title}</h2>
      <p>
        {error.message} <code>{error.code}</code>
        {error.status ? <span class="muted"> (HTTP {error.status})</span> : null}
      </p>
      {error.issues.length ? (
        <ul>
          {error.issues.map((i) => (
            <li key={i.path}>
              <code>{i.path || '(input)'}</code>: {i.message}
            </li>
          ))}
        </ul>
      ) : null}
      {error.status === 403 ? <p>Sign in with a token that has the needed scope (see the message above).</p> : null}
      {retry ? (
        <button type="button" class="secondary" onClick={retry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <article class="empty">
      <h2>{title}</h2>
      {children}
    </article>
  );
}

/**
 * The query's data, or its loading/error state. `page`: the page's title while its data is not
 * there (pages whose h1 comes from the data still have one).
 */
export function Async<T>({ q, what, page, children }: { q: QueryState<T>; what: string; page?: string; children: (data: T) => ComponentChildren }) {
  if (q.data !== undefined && !q.error) return <>{children(q.data)}</>;
  return (
    <>
      {page ? <PageTitle title={page} /> : null}
      {q.error ? <ErrorView error={q.error} retry={q.reload} /> : <Loading what={what} />}
    </>
  );
}

/** A table that scrolls sideways on narrow screens; focusable so keyboards can scroll it too. */
export function TableScroll({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-scroll" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

export function PageTitle({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Flakehouse`;
  }, [title]);
  return (
    <hgroup>
      <h1>{title}</h1>
      {children ? <p>{children}</p> : null}
    </hgroup>
  );
}

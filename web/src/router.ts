// A small history router: pages are plain <a href> links; a click on a same-origin link to a
// dashboard path becomes a pushState (no reload), so links also open in a new tab, copy and share
// as they are. Everything a page shows is in its URL (path and query).
import { useEffect, useState } from 'preact/hooks';

/** Paths the daemon answers itself: a link to one is a real navigation (downloads, JSON). */
const SERVER_PATHS = /^\/(v1|trpc|badge|health|metrics|openapi\.json|clickhouse)(\/|$|\?)/;

export interface Location {
  path: string;
  query: URLSearchParams;
}

function read(): Location {
  return { path: window.location.pathname, query: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();
function notify(): void {
  for (const l of listeners) l();
}

export function navigate(href: string, opts: { replace?: boolean } = {}): void {
  const url = new URL(href, window.location.href);
  const target = url.pathname + url.search + url.hash;
  if (target === window.location.pathname + window.location.search + window.location.hash) return;
  if (opts.replace) window.history.replaceState(null, '', target);
  else window.history.pushState(null, '', target);
  notify();
}

/** The URL with some query parameters set (empty/undefined ones removed). */
export function withQuery(loc: Location, changes: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams(loc.query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === null || v === '' || v === false) q.delete(k);
    else q.set(k, String(v));
  }
  const s = q.toString();
  return loc.path + (s ? `?${s}` : '');
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const update = () => setLoc(read());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return loc;
}

/** Turns clicks on in-app links into history navigation; installed once. */
export function interceptLinks(): void {
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || !a.href || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href);
    if (url.origin !== window.location.origin || SERVER_PATHS.test(url.pathname)) return;
    // An anchor on this page (the skip link, section links): the browser scrolls and focuses it.
    if (url.hash && url.pathname === window.location.pathname && url.search === window.location.search) return;
    e.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
}

/** Matches `/projects/:slug/tests/:id` against a path; params are decoded. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const s = path.replace(/\/+$/, '').split('/');
  if (path === '/' && pattern === '/') return {};
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const want = p[i]!;
    const got = s[i]!;
    if (want.startsWith(':')) {
      if (!got) return null;
      try {
        params[want.slice(1)] = decodeURIComponent(got);
      } catch {
        return null;
      }
    } else if (want !== got) return null;
  }
  return params;
}

/** Path of a project page: `projectPath('acme', 'tests', id)`. */
export function projectPath(slug: string, ...parts: (string | number)[]): string {
  return ['/projects', slug, ...parts].map((x, i) => (i === 0 ? x : encodeURIComponent(String(x)))).join('/');
}

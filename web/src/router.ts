// A small history router: pages are plain <a href> links; a click on a same-origin link to a
// dashboard path becomes a pushState (no reload), so links also open in a new tab, copy and share
// as they are. Everything a page shows is in its URL (path and query).
import { useEffect, useState } from 'preact/hooks';
import { isServerPath, type Location } from './lib/url.js';

export { match, projectPath, withQuery, type Location } from './lib/url.js';

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
    if (url.origin !== window.location.origin || isServerPath(url.pathname)) return;
    // An anchor on this page (the skip link, section links): the browser scrolls and focuses it.
    if (url.hash && url.pathname === window.location.pathname && url.search === window.location.search) return;
    e.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
}

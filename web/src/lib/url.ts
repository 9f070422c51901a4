// URL helpers of the dashboard's router, pure (no window): tested in test/unit/dashboard-web.test.ts.

/** A page's address: its path and its query (filters, sort, page, cursor). */
export interface Location {
  path: string;
  query: URLSearchParams;
}

/** Every page's path pattern (app.tsx pairs each with its page). */
export const PAGE_PATHS = {
  home: '/',
  pipeline: '/pipeline',
  project: '/projects/:slug',
  board: '/projects/:slug/flaky',
  test: '/projects/:slug/tests/:testIdentityId',
  execution: '/projects/:slug/executions/:executionId',
  runs: '/projects/:slug/runs',
  run: '/projects/:slug/runs/:runId',
  commit: '/projects/:slug/commits/:sha',
  pull: '/projects/:slug/pulls/:prNumber',
  health: '/projects/:slug/health',
  suites: '/projects/:slug/suites',
  clusters: '/projects/:slug/clusters',
  settings: '/projects/:slug/settings',
} as const;
export type PageName = keyof typeof PAGE_PATHS;

/** The page a path shows, with its parameters; null: no page lives there. */
export function pageOf(path: string): { page: PageName; params: Record<string, string> } | null {
  for (const [page, pattern] of Object.entries(PAGE_PATHS) as [PageName, string][]) {
    const params = match(pattern, path);
    if (params) return { page, params };
  }
  return null;
}

/** Paths the daemon answers itself: a link to one is a real navigation (downloads, JSON). */
const SERVER_PATHS = /^\/(v1|trpc|badge|health|metrics|openapi\.json|clickhouse)(\/|$)/;

export function isServerPath(path: string): boolean {
  return SERVER_PATHS.test(path);
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

/** Only a same-site path: `next` comes from the URL, so it must not send people elsewhere. */
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\') || next.startsWith('/signin')) return '/';
  return next;
}

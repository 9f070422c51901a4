// The shell: session check, layout (skip link, navigation, main landmark) and the route table.
import type { ComponentChildren, FunctionComponent } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure, currentSession, signOut as endSession, whenUnauthorized, type Session } from './api.js';
import { BoardPage } from './pages/board.js';
import { ClustersPage } from './pages/clusters.js';
import { ExecutionPage } from './pages/execution.js';
import { HealthPage, SuitesPage } from './pages/health.js';
import { HomePage } from './pages/home.js';
import { PipelinePage } from './pages/pipeline.js';
import { CommitPage, PullPage } from './pages/pr.js';
import { RunPage, RunsPage } from './pages/runs.js';
import { SettingsPage } from './pages/settings.js';
import { SignInPage } from './pages/signin.js';
import { TestPage } from './pages/test.js';
import { pageOf, type PageName } from './lib/url.js';
import { navigate, projectPath, useLocation, type Location } from './router.js';
import { SessionCtx, isAdmin } from './session.js';
import { ErrorView, Loading } from './ui/states.js';

export interface PageProps {
  params: Record<string, string>;
  loc: Location;
}

const PAGES: Record<PageName, FunctionComponent<PageProps>> = {
  home: HomePage,
  pipeline: PipelinePage,
  project: ({ params }) => <Redirect to={projectPath(params.slug!, 'flaky')} />,
  board: BoardPage,
  test: TestPage,
  execution: ExecutionPage,
  runs: RunsPage,
  run: RunPage,
  commit: CommitPage,
  pull: PullPage,
  health: HealthPage,
  suites: SuitesPage,
  clusters: ClustersPage,
  settings: SettingsPage,
};

function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

function NotFound({ loc }: { loc: Location }) {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        Nothing lives at <code>{loc.path}</code>. <a href="/">Go to the start page</a>.
      </p>
    </>
  );
}

export function App() {
  const loc = useLocation();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [failure, setFailure] = useState<ApiFailure | null>(null);

  const check = () => {
    setFailure(null);
    currentSession().then(setSession, (e: unknown) => setFailure(e instanceof ApiFailure ? e : new ApiFailure(0, 'network_error', String(e))));
  };
  useEffect(() => {
    check();
    // A 401 on any call: the session expired or its token was revoked.
    whenUnauthorized(() => setSession(null));
  }, []);

  if (failure) return <Frame loc={loc}><ErrorView error={failure} retry={check} /></Frame>;
  if (session === undefined) return <Frame loc={loc}><Loading what="your session" /></Frame>;

  if (loc.path === '/signin') {
    return (
      <Frame loc={loc}>
        <SignInPage loc={loc} session={session} onSignedIn={setSession} />
      </Frame>
    );
  }
  if (!session) {
    const next = loc.path + (loc.query.toString() ? `?${loc.query.toString()}` : '');
    return <Redirect to={`/signin${next === '/' ? '' : `?next=${encodeURIComponent(next)}`}`} />;
  }

  const found = pageOf(loc.path);
  const Page = found ? PAGES[found.page] : null;
  const page: ComponentChildren = Page && found ? <Page params={found.params} loc={loc} /> : <NotFound loc={loc} />;
  const ctx = {
    session,
    signOut: async () => {
      await endSession();
      setSession(null);
      navigate('/signin', { replace: true });
    },
  };
  return (
    <SessionCtx.Provider value={ctx}>
      <Frame loc={loc} session={session} onSignOut={ctx.signOut}>
        {page}
      </Frame>
    </SessionCtx.Provider>
  );
}

const PROJECT_NAV: [string, string][] = [
  ['flaky', 'Flaky board'],
  ['runs', 'Runs'],
  ['health', 'Health'],
  ['clusters', 'Clusters'],
  ['settings', 'Settings'],
];

function Frame({ loc, session, onSignOut, children }: { loc: Location; session?: Session | null; onSignOut?: () => Promise<void>; children: ComponentChildren }) {
  const main = useRef<HTMLElement>(null);
  const lastPath = useRef(loc.path);
  // A new page: focus moves to its main landmark so screen readers and keyboards start there
  // (not on a query-only change such as a board filter).
  useEffect(() => {
    if (lastPath.current !== loc.path) main.current?.focus();
    lastPath.current = loc.path;
  }, [loc.path]);
  const projectSlug = /^\/projects\/([^/]+)/.exec(loc.path)?.[1];
  const here = projectSlug ? decodeURIComponent(projectSlug) : (session?.principal.projectSlug ?? null);
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="container site-header">
        <nav aria-label="Main">
          <ul>
            <li>
              <a href="/" class="brand">
                <strong>Flakehouse</strong>
              </a>
            </li>
            {here && session ? <li class="muted project-name">{here}</li> : null}
          </ul>
          {session ? (
            <ul class="nav-links">
              {here
                ? PROJECT_NAV.map(([part, label]) => {
                    const href = projectPath(here, part);
                    const current = loc.path === href || loc.path.startsWith(`${href}/`) || (part === 'health' && loc.path === projectPath(here, 'suites'));
                    return (
                      <li key={part}>
                        <a href={href} aria-current={current ? 'page' : undefined}>
                          {label}
                        </a>
                      </li>
                    );
                  })
                : null}
              {isAdmin(session) ? (
                <>
                  <li>
                    <a href="/pipeline" aria-current={loc.path === '/pipeline' ? 'page' : undefined}>
                      Pipeline
                    </a>
                  </li>
                  <li>
                    <a href="/">Projects</a>
                  </li>
                </>
              ) : null}
              <li>
                <button type="button" class="outline secondary sign-out" onClick={() => void onSignOut?.()}>
                  Sign out
                </button>
              </li>
            </ul>
          ) : null}
        </nav>
      </header>
      <main id="main" class="container" tabIndex={-1} ref={main}>
        {children}
      </main>
    </>
  );
}

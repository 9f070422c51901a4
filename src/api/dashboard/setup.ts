// Wires the dashboard into the daemon's app (docs/dashboard.md): session cookies, the sign-in
// routes, cookie authentication on the REST downloads a browser opens as plain links, and the
// pages. With the dashboard off (SERVICE_DASHBOARD_ENABLED=false) only bearer tokens authenticate.
import fastifyCookie from '@fastify/cookie';
import type { S3Settings } from '../../artifacts/s3.js';
import type { ProjectRepo, TokenPrincipal } from '../../store/projects.js';
import type { App } from '../app.js';
import { requireAnyScope, type Authenticator } from '../auth.js';
import { errors } from '../../errors/catalogue.js';
import { adminPrincipal, CallerAuth } from '../session/caller.js';
import { sessionRoutes } from '../session/routes.js';
import { SessionStore } from '../session/store.js';
import { artifactOrigins, registerDashboard } from './index.js';

/** REST GETs a browser opens as links (a download): a session cookie may authenticate them. */
export const COOKIE_GET_ROUTES = ['/v1/export'];

export interface DashboardSetup {
  enabled: boolean;
  sessionTtlHours: number;
  /** The session clock (default Date.now); tests move it past an expiry. */
  now?: () => number;
  distDir?: string;
  s3?: S3Settings;
}

/** Call before the routes are added: the cookie parser has to see every request. */
export async function setupSessions(app: App, auth: Authenticator, s: DashboardSetup): Promise<CallerAuth> {
  if (!s.enabled) return new CallerAuth(auth, null);
  await app.fastify.register(fastifyCookie);
  return new CallerAuth(auth, new SessionStore({ ttlMs: s.sessionTtlHours * 3_600_000, ...(s.now ? { now: s.now } : {}) }));
}

/** Call after the routes are added: sign-in routes, cookie auth on the download routes, the pages. */
export async function setupDashboard(app: App, callers: CallerAuth, deps: { auth: Authenticator; projects: ProjectRepo }, s: DashboardSetup): Promise<void> {
  const sessions = callers.sessions;
  if (!sessions) return;
  for (const r of sessionRoutes({ sessions, callers, auth: deps.auth, projects: deps.projects })) app.routes.add(r);
  for (const route of app.routes.routes) {
    if (route.method !== 'GET' || !COOKIE_GET_ROUTES.includes(route.url) || route.auth.kind !== 'token' || route.authenticate) continue;
    // A plain GET cannot change anything, so a cookie suffices (no CSRF token); the scope check stays the route's.
    route.authenticate = async (request): Promise<TokenPrincipal> => {
      const caller = await callers.caller(request);
      if (caller.kind === 'project') return caller.principal;
      const query = request.query as Record<string, unknown> | undefined;
      const slug = request.headers['x-flakehouse-project'] ?? query?.project;
      if (typeof slug !== 'string' || slug === '') throw errors.projectRequired();
      const project = await deps.projects.bySlug(slug);
      if (!project) throw errors.notFound(`project "${slug}" not found`);
      const principal = adminPrincipal(project.id);
      requireAnyScope(principal, ['read']);
      return principal;
    };
  }
  app.pages = await registerDashboard(app.fastify, { ...(s.distDir ? { distDir: s.distDir } : {}), artifactOrigins: artifactOrigins(s.s3) });
}

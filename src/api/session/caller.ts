// Who is calling: a bearer token (CI, scripts, the CLI) or a dashboard session cookie. Both end in
// the same principal, so every route and procedure applies the same project scoping and scopes;
// a session additionally needs the CSRF check on anything that changes state.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { SCOPES, TOKEN_RE, type TokenPrincipal } from '../../store/projects.js';
import { bearer, type Authenticator } from '../auth.js';
import { errors } from '../../errors/catalogue.js';
import { SESSION_COOKIE, type Session, type SessionStore } from './store.js';

export type Caller =
  | { kind: 'project'; principal: TokenPrincipal; session: Session | null }
  | { kind: 'admin'; session: Session | null };

/** The principal an admin acts as inside one project: every scope. */
export function adminPrincipal(projectId: string): TokenPrincipal {
  return { tokenId: 'admin', projectId, scopes: [...SCOPES] };
}

export class CallerAuth {
  constructor(
    private readonly auth: Authenticator,
    /** Null when the dashboard is off: cookies are not looked at. */
    readonly sessions: SessionStore | null,
  ) {}

  /** The caller of a request: its Authorization header when it has one, else its session cookie. */
  async caller(req: FastifyRequest): Promise<Caller> {
    const header = req.headers.authorization;
    if (header !== undefined || !this.sessions) return this.bearerCaller(header);
    const cookie = cookieOf(req);
    if (cookie === undefined) throw errors.unauthorized();
    return this.sessionCaller(cookie);
  }

  /** The session behind a cookie value, re-checked: a revoked token ends it (401). */
  async session(cookie: string | undefined): Promise<Session> {
    const session = this.sessions?.get(cookie) ?? null;
    if (!session) throw errors.unauthorized('the dashboard session has ended: sign in again');
    if (session.principal.kind === 'project') {
      try {
        await this.auth.authenticateHash(session.tokenHash);
      } catch (err) {
        this.sessions!.delete(cookie);
        throw err;
      }
    }
    return session;
  }

  private async sessionCaller(cookie: string): Promise<Caller> {
    const session = await this.session(cookie);
    const p = session.principal;
    if (p.kind === 'admin') return { kind: 'admin', session };
    return { kind: 'project', principal: { tokenId: p.tokenId, projectId: p.projectId, scopes: p.scopes }, session };
  }

  private async bearerCaller(header: string | undefined): Promise<Caller> {
    const token = bearer(header);
    if (token !== undefined && !TOKEN_RE.test(token) && this.auth.isAdminToken(token)) return { kind: 'admin', session: null };
    return { kind: 'project', principal: await this.auth.authenticate(header), session: null };
  }
}

export function cookieOf(req: FastifyRequest): string | undefined {
  // @fastify/cookie parses the header onto request.cookies; absent when the dashboard is off.
  const cookies = (req as FastifyRequest & { cookies?: Record<string, string | undefined> }).cookies;
  return cookies?.[SESSION_COOKIE];
}

/** scheme://host[:port] of the request as the browser addressed it. */
export function requestOrigin(req: FastifyRequest): string {
  return `${req.protocol}://${req.host}`;
}

/**
 * Whether an Origin header names this server: its host[:port] equals the Host the request was sent
 * to. The scheme is not compared: behind a proxy that ends TLS the browser's origin is https while
 * this server sees http; another site differs in the host either way.
 */
export function sameOrigin(req: FastifyRequest, origin: string): boolean {
  if (!URL.canParse(origin)) return false;
  return new URL(origin).host === req.host;
}

/**
 * A state-changing request authenticated by a session cookie must carry the session's CSRF token
 * in x-csrf-token, and (when the browser sends one) an Origin equal to this server's own: a page on
 * another site can make the browser send the cookie, but can read neither the token nor fake the Origin.
 */
export function checkCsrf(req: FastifyRequest, session: Session): void {
  const given = req.headers['x-csrf-token'];
  if (typeof given !== 'string' || given === '') throw errors.csrfFailed('the x-csrf-token header is missing');
  const a = Buffer.from(given);
  const b = Buffer.from(session.csrfToken);
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw errors.csrfFailed("the x-csrf-token header does not match the session's token");
  const origin = req.headers.origin;
  if (origin !== undefined && !sameOrigin(req, origin)) throw errors.csrfFailed(`the request comes from ${origin}, not from ${requestOrigin(req)}`);
}

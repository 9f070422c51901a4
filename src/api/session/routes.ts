// Dashboard sign-in (docs/dashboard.md): POST /v1/session exchanges a pasted token for a session
// cookie, GET /v1/session tells a reloaded page who it is (and its CSRF token), DELETE signs out.
import type {} from '@fastify/cookie'; // its request.cookies and reply.setCookie types
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { sha256Hex } from '../../../client/src/contract/ids.js';
import { SCOPES, TOKEN_RE, type ProjectRepo } from '../../store/projects.js';
import { effectiveScopes, type Authenticator } from '../auth.js';
import { ApiError, errors } from '../../errors/catalogue.js';
import { defineRoute, type AnyRouteDef } from '../route.js';
import { checkCsrf, cookieOf, requestOrigin, sameOrigin, type CallerAuth } from './caller.js';
import { SESSION_COOKIE, type Session, type SessionPrincipal, type SessionStore } from './store.js';

export const sessionViewSchema = z
  .object({
    csrfToken: z.string(),
    expiresAt: z.string(),
    principal: z.object({
      kind: z.enum(['project', 'admin']),
      projectId: z.string().optional(),
      projectSlug: z.string().optional(),
      scopes: z.array(z.enum(SCOPES)),
    }),
  })
  .meta({ id: 'Session' });
export type SessionView = z.infer<typeof sessionViewSchema>;

function view(s: Session): SessionView {
  const p = s.principal;
  return {
    csrfToken: s.csrfToken,
    expiresAt: new Date(s.expiresAt).toISOString(),
    principal: p.kind === 'admin' ? { kind: 'admin', scopes: p.scopes } : { kind: 'project', projectId: p.projectId, projectSlug: p.projectSlug, scopes: p.scopes },
  };
}

export interface SessionRouteDeps {
  sessions: SessionStore;
  callers: CallerAuth;
  auth: Authenticator;
  projects: ProjectRepo;
}

/** Over https the cookie is `Secure`: served so directly, or behind a proxy that ended TLS and says so. */
function cookieOptions(request: FastifyRequest, maxAgeSec: number) {
  const forwarded = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0]!.trim().toLowerCase();
  return { httpOnly: true, sameSite: 'strict' as const, path: '/', maxAge: maxAgeSec, secure: request.protocol === 'https' || forwarded === 'https' };
}

function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  void reply.setCookie(SESSION_COOKIE, '', { ...cookieOptions(request, 0), expires: new Date(0) });
}

export function sessionRoutes(d: SessionRouteDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/session',
      summary: 'Sign in to the dashboard: exchange a project token or the admin token for a session cookie',
      tags: ['session'],
      auth: { kind: 'none' },
      body: z.object({ token: z.string().min(1).max(1000) }),
      response: sessionViewSchema,
      async handler({ body, request, reply }) {
        // Another site must not sign this browser in (to a session of its choosing): same origin only.
        const origin = request.headers.origin;
        if (origin !== undefined && !sameOrigin(request, origin)) throw errors.csrfFailed(`the request comes from ${origin}, not from ${requestOrigin(request)}`);
        const token = body.token.trim();
        let principal: SessionPrincipal;
        if (TOKEN_RE.test(token)) {
          const p = await d.auth.authenticateHash(sha256Hex(token));
          const project = await d.projects.byId(p.projectId);
          if (!project) throw errors.unauthorized('the token is unknown or revoked');
          principal = { kind: 'project', projectId: p.projectId, projectSlug: project.slug, scopes: effectiveScopes(p), tokenId: p.tokenId };
        } else if (d.auth.isAdminToken(token)) principal = { kind: 'admin', scopes: [...SCOPES] };
        else throw errors.unauthorized('the token is unknown or revoked');
        // A sign-in replaces the session this browser had.
        d.sessions.delete(cookieOf(request));
        const { cookieValue, session } = d.sessions.create(principal, sha256Hex(token));
        void reply.setCookie(SESSION_COOKIE, cookieValue, cookieOptions(request, Math.floor(d.sessions.ttlMs / 1000)));
        return view(session);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/session',
      summary: 'The signed-in session: who it is, its CSRF token and expiry; 401 when there is none (204 with ?optional=true)',
      tags: ['session'],
      auth: { kind: 'none' },
      // The dashboard asks on every load, signed in or not: a signed-out browser is no error there,
      // and a 401 would be one in its console. Without the parameter the answer stays 401.
      query: z.object({ optional: z.enum(['true', 'false']).optional().describe('true: answer 204 (no body) instead of 401 when there is no session') }),
      response: sessionViewSchema,
      async handler({ request, reply, query }) {
        const cookie = cookieOf(request);
        if (query.optional !== 'true') return view(await d.callers.session(cookie));
        const session = await d.callers.session(cookie).catch((err: unknown) => {
          if (err instanceof ApiError && err.statusCode === 401) return null;
          throw err;
        });
        if (session) return view(session);
        void reply.code(204).send();
        return undefined;
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/session',
      summary: 'Sign out: ends the session (needs the x-csrf-token header) and clears its cookie',
      tags: ['session'],
      auth: { kind: 'none' },
      successStatus: 204,
      // No content types: a 204 has no body (the OpenAPI answer is documented as such).
      produces: [],
      async handler({ request, reply }) {
        const cookie = cookieOf(request);
        const session = await d.callers.session(cookie);
        checkCsrf(request, session);
        d.sessions.delete(cookie);
        clearSessionCookie(request, reply);
        void reply.code(204).send();
        return undefined;
      },
    }),
  ];
}

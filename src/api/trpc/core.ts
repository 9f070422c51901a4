// The tRPC instance, its error shape and the middleware every procedure goes through, shared by
// the router areas (src/api/trpc/*.ts) and assembled in src/api/trpc.ts.
//
// Checks per call, as on REST: auth 401 → CSRF 403 (session mutations) → scope 403 → rate limit 429
// → input 400 → resolver. Every call of a batch counts once against the project's rate limit, as
// the same REST request would; otherwise batching would multiply the limit.
import { TRPCError, initTRPC, type TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { z } from 'zod';
import type { ProjectRepo, Scope, TokenPrincipal } from '../../store/projects.js';
import { requireAnyScope } from '../auth.js';
import { ApiError, errors, zodIssues, type ErrorIssue } from '../../errors/catalogue.js';
import type { RateLimiter } from '../rate-limit.js';
import { adminPrincipal, type Caller } from '../session/caller.js';
import type { Session } from '../session/store.js';

/** Header naming the project an admin acts on (a project token's own project needs no header). */
export const PROJECT_HEADER = 'x-flakehouse-project';

export interface TrpcContext {
  /** The caller, authenticated once per HTTP request however many calls it batches. */
  caller(): Promise<Caller>;
  /** The x-flakehouse-project header: a project slug. */
  projectSlug: string | undefined;
  /** Refuses (403 csrf_failed) a session request without the CSRF header or from another origin. */
  checkCsrf(session: Session): void;
}

/** `data` of every procedure error: tRPC's own fields plus the REST body's `error` code and `issues`. */
export interface ProcedureErrorData {
  code: TRPC_ERROR_CODE_KEY;
  httpStatus: number;
  path?: string;
  error: string;
  issues?: ErrorIssue[];
}

export const t = initTRPC.context<TrpcContext>().create({
  // Never a stack trace on the wire (docs/contract.md §5), whatever NODE_ENV says.
  isDev: false,
  errorFormatter({ shape, error, type }) {
    const cause = error.cause;
    const data: ProcedureErrorData = { code: shape.data.code, httpStatus: shape.data.httpStatus, path: shape.data.path, error: codeOf(error, type) };
    if (cause instanceof ApiError) {
      if (cause.extra.issues) data.issues = cause.extra.issues;
      return { ...shape, data };
    }
    if (cause instanceof z.ZodError) return { ...shape, message: 'invalid input', data: { ...data, issues: zodIssues(cause) } };
    if (error.code === 'INTERNAL_SERVER_ERROR') return { ...shape, message: 'internal error', data };
    return { ...shape, data };
  },
});

function codeOf(error: TRPCError, type: string): string {
  if (error.cause instanceof ApiError) return error.cause.code;
  // Input as REST names it: a query's is its query string, a mutation's its body (a POST, as the
  // REST route that does the same: settings.update ↔ PATCH …/settings answers invalid_payload).
  if (error.cause instanceof z.ZodError) return type === 'mutation' ? 'invalid_payload' : 'invalid_query';
  if (error.code === 'INTERNAL_SERVER_ERROR') return 'internal_error';
  return error.code.toLowerCase();
}

const STATUS_CODES: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  502: 'BAD_GATEWAY',
};

export function toTrpcError(e: unknown): unknown {
  if (!(e instanceof ApiError)) return e;
  return new TRPCError({ code: STATUS_CODES[e.statusCode] ?? 'INTERNAL_SERVER_ERROR', message: e.message, cause: e });
}

export interface ProcedureKindDeps {
  rateLimiter: RateLimiter;
  useCases: { projects: Pick<ProjectRepo, 'bySlug'> };
}

const SLUG_TTL_MS = 10_000;

/**
 * The kinds of procedure: `read`/`quarantine` (a project's data, with that scope; an admin names
 * the project in x-flakehouse-project), `signedIn` (any caller), `admin` (the admin token only),
 * each as query or (CSRF-checked) mutation. Deps are read lazily: the router's shape can be built
 * without them (the OpenAPI test does).
 */
export function procedureKinds(d: ProcedureKindDeps) {
  const slugs = new Map<string, { at: number; id: string | null }>();
  async function projectIdOf(slug: string): Promise<string | null> {
    const now = Date.now();
    const hit = slugs.get(slug);
    if (hit && now - hit.at < SLUG_TTL_MS) return hit.id;
    const id = (await d.useCases.projects.bySlug(slug))?.id ?? null;
    if (slugs.size > 10_000) slugs.clear();
    slugs.set(slug, { at: now, id });
    return id;
  }

  const signedIn = t.procedure.use(async ({ ctx, next }) => {
    let caller: Caller;
    try {
      caller = await ctx.caller();
    } catch (e) {
      throw toTrpcError(e);
    }
    return next({ ctx: { caller } });
  });

  /** A state change: a session caller must pass the CSRF check (bearer callers are not browsers). */
  const changing = signedIn.use(({ ctx, next, type }) => {
    if (type === 'mutation' && ctx.caller.session) {
      try {
        ctx.checkCsrf(ctx.caller.session);
      } catch (e) {
        throw toTrpcError(e);
      }
    }
    return next();
  });

  function inProject(scopes: readonly Scope[]) {
    return changing.use(async ({ ctx, next }) => {
      let principal: TokenPrincipal;
      try {
        const caller = ctx.caller;
        if (caller.kind === 'admin') {
          if (ctx.projectSlug === undefined) throw errors.projectRequired();
          const id = await projectIdOf(ctx.projectSlug);
          if (id === null) throw errors.notFound(`project "${ctx.projectSlug}" not found`);
          principal = adminPrincipal(id);
        } else {
          principal = caller.principal;
          // A project's own slug is allowed (the dashboard always sends it); another one is refused.
          if (ctx.projectSlug !== undefined && (await projectIdOf(ctx.projectSlug)) !== principal.projectId) throw errors.otherProject(ctx.projectSlug);
        }
        requireAnyScope(principal, scopes);
        const wait = d.rateLimiter.hit(principal.projectId);
        if (wait > 0) throw errors.rateLimited(wait);
      } catch (e) {
        throw toTrpcError(e);
      }
      const result = await next({ ctx: { projectId: principal.projectId, principal } });
      // The shared handlers throw ApiErrors (404 …): give them their tRPC code instead of a 500.
      if (!result.ok && result.error.cause instanceof ApiError) throw toTrpcError(result.error.cause);
      return result;
    });
  }

  const admin = changing.use(async ({ ctx, next }) => {
    if (ctx.caller.kind !== 'admin') throw toTrpcError(errors.adminRequired());
    const result = await next();
    if (!result.ok && result.error.cause instanceof ApiError) throw toTrpcError(result.error.cause);
    return result;
  });

  /** Admin, acting on the project named in x-flakehouse-project. */
  const adminProject = admin.use(async ({ ctx, next }) => {
    let projectId: string;
    try {
      if (ctx.projectSlug === undefined) throw errors.projectRequired();
      const id = await projectIdOf(ctx.projectSlug);
      if (id === null) throw errors.notFound(`project "${ctx.projectSlug}" not found`);
      projectId = id;
    } catch (e) {
      throw toTrpcError(e);
    }
    return next({ ctx: { projectId, projectSlug: ctx.projectSlug, principal: adminPrincipal(projectId) } });
  });

  return { signedIn, read: inProject(['read']), quarantine: inProject(['quarantine']), admin, adminProject };
}

export type ProcedureKinds = ReturnType<typeof procedureKinds>;

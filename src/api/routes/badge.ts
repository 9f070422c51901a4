// README badges (docs/contract.md §6): GET /badge/:badgeToken/:variant (public: the badge token in the
// path is the credential, good for one project's badges and nothing else), GET /v1/badges (a project
// token learns its badge URLs, for `flakehouse badge`), and the admin rotation of the badge token.
//
// Badges are fetched anonymously by anyone who views a README (through GitHub's image proxy), so
// answers are cached here briefly and carry an ETag; an unknown token gets a grey "unknown" badge
// with 200, as shields.io does, rather than a broken image.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { BADGE_VARIANTS, UNKNOWN_BADGE, badgeFor, badgeSvg, parseBadgeFile, shieldsJson, type Badge, type BadgeFacts, type BadgeFormat } from '../../../client/src/contract/badge.js';
import { badgesResponseSchema } from '../../../client/src/contract/pr-schemas.js';
import { BADGE_TOKEN_RE, type ProjectRepo } from '../../store/projects.js';
import { errors } from '../../errors/catalogue.js';
import { badgeFacts, type BadgeFactsDeps } from '../../usecases/badge-facts.js';
import { projectBadges, type ProjectBadgesDeps } from '../../usecases/project-badges.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

/** How long a badge may be cached by browsers and proxies (GitHub's camo honours it). */
export const BADGE_MAX_AGE_S = 300;
/** How long the facts of a project and a token's project are reused here. */
const CACHE_TTL_MS = 30_000;
const MAX_CACHE = 10_000;

export interface BadgeRouteDeps {
  /** The project a badge token names, and the token's rotation. */
  projects: Pick<ProjectRepo, 'byBadgeToken' | 'rotateBadgeToken'>;
  /** GET /v1/badges. */
  badges: ProjectBadgesDeps;
  /** What a badge shows. */
  facts: BadgeFactsDeps;
}

/** Small TTL map, cleared whole when it grows past its bound (keys are tokens and project ids). */
class TtlCache<V> {
  private readonly map = new Map<string, { at: number; value: V }>();
  get(key: string, now: number): V | undefined {
    const hit = this.map.get(key);
    return hit && now - hit.at < CACHE_TTL_MS ? hit.value : undefined;
  }
  set(key: string, value: V, now: number): void {
    if (this.map.size >= MAX_CACHE) this.map.clear();
    this.map.set(key, { at: now, value });
  }
  clear(): void {
    this.map.clear();
  }
}

export function badgeRoutes(d: BadgeRouteDeps): AnyRouteDef[] {
  const projectOfToken = new TtlCache<string | null>();
  const factsOfProject = new TtlCache<BadgeFacts>();

  async function resolve(badgeToken: string, now: number): Promise<string | null> {
    if (!BADGE_TOKEN_RE.test(badgeToken)) return null;
    const cached = projectOfToken.get(badgeToken, now);
    if (cached !== undefined) return cached;
    const project = await d.projects.byBadgeToken(badgeToken);
    projectOfToken.set(badgeToken, project?.id ?? null, now);
    return project?.id ?? null;
  }

  async function facts(projectId: string, now: number): Promise<BadgeFacts> {
    const cached = factsOfProject.get(projectId, now);
    if (cached) return cached;
    const fresh = await badgeFacts(d.facts, projectId, now);
    factsOfProject.set(projectId, fresh, now);
    return fresh;
  }

  return [
    defineRoute({
      method: 'GET',
      url: '/badge/:badgeToken/:variant',
      summary: 'A README badge (health, flakes, quarantined, worst) as .svg or shields.io .json; the badge token is the credential',
      tags: ['badges'],
      auth: { kind: 'none' },
      params: z.object({ badgeToken: z.string(), variant: z.string() }),
      produces: ['image/svg+xml', 'application/json'],
      async handler({ params, request, reply }) {
        const file = parseBadgeFile(params.variant);
        if (!file) throw errors.notFound(`no badge "${params.variant}": use one of ${BADGE_VARIANTS.map((v) => `${v}.svg`).join(', ')} (or .json)`);
        const now = Date.now();
        const projectId = await resolve(params.badgeToken, now);
        const badge: Badge = projectId === null ? UNKNOWN_BADGE : badgeFor(file.variant, await facts(projectId, now));
        // An unknown token's answer may change (a typo fixed, a new project): always revalidate it.
        const cacheControl = projectId === null ? 'no-cache' : `public, max-age=${BADGE_MAX_AGE_S}`;
        const { body, type } = render(badge, file.format);
        const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
        void reply.header('cache-control', cacheControl).header('etag', etag).header('cross-origin-resource-policy', 'cross-origin');
        if (matchesEtag(request.headers['if-none-match'], etag)) void reply.code(304).send();
        else void reply.code(200).type(type).send(body);
        return undefined;
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/badges',
      summary: "The project's badge token and badge paths (for README snippets)",
      tags: ['badges'],
      auth: { kind: 'token', anyOf: ['ingest', 'read'] },
      response: badgesResponseSchema,
      handler: ({ principal }) => projectBadges(d.badges, principal!.projectId),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/admin/projects/:slug/badge-token',
      summary: "Rotate a project's badge token: the old badge URLs show \"unknown\" from now on",
      tags: ['admin'],
      auth: { kind: 'admin' },
      params: z.object({ slug: z.string() }),
      response: z.object({ project: z.string(), badgeToken: z.string() }),
      async handler({ params }) {
        const project = await d.projects.rotateBadgeToken(params.slug);
        if (!project) throw errors.notFound(`project "${params.slug}" not found`);
        // The old token may be cached as this project's: forget every token so it is refused at once.
        projectOfToken.clear();
        return { project: project.slug, badgeToken: project.badgeToken };
      },
    }),
  ];
}

function render(badge: Badge, format: BadgeFormat): { body: string; type: string } {
  if (format === 'json') return { body: JSON.stringify(shieldsJson(badge, BADGE_MAX_AGE_S)), type: 'application/json; charset=utf-8' };
  return { body: badgeSvg(badge), type: 'image/svg+xml; charset=utf-8' };
}

/** RFC 9110 If-None-Match: a list of (possibly weak) tags, or `*`. */
export function matchesEtag(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const list = (Array.isArray(header) ? header.join(',') : header).split(',').map((t) => t.trim().replace(/^W\//, ''));
  return list.includes('*') || list.includes(etag);
}

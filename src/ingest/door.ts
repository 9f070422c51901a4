// The ingest routes' door checks for receivers that serve their own listener (OTLP/gRPC): the same
// token, scope, rate limit and queue slot as the HTTP ingest routes' onRequest (src/api/route.ts),
// in the same order. Who a token is comes in as a function (src/intake.ts passes the API's
// authenticator with its scope check), so this module stays below the API layer.
import { errors } from '../errors.js';
import type { IngestDoor, IngestSlots } from '../pipeline/component.js';

/** The principal of an `authorization` value with scope ingest: throws 401 (no valid token) or 403 (another scope). */
export type IngestAuthenticate<P extends { projectId: string }> = (authorization: string | undefined) => Promise<P>;

/** Seconds a project must wait before its next request, 0 when it may go on (the API's RateLimiter). */
export interface ProjectRateLimit {
  hit(projectId: string): number;
}

/** Auth 401 → scope 403 → rate limit 429 → one queue slot (503), as the HTTP ingest routes check them. */
export function ingestDoor<P extends { projectId: string }>(
  authenticate: IngestAuthenticate<P>,
  rateLimiter: ProjectRateLimit,
  ingest: { admit(): IngestSlots },
): IngestDoor {
  return {
    async authenticate(authorization) {
      const principal = await authenticate(authorization);
      const wait = rateLimiter.hit(principal.projectId);
      if (wait > 0) throw errors.rateLimited(wait);
      return principal;
    },
    admit: () => ingest.admit(),
  };
}

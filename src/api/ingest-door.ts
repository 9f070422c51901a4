// The ingest door (src/ingest/door.ts) for receivers with their own listener (OTLP/gRPC), wired to
// an authenticator of this layer (the token's ingest scope checked here) and to the caps of the
// app whose listener it shares them with.
import { requireAnyScope } from './auth.js';
import type { RateLimiter } from './rate-limit.js';
import { ingestDoor as door, type ListenerDoor } from '../ingest/door.js';
import type { IngestDoor, IngestSlots } from '../pipeline/component.js';

/** Who a token is (the API's, the agent's or the token snapshot's authenticator says). */
type Principal = Parameters<typeof requireAnyScope>[0];

export function ingestDoor(
  auth: { authenticate(header: string | undefined): Promise<Principal> },
  rateLimiter: RateLimiter,
  ingest: { admit(): IngestSlots },
  listener: ListenerDoor,
): IngestDoor {
  return door(
    async (authorization) => {
      const principal = await auth.authenticate(authorization);
      requireAnyScope(principal, ['ingest']);
      return principal;
    },
    rateLimiter,
    ingest,
    listener,
  );
}

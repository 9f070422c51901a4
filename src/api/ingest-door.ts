// The door receivers get (Host.door), wired the same way by every composition root that serves
// ingest: the admission of receivers with their own listener (OTLP/gRPC, src/ingest/door.ts) over
// an authenticator of this layer (the token's ingest scope checked here) and the caps of the app
// whose listener it shares them with; the app's route table; the ingest service; where such
// receivers say where they listen; and where processors' door checks go.
import { requireAnyScope } from './auth.js';
import type { App } from './app.js';
import type { RateLimiter } from './rate-limit.js';
import { ingestDoor as door, type ListenerDoor } from '../ingest/door.js';
import type { AdmissionCheck, AdmissionRegistry, IngestDoor, IngestPort, IngestSlots, ReceiverDoor } from '../pipeline/component.js';

/** Who a token is (the API's, the agent's or the token snapshot's authenticator says). */
type Principal = Parameters<typeof requireAnyScope>[0];

type Authenticator = { authenticate(header: string | undefined): Promise<Principal> };

export function ingestDoor(auth: Authenticator, rateLimiter: RateLimiter, ingest: { admit(): IngestSlots }, listener: ListenerDoor): IngestDoor {
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

export interface ReceiverWiring {
  /** Host.door where ingest is served. */
  door: ReceiverDoor;
  /** RuntimeOptions.admission of the runtime that builds the receivers. */
  admission: AdmissionRegistry;
  /** Receivers' own listeners by name (`otlp:grpc` → `127.0.0.1:4317`), as they announce them. */
  listeners: ReadonlyMap<string, string>;
}

export function receiverWiring(
  app: Pick<App, 'routes' | 'listener'>,
  auth: Authenticator,
  rateLimiter: RateLimiter,
  ingest: IngestPort & { admit(): IngestSlots; addCheck(check: AdmissionCheck): void },
): ReceiverWiring {
  const listeners = new Map<string, string>();
  return {
    door: {
      http: app.routes,
      ingest,
      admission: ingestDoor(auth, rateLimiter, ingest, app.listener),
      listeners: { add: (name, address) => void listeners.set(name, address) },
    },
    admission: { add: (check) => ingest.addCheck(check) },
    listeners,
  };
}

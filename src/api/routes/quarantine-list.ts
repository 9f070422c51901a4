// GET /v1/quarantine: the project's quarantined tests with the keys a runner matches on
// (docs/api.md "Quarantine list"). `flakehouse run` and the reporters fetch it with If-None-Match
// and keep it in a local cache (client/src/reporter/quarantine-cache.ts); the ETag is strong, a hash of
// the answer's bytes, so an unchanged list costs a 304 and no body.
import { createHash } from 'node:crypto';
import { quarantineListSchema } from '../../../client/src/contract/quarantine-list.js';
import { quarantineList, type QuarantineListDeps } from '../../usecases/quarantine-list.js';
import { defineRoute, type AnyRouteDef } from '../route.js';
import { matchesEtag } from './badge.js';

/** A strong ETag of the answer's bytes. */
export function quarantineEtag(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
}

export function quarantineListRoutes(d: QuarantineListDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/quarantine',
      summary: 'Quarantined tests (manual and automatic) with the keys a runner matches on; ETag / If-None-Match (304)',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['ingest', 'read'] },
      response: quarantineListSchema,
      async handler({ principal, request, reply }) {
        const body = JSON.stringify(await quarantineList(d, principal!.projectId));
        const etag = quarantineEtag(body);
        // Cache-Control stays the token routes' no-store: no shared cache keeps a project's list; the
        // client keeps its own copy and revalidates it with If-None-Match.
        void reply.header('etag', etag);
        if (matchesEtag(request.headers['if-none-match'], etag)) void reply.code(304).send();
        else void reply.code(200).type('application/json; charset=utf-8').send(body);
        return undefined;
      },
    }),
  ];
}

import { z } from 'zod';
import { defineRoute, type AnyRouteDef } from '../route.js';

export function healthRoutes(): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/health',
      summary: 'Liveness probe',
      tags: ['meta'],
      auth: { kind: 'none' },
      response: z.object({ status: z.literal('ok'), service: z.literal('api') }),
      async handler() {
        return { status: 'ok', service: 'api' };
      },
    }),
  ];
}

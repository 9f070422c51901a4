// Calls a REST route's own handler from a procedure, so both answer with the same code and data
// even where the route's logic is written inline (PR summary and gate, quarantine, badges, settings).
// Only for handlers that read query, params, body and principal: request and reply are absent.
import type { z } from 'zod';
import type { TokenPrincipal } from '../../store/projects.js';
import { errors, zodIssues } from '../../errors.js';
import type { AnyRouteDef } from '../route.js';

export interface RestCall {
  query?: unknown;
  params?: unknown;
  body?: unknown;
}

/** The handler of `METHOD url` in `routes`, validating like the route table does; looked up at the first call. */
export function restHandler<T extends z.ZodType>(routes: () => readonly AnyRouteDef[], method: AnyRouteDef['method'], url: string, response: T) {
  let route: AnyRouteDef | undefined;
  return async (principal: TokenPrincipal | undefined, call: RestCall = {}): Promise<z.output<T>> => {
    route ??= routes().find((r) => r.method === method && r.url === url);
    if (!route) throw new Error(`no REST route ${method} ${url}`);
    const parse = (schema: z.ZodType | undefined, value: unknown, where: 'query' | 'params' | 'body'): unknown => {
      if (!schema) return value;
      const r = schema.safeParse(value ?? {});
      if (r.success) return r.data;
      if (where === 'params' && route!.paramsNotFound) throw errors.notFound();
      throw where === 'body' ? errors.invalidPayload(zodIssues(r.error)) : errors.invalidQuery(zodIssues(r.error));
    };
    const result = await route.handler({
      request: undefined as never,
      reply: undefined as never,
      query: parse(route.query, call.query, 'query'),
      params: parse(route.params, call.params, 'params'),
      body: parse(route.body, call.body, 'body'),
      principal,
    });
    // The route's declared response schema types the procedure's output (and checks it).
    return response.parse(result);
  };
}

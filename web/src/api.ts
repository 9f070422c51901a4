// Talking to the daemon: the session REST routes and the typed procedure client. The browser never
// holds the token: the session lives in an HttpOnly cookie, and every mutation carries the CSRF
// token the session handed out (x-csrf-token).
import { TRPCClientError, createTRPCClient, httpBatchLink, type TRPCClient } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '../../src/api/trpc.js';

export type Outputs = inferRouterOutputs<AppRouter>;
export type Inputs = inferRouterInputs<AppRouter>;

export interface Principal {
  kind: 'project' | 'admin';
  projectId?: string;
  projectSlug?: string;
  scopes: string[];
}

export interface Session {
  csrfToken: string;
  expiresAt: string;
  principal: Principal;
}

/** An API refusal in words: the server's message and its catalogue code (docs/contract.md §5). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}

let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

async function refusal(res: Response): Promise<ApiFailure> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: string; message?: string; issues?: { path: string; message: string }[] };
    return new ApiFailure(res.status, body.error ?? `http_${res.status}`, body.message ?? res.statusText, body.issues ?? []);
  } catch {
    return new ApiFailure(res.status, `http_${res.status}`, text.slice(0, 300) || res.statusText || 'request failed');
  }
}

async function sessionCall(method: 'GET' | 'POST' | 'DELETE', body?: unknown): Promise<Session | null> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  let res: Response;
  try {
    // GET asks with ?optional=true: no session is 204, not a 401 (which the console shows as an error).
    res = await fetch(method === 'GET' ? '/v1/session?optional=true' : '/v1/session', { method, headers, credentials: 'same-origin', body: body === undefined ? null : JSON.stringify(body) });
  } catch {
    throw new ApiFailure(0, 'network_error', 'The daemon did not answer: is it running?');
  }
  if (res.status === 204) return null;
  if (!res.ok) throw await refusal(res);
  const session = (await res.json()) as Session;
  setCsrfToken(session.csrfToken);
  return session;
}

/** The current session, or null when there is none (204; a 401 from an older daemon too). */
export async function currentSession(): Promise<Session | null> {
  try {
    return await sessionCall('GET');
  } catch (e) {
    if (e instanceof ApiFailure && e.status === 401) return null;
    throw e;
  }
}

export async function signIn(token: string): Promise<Session> {
  return (await sessionCall('POST', { token }))!;
}

export async function signOut(): Promise<void> {
  await sessionCall('DELETE');
  setCsrfToken('');
}

/** Called when any call answers 401 (session expired or its token revoked). */
let onUnauthorized: () => void = () => {};
export function whenUnauthorized(fn: () => void): void {
  onUnauthorized = fn;
}

const clients = new Map<string, TRPCClient<AppRouter>>();

/**
 * The procedure client for one project. Admin sessions pick the project with
 * x-flakehouse-project; project sessions send their own slug, which the server accepts.
 */
export function api(projectSlug: string | null): TRPCClient<AppRouter> {
  const key = projectSlug ?? '';
  let client = clients.get(key);
  if (!client) {
    client = createTRPCClient<AppRouter>({
      links: [
        httpBatchLink({
          url: '/trpc',
          maxURLLength: 4000,
          headers: () => ({ 'x-csrf-token': csrfToken, ...(projectSlug ? { 'x-flakehouse-project': projectSlug } : {}) }),
          fetch: async (url, init) => {
            const res = await fetch(url, { ...(init as RequestInit), credentials: 'same-origin' });
            if (res.status === 401) onUnauthorized();
            return res;
          },
        }),
      ],
    });
    clients.set(key, client);
  }
  return client;
}

/** Any thrown value as an ApiFailure, so every page says the same things the same way. */
export function asFailure(e: unknown): ApiFailure {
  if (e instanceof ApiFailure) return e;
  if (e instanceof TRPCClientError) {
    const data = (e as TRPCClientError<AppRouter>).data as { httpStatus?: number; error?: string; code?: string; issues?: { path: string; message: string }[] } | undefined;
    if (!data) return new ApiFailure(0, 'network_error', e.message || 'The daemon did not answer: is it running?');
    return new ApiFailure(data.httpStatus ?? 0, data.error ?? data.code?.toLowerCase() ?? 'error', e.message, data.issues ?? []);
  }
  if (e instanceof Error) return new ApiFailure(0, 'client_error', e.message);
  return new ApiFailure(0, 'client_error', String(e));
}

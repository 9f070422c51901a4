// The project's quarantine list on the client (GET /v1/quarantine), with a local cache: one small
// JSON file per server, project and token in SERVICE_BUFFER_DIR/quarantine/ (beside the buffered
// runs and last-report.json, out of the user's work tree). The cached ETag goes out as
// If-None-Match, so an unchanged list is a 304; when the server cannot be reached the cached list
// is used and the caller is told how old it is. `flakehouse run` mutes only on a list the server
// answered now (`fresh`); the reporters print from either.
import { createHash, randomBytes } from 'node:crypto';
import { networkMessage } from './deliver.js';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { QuarantineEntry } from '../contract/mute.js';
import { quarantineListReadSchema } from '../contract/quarantine-list.js';

export const QUARANTINE_CACHE_DIR = 'quarantine';
/** One try, short: the list is a small read and a CI job should not wait on a dead server. */
const FETCH_TIMEOUT_MS = 10_000;

const cacheSchema = z.object({ version: z.literal(1), endpoint: z.string(), etag: z.string(), fetchedAt: z.string(), items: quarantineListReadSchema.shape.items });
type CacheFile = z.infer<typeof cacheSchema>;

export interface QuarantineTarget {
  endpoint: string;
  project: string | undefined;
  token: string;
  bufferDir: string;
}

export type QuarantineList =
  /** From the server now: a 200, or a 304 that confirmed the cached copy. */
  | { ok: true; fresh: true; items: QuarantineEntry[]; etag: string; via: 'server' | 'not-modified' }
  /** The server was unreachable (or failing): the cached copy, as of `fetchedAt`. */
  | { ok: true; fresh: false; items: QuarantineEntry[]; etag: string; fetchedAt: string; problem: string }
  /** Neither: the problem, and whether the server refused (401, 403, 404: it will not get better by itself). */
  | { ok: false; problem: string; refused: boolean };

/** Where the cached list for this server, project and token lives (the token only as a hash). */
export function quarantineCacheFile(t: Pick<QuarantineTarget, 'endpoint' | 'project' | 'token' | 'bufferDir'>): string {
  const key = createHash('sha256').update(`${t.endpoint}\u0000${t.project ?? ''}\u0000${t.token}`).digest('hex').slice(0, 24);
  return path.join(t.bufferDir, QUARANTINE_CACHE_DIR, `${key}.json`);
}

export function readQuarantineCache(file: string): CacheFile | undefined {
  try {
    const parsed = cacheSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function writeCache(file: string, data: CacheFile): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(3).toString('hex')}`;
  fs.writeFileSync(tmp, JSON.stringify(data), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** The list from the server (If-None-Match with the cached ETag), else the cache. Never throws. */
export async function fetchQuarantineList(t: QuarantineTarget, opts: { fetchImpl?: typeof fetch; now?: () => number } = {}): Promise<QuarantineList> {
  const doFetch = opts.fetchImpl ?? fetch;
  const now = opts.now ?? Date.now;
  const file = quarantineCacheFile(t);
  const cached = readQuarantineCache(file);
  const fromCache = (problem: string): QuarantineList =>
    cached ? { ok: true, fresh: false, items: cached.items, etag: cached.etag, fetchedAt: cached.fetchedAt, problem } : { ok: false, problem, refused: false };
  let res: Response;
  try {
    const headers: Record<string, string> = { authorization: `Bearer ${t.token}`, accept: 'application/json' };
    if (cached) headers['if-none-match'] = cached.etag;
    res = await doFetch(`${t.endpoint}/v1/quarantine`, { headers, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'error' });
  } catch (err) {
    return fromCache(`cannot reach ${t.endpoint}: ${networkMessage(err)}`);
  }
  const keep = (items: QuarantineEntry[], etag: string): void => {
    try {
      writeCache(file, { version: 1, endpoint: t.endpoint, etag, fetchedAt: new Date(now()).toISOString(), items });
    } catch {
      // A cache that cannot be written only costs the next call a full answer.
    }
  };
  if (res.status === 304 && cached) {
    await res.body?.cancel();
    keep(cached.items, cached.etag);
    return { ok: true, fresh: true, items: cached.items, etag: cached.etag, via: 'not-modified' };
  }
  const text = await res.text().catch(() => '');
  if (res.status === 200) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = quarantineListReadSchema.safeParse(json);
    if (!parsed.success) return fromCache(`${t.endpoint} sent an unexpected quarantine list`);
    const etag = res.headers.get('etag') ?? '';
    if (etag) keep(parsed.data.items, etag);
    return { ok: true, fresh: true, items: parsed.data.items, etag, via: 'server' };
  }
  const detail = `${res.status}${errorCode(text)}`;
  // 5xx, 429, 408: the server is there but not answering now, as good as unreachable.
  if (res.status >= 500 || res.status === 429 || res.status === 408) return fromCache(`${t.endpoint} answered ${detail} to GET /v1/quarantine`);
  const hint = res.status === 404 ? ' (is the server older than this client?)' : res.status === 403 ? ' (the token needs the ingest or read scope)' : '';
  return { ok: false, problem: `${t.endpoint} refused GET /v1/quarantine: ${detail}${hint}`, refused: true };
}

function errorCode(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown };
    return typeof body.error === 'string' ? ` ${body.error}` : '';
  } catch {
    return '';
  }
}


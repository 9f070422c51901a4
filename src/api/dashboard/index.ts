// The dashboard's pages (docs/dashboard.md): web/dist served by the daemon itself. Not routes of
// their own: the app's not-found path hands them GETs that no API route took, so the API keeps its
// 404s and /openapi.json lists API routes only. A path that names a built file gets it (hashed
// /assets/ cached for a year, the rest revalidated); any other page path that accepts HTML gets
// index.html (the SPA routes it); without a build, a 503 page says how to make one.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { S3Settings } from '../../artifacts/s3.js';
import { dashboardDist } from './build.js';


/** Paths that belong to the API: never answered with a page, whatever the Accept header says. */
const API_ROOTS = ['/v1', '/trpc', '/health', '/ready', '/metrics', '/openapi.json', '/badge', '/clickhouse'];

const IMMUTABLE = 'public, max-age=31536000, immutable';

export function isApiPath(urlPath: string): boolean {
  return API_ROOTS.some((p) => urlPath === p || urlPath.startsWith(`${p}/`));
}

/** Where artifact screenshots and videos load from: their signed URLs point at the object store. */
export function artifactOrigins(s3: S3Settings | undefined): string[] {
  if (!s3) return [];
  const endpoint = s3.publicEndpoint ?? s3.endpoint;
  if (!endpoint) return [`https://${s3.bucket}.s3.${s3.region}.amazonaws.com`, `https://s3.${s3.region}.amazonaws.com`];
  const url = new URL(endpoint);
  return s3.forcePathStyle ? [url.origin] : [`${url.protocol}//${s3.bucket}.${url.host}`, url.origin];
}

/** The page headers: a CSP without inline scripts, no framing, no referrer. */
export function pageHeaders(origins: readonly string[]): Record<string, string> {
  const media = ["'self'", ...origins].join(' ');
  const csp = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${media} data:`,
    `media-src ${media}`,
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
  ].join('; ');
  return { 'content-security-policy': csp, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' };
}

export interface DashboardOptions {
  /** The built front end (default web/dist of this package). */
  distDir?: string;
  artifactOrigins?: readonly string[];
}

export const NOT_BUILT_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Flakehouse: dashboard not built</title></head>
<body><h1>The dashboard is not built</h1>
<p>This daemon serves the dashboard from <code>web/dist</code>, which does not exist yet. Build it once with</p>
<pre>npm run build:web</pre>
<p>and reload this page (<code>flakehouse serve</code> builds it by itself on its first start). The API answers meanwhile: see <a href="/openapi.json">/openapi.json</a>.</p>
</body></html>
`;

export type PageFallback = (request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;

/** Registers the file sender and returns the fallback the app's not-found path calls. */
export async function registerDashboard(fastify: FastifyInstance, opts: DashboardOptions = {}): Promise<PageFallback> {
  const dist = path.resolve(opts.distDir ?? dashboardDist());
  const headers = pageHeaders(opts.artifactOrigins ?? []);
  // serve: false registers no route, only reply.sendFile (ranges, ETags, HEAD, traversal checks).
  await fastify.register(fastifyStatic, { root: dist, serve: false });
  let built = false;
  // Checked until found: a build made after the start is served without a restart.
  const isBuilt = (): boolean => (built ||= existsSync(path.join(dist, 'index.html')));

  return async (request, reply) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return false;
    const urlPath = request.url.split('?')[0]!;
    if (isApiPath(urlPath)) return false;
    const wantsPage = urlPath === '/' || String(request.headers.accept ?? '').includes('text/html');
    if (!isBuilt()) {
      if (!wantsPage) return false;
      void reply.code(503).headers({ ...headers, 'cache-control': 'no-store', 'content-type': 'text/html; charset=utf-8' }).send(NOT_BUILT_HTML);
      return true;
    }
    const file = builtFile(dist, urlPath);
    if (file !== null && file !== 'index.html') {
      void reply.headers({ ...headers, 'cache-control': file.startsWith('assets/') ? IMMUTABLE : 'no-cache' });
      await reply.sendFile(file, { cacheControl: false });
      return true;
    }
    if (!wantsPage) return false;
    void reply.headers({ ...headers, 'cache-control': 'no-cache' });
    await reply.sendFile('index.html', { cacheControl: false });
    return true;
  };
}

/** The file under dist a URL path names (relative, forward slashes), or null: no such file, or outside dist. */
function builtFile(dist: string, urlPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded === '/') return null;
  const full = path.resolve(dist, `.${path.posix.normalize(decoded)}`);
  if (!full.startsWith(dist + path.sep)) return null;
  try {
    if (!statSync(full).isFile()) return null;
  } catch {
    return null;
  }
  return path.relative(dist, full).split(path.sep).join('/');
}

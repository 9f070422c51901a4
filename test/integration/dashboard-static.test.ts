// The daemon serves the dashboard at /: built files with their cache headers, index.html for any
// page path that accepts HTML (the SPA routes it), security headers on every page, API paths never
// answered with a page; a 503 page when web/dist is missing; nothing at all with
// SERVICE_DASHBOARD_ENABLED=false. One case runs against the real web/dist when it is built.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDashboardBuilt, packageRoot } from '../../src/api/dashboard/build.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/app-3f9a1c.js"></script></head><body><div id="app"></div></body></html>';
const REAL_DIST = path.resolve(import.meta.dirname, '../../web/dist');

function fakeDist(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'fh-dist-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(path.join(dir, 'index.html'), INDEX);
  writeFileSync(path.join(dir, 'assets', 'app-3f9a1c.js'), 'console.log("app");\n');
  writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  return dir;
}

const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

function expectPageHeaders(h: Headers): void {
  expect(h.get('content-security-policy')).toBe(CSP);
  expect(h.get('x-content-type-options')).toBe('nosniff');
  expect(h.get('x-frame-options')).toBe('DENY');
  expect(h.get('referrer-policy')).toBe('no-referrer');
}

describe('dashboard pages', () => {
  let td: TestDaemon;

  beforeAll(async () => {
    td = await startTestDaemon({ dashboardDir: fakeDist() });
  }, 60_000);
  afterAll(async () => td?.close());

  it('answers / and every page path that accepts HTML with index.html, not cached, with the security headers', async () => {
    for (const p of ['/', '/signin', '/projects/default/flaky', '/projects/default/tests/0b6c2a5e-1d1e-4c55-9f3c-1b2a3c4d5e6f', '/pipeline?x=1']) {
      const res = await fetch(`${td.url}${p}`, { headers: html });
      expect(res.status, p).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expectPageHeaders(res.headers);
      expect(await res.text()).toBe(INDEX);
    }
    // A bare GET / (no Accept) is the dashboard too; HEAD as well.
    expect((await fetch(`${td.url}/`)).status).toBe(200);
    const head = await fetch(`${td.url}/projects/default/runs`, { method: 'HEAD', headers: html });
    expect(head.status).toBe(200);
  });

  it('serves built files: hashed assets immutable for a year, the rest revalidated', async () => {
    const js = await fetch(`${td.url}/assets/app-3f9a1c.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('javascript');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await js.text()).toContain('console.log');
    const icon = await fetch(`${td.url}/favicon.svg`);
    expect(icon.headers.get('cache-control')).toBe('no-cache');
    expect(icon.headers.get('content-type')).toContain('image/svg+xml');
  });

  it('keeps API paths and non-page requests out: JSON 404s, no index.html', async () => {
    for (const p of ['/v1/nope', '/trpc', '/badge/x', '/v1']) {
      const res = await fetch(`${td.url}${p}`, { headers: html });
      expect(res.status, p).toBe(404);
      expect(res.headers.get('content-type'), p).toContain('application/json');
    }
    const missingAsset = await fetch(`${td.url}/assets/gone-123.js`, { headers: { accept: '*/*' } });
    expect(missingAsset.status).toBe(404);
    expect((await fetch(`${td.url}/`, { method: 'POST', headers: html })).status).toBe(404);
    // The API answers as before.
    expect((await fetch(`${td.url}/health`)).status).toBe(200);
    expect((await td.request('GET', '/v1/runs')).status).toBe(200);
  });

  it('never serves a file outside the dist directory', async () => {
    for (const p of ['/..%2f..%2fpackage.json', '/assets/..%2f..%2f..%2fpackage.json', '/%2e%2e/%2e%2e/etc/passwd']) {
      const res = await fetch(`${td.url}${p}`, { headers: { accept: '*/*' } });
      const text = await res.text();
      expect(text, p).not.toContain('"name": "flakehouse-server"');
      expect(text, p).not.toContain('root:');
    }
  });
});

describe('dashboard not built', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ dashboardDir: path.join(tmpdir(), 'fh-no-such-dist') });
  }, 60_000);
  afterAll(async () => td?.close());

  it('answers pages with 503 and says to run npm run build:web; the API is untouched', async () => {
    const res = await fetch(`${td.url}/`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toContain('text/html');
    expectPageHeaders(res.headers);
    expect(await res.text()).toContain('npm run build:web');
    expect((await fetch(`${td.url}/projects/default/flaky`, { headers: html })).status).toBe(503);
    expect((await fetch(`${td.url}/style.css`, { headers: { accept: 'text/css' } })).status).toBe(404);
    expect((await td.request('GET', '/v1/runs')).status).toBe(200);
  });
});

describe('SERVICE_DASHBOARD_ENABLED=false', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_DASHBOARD_ENABLED: 'false' }, dashboardDir: fakeDist() });
  }, 60_000);
  afterAll(async () => td?.close());

  it('serves no pages and no sign-in; only bearer tokens authenticate', async () => {
    const page = await fetch(`${td.url}/`, { headers: html });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toContain('application/json');
    expect((await fetch(`${td.url}/assets/app-3f9a1c.js`)).status).toBe(404);
    expect((await td.request('POST', '/v1/session', { token: null, body: { token: td.token } })).status).toBe(404);
    expect((await td.request('GET', '/trpc/session.me')).status).toBe(200);
    expect((await fetch(`${td.url}/trpc/session.me`, { headers: { cookie: 'flakehouse_session=abc' } })).status).toBe(401);
    // /openapi.json leaves the session routes out when they are not served.
    const doc = (await td.request('GET', '/openapi.json', { token: null })).json;
    expect(doc.paths['/v1/session']).toBeUndefined();
  });
});

describe.skipIf(!existsSync(path.join(REAL_DIST, 'index.html')))('the real web/dist (skipped until `npm run build:web` has run)', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon(); // the default dist directory: web/dist of this checkout
  }, 60_000);
  afterAll(async () => td?.close());

  it('serves the built index.html and every asset it references, with no inline script', async () => {
    const res = await fetch(`${td.url}/projects/default/flaky`, { headers: html });
    expect(res.status).toBe(200);
    expectPageHeaders(res.headers);
    const body = await res.text();
    expect(body).toBe(readFileSync(path.join(REAL_DIST, 'index.html'), 'utf8'));
    // The CSP forbids inline scripts: every <script> has a src.
    expect(body.match(/<script(?![^>]*\bsrc=)[^>]*>/g) ?? []).toEqual([]);
    const refs = [...body.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    expect(refs.sort()).toEqual(
      expect.arrayContaining(readdirSync(path.join(REAL_DIST, 'assets')).filter((f) => /\.(js|css)$/.test(f) && body.includes(f)).map((f) => `/assets/${f}`).sort()),
    );
    for (const ref of refs) {
      const asset = await fetch(`${td.url}${ref}`);
      expect(asset.status, ref).toBe(200);
      expect(asset.headers.get('cache-control'), ref).toBe('public, max-age=31536000, immutable');
      expect((await asset.arrayBuffer()).byteLength, ref).toBeGreaterThan(0);
    }
  });
});

describe('the first start of `flakehouse serve` without web/dist', () => {
  it('builds it with the package’s own Vite (or waits for a start already building), then finds it', async () => {
    // A copy of the package with web/ but no build (node_modules shared by a link).
    const root = mkdtempSync(path.join(tmpdir(), 'fh-root-'));
    writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'flakehouse-server', type: 'module' }));
    symlinkSync(path.join(packageRoot(), 'node_modules'), path.join(root, 'node_modules'));
    cpSync(path.join(packageRoot(), 'web'), path.join(root, 'web'), { recursive: true, filter: (src) => !src.split(path.sep).includes('dist') });
    expect(existsSync(path.join(root, 'web/dist/index.html'))).toBe(false);
    const logger = createLogger('silent');

    // Another start holds the build lock: this one waits for its build instead of starting a second.
    writeFileSync(path.join(root, 'web/.build-lock'), '');
    const waiting = ensureDashboardBuilt(logger, root);
    mkdirSync(path.join(root, 'web/dist'));
    writeFileSync(path.join(root, 'web/dist/index.html'), 'from the other start');
    rmSync(path.join(root, 'web/.build-lock'));
    expect(await waiting).toBe('built');
    expect(readFileSync(path.join(root, 'web/dist/index.html'), 'utf8')).toBe('from the other start');
    rmSync(path.join(root, 'web/dist'), { recursive: true });

    expect(await ensureDashboardBuilt(logger, root)).toBe('built');
    expect(existsSync(path.join(root, 'web/.build-lock'))).toBe(false);
    const index = readFileSync(path.join(root, 'web/dist/index.html'), 'utf8');
    expect(index).toMatch(/src="\/assets\/[^"]+\.js"/);
    expect(await ensureDashboardBuilt(logger, root)).toBe('present');
    // packageRoot finds this checkout from anywhere below it.
    expect(packageRoot(path.join(packageRoot(), 'src', 'api', 'dashboard'))).toBe(packageRoot());
  }, 120_000);
});

// Builds the dashboard into web/dist (served by the daemon at /). Hashed file names under /assets/
// so the daemon can cache them forever; nothing inline in index.html, so the CSP needs no
// 'unsafe-inline'.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
// `vite preview` against a running daemon (SERVICE_PORT, default 8080) for front-end work.
const daemon = `http://127.0.0.1:${process.env.SERVICE_PORT ?? '8080'}`;
const apiProxy = Object.fromEntries(['/v1', '/trpc', '/badge', '/health', '/metrics', '/openapi.json'].map((p) => [p, daemon]));

export default defineConfig({
  root,
  base: '/',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    // Modern browsers preload modules themselves; the polyfill is dead weight.
    modulePreload: { polyfill: false },
    // Never inline assets as data: URLs into JS (img-src allows data:, but fonts/styles would not).
    assetsInlineLimit: 0,
    reportCompressedSize: true,
  },
  preview: { port: 5173, strictPort: false, proxy: apiProxy },
  server: { proxy: apiProxy },
});

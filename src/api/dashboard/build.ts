// `flakehouse serve` builds the dashboard on its first start when web/dist is missing, so
// `npm ci && npm start` gives a working dashboard whether or not install built it. The daemon
// itself never builds (tests start many); while there is no build it serves a page saying so.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

/**
 * The directory of this package's package.json (found upwards, so it holds from src/ and from a
 * bundle alike). The server's package is `flakehouse-server`; `flakehouse` is the client (client/).
 */
export function packageRoot(from: string = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        if ((JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'flakehouse-server') return dir;
      } catch {
        // not ours: keep looking
      }
    }
    if (path.dirname(dir) === dir) throw new Error(`no flakehouse-server package.json above ${from}`);
  }
}

export function dashboardDist(root: string = packageRoot()): string {
  return path.join(root, 'web', 'dist');
}

/** A build older than this is taken as abandoned (its process died): another start may build. */
const LOCK_STALE_MS = 10 * 60_000;
const WAIT_MS = 5 * 60_000;

/**
 * Builds web/dist with the package's own Vite (what `npm run build:web` runs) when index.html is
 * missing. Never throws: a failed build is logged, and the daemon then serves the "not built" page.
 * Two starts at once: one builds, the other waits for it.
 */
export async function ensureDashboardBuilt(logger: Logger, root: string = packageRoot()): Promise<'present' | 'built' | 'failed'> {
  const dist = dashboardDist(root);
  if (existsSync(path.join(dist, 'index.html'))) return 'present';
  const vite = path.join(root, 'node_modules', 'vite', 'bin', 'vite.js');
  const config = path.join(root, 'web', 'vite.config.ts');
  if (!existsSync(vite) || !existsSync(config)) {
    logger.warn({ vite, config }, 'the dashboard is not built and cannot be built here (no Vite or no web/); the API runs without it');
    return 'failed';
  }
  const lock = path.join(root, 'web', '.build-lock');
  let fd: number;
  try {
    fd = openSync(lock, 'wx');
  } catch {
    if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) {
      rmSync(lock, { force: true });
      return ensureDashboardBuilt(logger, root);
    }
    logger.info('another start is building the dashboard; waiting for it');
    const deadline = Date.now() + WAIT_MS;
    while (existsSync(lock) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    return existsSync(path.join(dist, 'index.html')) ? 'built' : 'failed';
  }
  try {
    logger.info('building the dashboard into web/dist (first start; `npm run build:web` does the same)');
    const started = Date.now();
    const res = spawnSync(process.execPath, [vite, 'build', '--config', config, '--logLevel', 'warn'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    if (res.status === 0 && existsSync(path.join(dist, 'index.html'))) {
      logger.info({ ms: Date.now() - started }, 'dashboard built');
      return 'built';
    }
    logger.error({ status: res.status, error: res.error?.message }, 'building the dashboard failed; run `npm run build:web` to see why. The API runs without it');
    return 'failed';
  } finally {
    closeSync(fd);
    rmSync(lock, { force: true });
  }
}

// Where the ahead-of-time CLI build lives (npm run build:cli, scripts/build-cli.mjs) and whether
// it is current. A build is used only while it started after the newest change under its sources
// (src/ and the client's client/src/), so a developer editing them never runs stale code: the CLI
// falls back to the sources through tsx.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SRC = path.join(ROOT, 'src');
/** The client's own source (the CLI's client commands, the reporters, the contract both share). */
export const CLIENT_SRC = path.join(ROOT, 'client/src');
/** What the build is made from. */
export const SOURCES = [SRC, CLIENT_SRC];
/** Builds are directories under it; `current` names the newest (replaced by rename: atomic). */
export const CLI_DIST = path.join(ROOT, 'dist/cli');
export const CURRENT = 'current';
/** In a build directory; its mtime is when that build started. */
export const STAMP = 'built-at';

/** The latest mtime of any file or directory under `dir` (a deletion changes its directory's). */
export function newestMtime(dir) {
  let newest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** The directory of a build newer than every source under `sources` (a directory or several), or undefined (none, or stale). */
export function freshBuild(sources = SOURCES, dist = CLI_DIST) {
  let dir;
  let builtAt;
  try {
    dir = path.join(dist, readFileSync(path.join(dist, CURRENT), 'utf8').trim());
    builtAt = statSync(path.join(dir, STAMP)).mtimeMs;
  } catch {
    return undefined;
  }
  return [sources].flat().every((src) => builtAt > newestMtime(src)) ? dir : undefined;
}

// `flakehouse --version`: the version of the package this CLI came in.
//
// A bundle may embed it (esbuild `define: { __FLAKEHOUSE_VERSION__: '"1.2.3"' }`); otherwise it is
// read at run time from the nearest package.json above this module. Under tsx that is the
// repository's; in the CLI build (scripts/build-cli.mjs rewrites import.meta.url to the source
// file's URL) too; in a package whose files sit below its own package.json, that package's.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

declare const __FLAKEHOUSE_VERSION__: string | undefined;

export function cliVersion(from: string = path.dirname(fileURLToPath(import.meta.url))): string {
  if (typeof __FLAKEHOUSE_VERSION__ === 'string' && __FLAKEHOUSE_VERSION__) return __FLAKEHOUSE_VERSION__;
  for (let dir = from; ; dir = path.dirname(dir)) {
    let text: string | undefined;
    try {
      text = readFileSync(path.join(dir, 'package.json'), 'utf8');
    } catch {
      // none here: look further up
    }
    if (text !== undefined) {
      let version: unknown;
      try {
        version = (JSON.parse(text) as { version?: unknown }).version;
      } catch {
        // not readable as JSON: look further up
      }
      // A package.json without a version (a workspace's `"type": "module"` marker) is not a package's.
      if (typeof version === 'string' && version) return version;
    }
    if (path.dirname(dir) === dir) throw new Error(`no package.json with a version above ${from}`);
  }
}

#!/usr/bin/env node
// Runs the ahead-of-time build (npm run build:cli) while it is newer than src/, and otherwise
// the TypeScript sources through tsx, so `npm ci && npm start` needs no build step.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { freshBuild } from './built-cli.js';
import { reexecWithMallocTunable } from './malloc-tunables.js';

// Before anything loads: `serve` without its malloc setting starts again with it (same pid).
reexecWithMallocTunable();

// FLAKEHOUSE_CLI_FROM_SOURCES=1 skips the build (how the tests cover the path without one, as in Docker).
const built = process.env.FLAKEHOUSE_CLI_FROM_SOURCES === '1' ? undefined : freshBuild();
let main;
if (built) {
  // Stack traces name src/ lines, as they do under tsx.
  process.setSourceMapsEnabled(true);
  ({ main } = await import(pathToFileURL(path.join(built, 'cli.js')).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/main/cli.ts'));
}
process.exitCode = await main(process.argv.slice(2));

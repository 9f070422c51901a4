// Once per `vitest run`: the CLI build (npm run build:cli) brought up to date, so the tests that
// spawn `flakehouse` start it in a fraction of the time tsx takes. Only speed depends on this:
// bin/flakehouse.js checks the build against src/ itself and runs the sources when it is stale.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from './process.js';

export default function setup(): void {
  try {
    execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build-cli.mjs'), '--if-stale'], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    // A source esbuild cannot compile fails the tests that load it, as it would without a build;
    // the others still run (the CLI from the sources).
    console.warn('global setup: npm run build:cli failed (above); the CLI tests run the sources through tsx');
  }
}

// Once per `vitest run`: the CLI build (npm run build:cli) brought up to date, so the tests that
// spawn `flakehouse` start it in a fraction of the time tsx takes. Only speed depends on this:
// bin/flakehouse.js checks the build against src/ itself and runs the sources when it is stale.
// Then the client package's build (npm run build:client), which the reporter tests need.
import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './process.js';
import { SCRATCH_DIR } from './scratch.js';

export default function setup(): () => void {
  removeEnginesOfEndedRuns();
  try {
    execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build-cli.mjs'), '--if-stale'], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    // A source esbuild cannot compile fails the tests that load it, as it would without a build;
    // the others still run (the CLI from the sources).
    console.warn('global setup: npm run build:cli failed (above); the CLI tests run the sources through tsx');
  }
  // The client package (client/dist, npm run build:client): what `flakehouse/vitest`, `/jest` and
  // `/playwright` resolve to here (node_modules/flakehouse is the client workspace), and what
  // test/e2e/client-pack.test.ts packs.
  try {
    execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts/build-client.mjs'), '--if-stale'], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    console.warn('global setup: npm run build:client failed (above); the reporter tests and the client package test fail');
  }
  return removeEnginesOfEndedRuns;
}

/** The chDB directory of each test process (test/helpers/daemon.ts CHDB_PATH) once that process is gone. */
function removeEnginesOfEndedRuns(): void {
  for (const name of readdirSync(SCRATCH_DIR)) {
    const m = /^fh-test-chdb-(\d+)$/.exec(name);
    if (!m || isRunning(Number(m[1]))) continue;
    rmSync(path.join(SCRATCH_DIR, name), { recursive: true, force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

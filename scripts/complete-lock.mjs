#!/usr/bin/env node
// Run after `npm install` changes package-lock.json: `node scripts/complete-lock.mjs`.
//
// Some packages ship native binaries as optional per-platform packages (chdb's @chdb/lib-*,
// msgpackr's @msgpackr-extract/*). The npm registry reachable from our build machines does not
// serve every platform's build, so `npm install` leaves those entries out of the lock, and
// `npm ci` then rejects the lock as out of sync. This adds an entry for each missing optional
// package with the platform it is for (read from its name), so `npm ci` accepts the lock and skips
// it on every other platform, as it would with a complete lock.
//
// `--strip` removes those added entries again. npm install (not npm ci) hangs at 100% CPU resolving
// entries that have no `resolved` URL, so changing dependencies is:
//   npm run lock:strip && npm install <pkg> && npm run lock:complete
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
if (process.argv.includes('--strip')) {
  let removed = 0;
  for (const [key, meta] of Object.entries(packages)) {
    if (key && meta.optional && meta.os && !meta.resolved && !meta.link) {
      delete packages[key];
      removed++;
    }
  }
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`removed ${removed} added lock entries`);
  process.exit(0);
}
const added = [];
for (const meta of Object.values(packages)) {
  for (const [name, range] of Object.entries(meta.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (packages[key]) continue;
    const m = /(darwin|linux|win32|freebsd|android)-(x64|arm64|arm|ia32)/.exec(name);
    packages[key] = {
      version: String(range).replace(/^[\^~=]/, ''),
      optional: true,
      os: [m ? m[1] : 'none'],
      cpu: [m ? m[2] : 'none'],
    };
    added.push(name);
  }
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(added.length ? `added lock entries for: ${added.join(', ')}` : 'lock already complete');

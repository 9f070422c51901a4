// Builds the client package (client/, published as `flakehouse`): the `flakehouse` command and
// the Vitest, Jest and Playwright reporters, bundled from the client's own source (client/src/)
// into client/dist/ with every package they use inside (the client has no runtime dependencies, so
// it installs without a registry).
//
//   npm run build:client               build client/dist/
//   npm run build:client -- --if-stale only when the build is older than a file under client/src/,
//                                      client/package.json or this script (the test suite's global setup)
//   npm run build:client && npm pack ./client   the tarball (npm here runs no prepack script)
//
// What keeps the server out is an import fence, not this script: client/src imports nothing
// outside itself and no server package (.oxlintrc.json, one import at a time;
// test/unit/import-boundaries.test.ts, through every import). The build checks the result: each
// bundled package is one the client is meant to bundle (CLIENT_PACKAGES), each source is under
// client/src, and nothing but Node's builtins is left to load at run time. `--metafile` also
// writes esbuild's metafile to dist/client-meta.json, to see what is inside.
import { build } from 'esbuild';
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { newestMtime } from '../bin/built-cli.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CLIENT = path.join(ROOT, 'client');
export const CLIENT_DIST = path.join(CLIENT, 'dist');
const CLIENT_SRC = path.join(CLIENT, 'src');
/** Written last: its mtime is when the build in client/dist started. */
const STAMP = path.join(CLIENT_DIST, '.built-at');

/** The entries: client/dist/<name>.js (the package.json's bin and exports name them), from client/src/. */
const ENTRIES = {
  cli: 'cli/bin.ts',
  vitest: 'reporter/vitest.ts',
  jest: 'reporter/jest.ts',
  playwright: 'reporter/playwright.ts',
};

/** The packages the client bundles: validation, YAML, globs, XML, and OTLP's encoding. Another is a decision to make here. */
const CLIENT_PACKAGES = [
  'zod',
  'yaml',
  'picomatch',
  'sax',
  '@opentelemetry/api',
  '@opentelemetry/api-logs',
  '@opentelemetry/core',
  '@opentelemetry/otlp-transformer',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-metrics',
  '@opentelemetry/semantic-conventions',
];

/**
 * A source that loads a CommonJS package with `createRequire(import.meta.url)('pkg')` (picomatch,
 * in client/src/contract/ignore-globs.ts) would look for node_modules beside the installed client
 * at run time: its calls become plain `require('pkg')`, which esbuild bundles. The build fails on
 * any other use.
 */
function createRequireBundled() {
  return {
    name: 'create-require-bundled',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!args.path.startsWith(CLIENT_SRC + path.sep)) return undefined;
        const text = readFileSync(args.path, 'utf8');
        if (!text.includes('createRequire(')) return undefined;
        const decl = /const (\w+) = createRequire\(import\.meta\.url\);/.exec(text);
        if (!decl) throw new Error(`${args.path}: createRequire used other than as \`const r = createRequire(import.meta.url)\`: update scripts/build-client.mjs`);
        const name = decl[1];
        const contents = text.replace(decl[0], '').replaceAll(new RegExp(`\\b${name}\\((['"][^'"]+['"])\\)`, 'g'), 'require($1)');
        if (new RegExp(`\\b${name}\\b`).test(contents)) throw new Error(`${args.path}: ${name}(…) called with something other than a string literal: update scripts/build-client.mjs`);
        return { contents, loader: 'ts' };
      });
    },
  };
}

/** The package an input belongs to (the innermost node_modules, and its directory), or undefined for a source. */
function packageOf(input) {
  const m = /^((?:.*\/)?node_modules\/((?:@[^/]+\/)?[^/]+))\//.exec(input);
  return m ? { dir: m[1], name: m[2] } : undefined;
}

/** What the bundle holds that it should not, each with the chain of imports from an entry that brought it in. */
function strayInputs(metafile) {
  const stray = (input) => (packageOf(input) ? !CLIENT_PACKAGES.includes(packageOf(input).name) : !input.startsWith('client/src/'));
  const from = new Map(Object.values(ENTRIES).map((file) => [`client/src/${file}`, undefined]));
  const queue = [...from.keys()];
  const found = [];
  while (queue.length > 0) {
    const input = queue.shift();
    if (stray(input)) {
      const chain = [];
      for (let at = input; at !== undefined; at = from.get(at)) chain.unshift(at);
      found.push(chain.join(' -> '));
      continue;
    }
    for (const imp of metafile.inputs[input]?.imports ?? []) {
      if (imp.external || from.has(imp.path)) continue;
      from.set(imp.path, input);
      queue.push(imp.path);
    }
  }
  return found;
}

/** The bundled packages' licence texts (bundling drops the files they ship them in). */
function thirdPartyLicenses(dirs) {
  const parts = ['The client bundles these packages; their licences follow.\n'];
  const seen = new Set();
  for (const rel of dirs.sort()) {
    const dir = path.join(ROOT, rel);
    const meta = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    if (seen.has(`${meta.name}@${meta.version}`)) continue;
    seen.add(`${meta.name}@${meta.version}`);
    const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    parts.push(`${'='.repeat(78)}\n${meta.name}@${meta.version} (${meta.license ?? 'see below'})\n${'='.repeat(78)}\n${file ? readFileSync(path.join(dir, file), 'utf8').trim() : '(no licence file in the package)'}\n`);
  }
  return parts.join('\n');
}

/** Whether client/dist was built after the last change under client/src/, to client/package.json and to this script. */
export function clientBuildIsFresh() {
  try {
    const builtAt = statSync(STAMP).mtimeMs;
    const inputs = [newestMtime(CLIENT_SRC), statSync(path.join(CLIENT, 'package.json')).mtimeMs, statSync(fileURLToPath(import.meta.url)).mtimeMs];
    return inputs.every((t) => builtAt > t);
  } catch {
    return false;
  }
}

/** Builds client/dist (into dist/client-build-* first, then renamed into place). Returns its metafile. */
export async function buildClient({ log = console.log } = {}) {
  const startedAt = Date.now();
  const pkg = JSON.parse(readFileSync(path.join(CLIENT, 'package.json'), 'utf8'));
  // Built beside the repository's other builds (dist/ is ignored by git) and renamed into place.
  const outDir = path.join(ROOT, 'dist', `client-build-${process.pid}-${startedAt.toString(36)}`);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const fail = (message) => {
    rmSync(outDir, { recursive: true, force: true });
    throw new Error(message);
  };
  let result;
  try {
    result = await build({
      entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, file]) => [name, path.join(CLIENT_SRC, file)])),
      // Paths in the metafile (and so the output) do not depend on where the build was started.
      absWorkingDir: ROOT,
      outdir: outDir,
      entryNames: '[name]',
      chunkNames: 'chunks/[name]-[hash]',
      bundle: true,
      // Commands and reporters share one copy of the delivery code; each command's module stays a
      // chunk of its own, loaded when the command runs (`--help` loads the entry alone).
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      minifySyntax: true,
      minifyWhitespace: true,
      keepNames: true,
      legalComments: 'linked',
      define: { __FLAKEHOUSE_VERSION__: JSON.stringify(pkg.version) },
      plugins: [createRequireBundled()],
      // Bundled CommonJS packages require Node's builtins: give the ES module chunks a `require`.
      banner: { js: "import { createRequire as __flakehouseRequire } from 'node:module'; const require = __flakehouseRequire(import.meta.url);" },
      metafile: true,
      logLevel: 'warning',
    });
  } catch (err) {
    rmSync(outDir, { recursive: true, force: true });
    throw err;
  }
  const stray = strayInputs(result.metafile);
  if (stray.length > 0) fail(`the client bundles only client/src and the packages of CLIENT_PACKAGES (scripts/build-client.mjs); it also took:\n  ${stray.join('\n  ')}`);
  const external = [...new Set(Object.values(result.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external && !isBuiltin(i.path)).map((i) => i.path)))];
  if (external.length > 0) fail(`the client must load nothing at run time but Node's builtins: it imports ${external.join(', ')}`);
  // Anything still loaded through a require made at run time would be looked up beside the package.
  const runtimeRequires = Object.keys(result.metafile.outputs).filter((f) => /createRequire(?! as __flakehouseRequire)/.test(readFileSync(path.join(ROOT, f), 'utf8')));
  if (runtimeRequires.length > 0) fail(`a createRequire() is left in ${runtimeRequires.join(', ')}: the package it loads would not be in the client (see createRequireBundled)`);
  const packages = new Map();
  for (const out of Object.values(result.metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(out.inputs)) {
      const p = packageOf(input);
      if (p) packages.set(p.dir, { name: p.name, bytes: (packages.get(p.dir)?.bytes ?? 0) + bytesInOutput });
    }
  }
  writeFileSync(path.join(outDir, 'THIRD_PARTY_LICENSES.txt'), thirdPartyLicenses([...packages.keys()]));
  // The CLI entry is the package's bin.
  const cli = path.join(outDir, 'cli.js');
  writeFileSync(cli, `#!/usr/bin/env node\n${readFileSync(cli, 'utf8')}`);
  // `mode` applies only to a file writeFileSync creates: esbuild already wrote this one.
  chmodSync(cli, 0o755);
  writeFileSync(path.join(outDir, '.built-at'), '');
  utimesSync(path.join(outDir, '.built-at'), new Date(startedAt), new Date(startedAt));
  // Replace client/dist: a rename each way, so a reader sees the old build or the new one.
  // Two builds at once (two test runs): the later rename wins, and each removes what it moved away.
  const olds = [];
  for (let attempt = 0; ; attempt++) {
    const old = path.join(ROOT, 'dist', `client-old-${process.pid}-${startedAt.toString(36)}-${attempt}`);
    try {
      renameSync(CLIENT_DIST, old);
      olds.push(old);
    } catch {
      // no previous build
    }
    try {
      renameSync(outDir, CLIENT_DIST);
      break;
    } catch (err) {
      if (attempt >= 4) throw err;
    }
  }
  for (const old of olds) rmSync(old, { recursive: true, force: true });
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  const list = [...packages.values()].sort((a, b) => b.bytes - a.bytes).map((p) => `${p.name} ${(p.bytes / 1024).toFixed(0)} KiB`);
  log(`client/dist: ${(bytes / 1024).toFixed(0)} KiB of JavaScript in ${Object.keys(result.metafile.outputs).length} files (${Date.now() - startedAt} ms); packages bundled: ${list.join(', ') || 'none'}`);
  return result.metafile;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!(process.argv.includes('--if-stale') && clientBuildIsFresh())) {
    const metafile = await buildClient();
    if (process.argv.includes('--metafile')) writeFileSync(path.join(ROOT, 'dist/client-meta.json'), JSON.stringify(metafile));
  }
}

// Builds the client package (client/, published as `flakehouse`): the `flakehouse` command and
// the Vitest, Jest and Playwright reporters, bundled from src/ into client/dist/ with every package
// they use inside (the client has no runtime dependencies, so it installs without a registry).
//
//   npm run build:client               build client/dist/
//   npm run build:client -- --if-stale only when the build is older than a file under src/ or
//                                      client/package.json (the test suite's global setup)
//   npm run build:client && npm pack ./client   the tarball (npm here runs no prepack script)
//
// The sources stay where they are: the command is src/cli/main.ts (through src/cli/client-main.ts),
// so a command added there ships in the client too. What only the server runs is left out: a
// dynamic import() of a server module (the daemon, the agent, the pipeline, routes, storage) is
// replaced by a module that throws "needs the server" (a usage error, exit 2). The build fails when
// any server, engine or build-tool package still ends up in the bundle (SERVER_PACKAGES), read from
// esbuild's metafile (`--metafile` also writes it to dist/client-meta.json, to see what is inside).
import { build } from 'esbuild';
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { newestMtime } from '../bin/built-cli.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = path.join(ROOT, 'src');
export const CLIENT = path.join(ROOT, 'client');
/** The client's own source: the contract it shares with the server (the rest still in src/). */
const CLIENT_SRC = path.join(CLIENT, 'src');
export const CLIENT_DIST = path.join(CLIENT, 'dist');
/** Written last: its mtime is when the build in client/dist started. */
const STAMP = path.join(CLIENT_DIST, '.built-at');

/** The entries: client/dist/<name>.js (the package.json's bin and exports name them). */
const ENTRIES = {
  cli: 'cli/client-main.ts',
  vitest: 'reporter/vitest.ts',
  jest: 'reporter/jest.ts',
  playwright: 'reporter/playwright.ts',
};

/**
 * Sources only the server runs. A dynamic import() of one becomes the stub below; a static import
 * of one is bundled (a constant such as store/projects.ts's SCOPES costs nothing), and the package
 * check catches it if it drags a server package in.
 */
const SERVER_MODULES = [
  'main/',
  'builtin/',
  'agent/',
  'tokens/',
  'ingest/',
  'otlp/',
  'pipeline/',
  'api/',
  'store/',
  'queue/',
  'receivers/',
  'processors/',
  'exporters/',
  'connectors/',
  'extensions/',
  'telemetry/',
  'artifacts/',
  'project-export/',
];

/** Packages that must never be in the client: the engine, the server, storage, cloud SDKs, build tools. */
const SERVER_PACKAGES = [
  'chdb',
  '@clickhouse/client',
  '@clickhouse/client-common',
  'fastify',
  /^@fastify\//,
  'lmdb',
  'msgpackr',
  'nats',
  /^@aws-sdk\//,
  /^@smithy\//,
  'vite',
  'rolldown',
  'esbuild',
  'tsx',
  'typescript',
  'pino',
  '@grpc/grpc-js',
  /^@trpc\//,
  '@anthropic-ai/sdk',
  'nodemailer',
  /^@opentelemetry\/exporter-/,
  'preact',
  'uplot',
  '@picocss/pico',
];

const STUB = '\0flakehouse-server-only';

function isServerModule(file) {
  const rel = path.relative(SRC, file).split(path.sep).join('/');
  return !rel.startsWith('..') && SERVER_MODULES.some((m) => (m.endsWith('/') ? rel.startsWith(m) : rel === m));
}

/**
 * A source that loads a CommonJS package with `createRequire(import.meta.url)('pkg')` (picomatch,
 * in client/src/contract/ignore-globs.ts) would look for node_modules beside the installed client at run time:
 * its calls become plain `require('pkg')`, which esbuild bundles. The build fails on any other use.
 */
function createRequireBundled() {
  return {
    name: 'create-require-bundled',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!args.path.startsWith(SRC + path.sep) && !args.path.startsWith(CLIENT_SRC + path.sep)) return undefined;
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

/** Replaces each dynamic import() of a server module with a module that refuses to load. */
function serverModulesStubbed() {
  return {
    name: 'server-modules-stubbed',
    setup(b) {
      b.onResolve({ filter: /^\./ }, (args) => {
        if (args.kind !== 'dynamic-import' || args.pluginData === STUB) return undefined;
        const file = path.resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts'));
        if (!isServerModule(file)) return undefined;
        return { path: path.relative(SRC, file), namespace: STUB };
      });
      // A server package loaded on demand by a module the client shares (store/client.ts opens chDB
      // or ClickHouse only when asked): the same stub.
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.kind !== 'dynamic-import') return undefined;
        const parts = args.path.split('/');
        const name = args.path.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
        return forbidden(name) ? { path: args.path, namespace: STUB } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: STUB }, (args) => ({
        resolveDir: path.join(SRC, 'cli'),
        loader: 'ts',
        contents: [
          "import { UsageError } from './usage-error.ts';",
          `throw new UsageError(${JSON.stringify(
            `this needs the Flakehouse server (${args.path.endsWith('.ts') ? `src/${args.path}` : args.path}), which the client package \`flakehouse\` leaves out: run it where the server is installed (a checkout of the repository with \`npm ci\`, or the Docker image)`,
          )});`,
        ].join('\n'),
      }));
    },
  };
}

/** The package an input file belongs to (the innermost node_modules), or undefined for a source. */
function packageOf(input) {
  const m = /^(?:.*\/)?node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  return m ? m[1] : undefined;
}

/** The directory of that package (relative to the root, as the metafile's inputs are). */
function packageDirOf(input) {
  const m = /^((?:.*\/)?node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
  return m ? m[1] : undefined;
}

/** Every package in the bundle (by its directory) with its name and the bytes it contributes. */
function bundledPackages(metafile) {
  const packages = new Map();
  for (const out of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(out.inputs)) {
      const dir = packageDirOf(input);
      if (!dir) continue;
      const p = packages.get(dir) ?? { name: packageOf(input), bytes: 0 };
      p.bytes += bytesInOutput;
      packages.set(dir, p);
    }
  }
  return packages;
}

/** How an entry reaches the first input `match` accepts (for the error message). */
function importChain(metafile, match) {
  const entries = Object.values(ENTRIES).map((file) => `src/${file}`);
  const from = new Map(entries.map((e) => [e, undefined]));
  const queue = [...entries];
  while (queue.length > 0) {
    const input = queue.shift();
    if (match(input)) {
      const chain = [];
      for (let at = input; at !== undefined; at = from.get(at)) chain.unshift(at);
      return chain;
    }
    for (const imp of metafile.inputs[input]?.imports ?? []) {
      if (imp.external || from.has(imp.path)) continue;
      from.set(imp.path, input);
      queue.push(imp.path);
    }
  }
  return ['?'];
}

function forbidden(name) {
  return SERVER_PACKAGES.some((p) => (typeof p === 'string' ? p === name : p.test(name)));
}

/** The bundled packages' licence texts (bundling drops the files they ship them in). */
function thirdPartyLicenses(dirs) {
  const parts = ['The client bundles these packages; their licences follow.\n'];
  const seen = new Set();
  for (const rel of dirs.sort()) {
    const dir = path.join(ROOT, rel);
    const meta = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const name = meta.name;
    if (seen.has(`${name}@${meta.version}`)) continue;
    seen.add(`${name}@${meta.version}`);
    const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    parts.push(`${'='.repeat(78)}\n${name}@${meta.version} (${meta.license ?? 'see below'})\n${'='.repeat(78)}\n${file ? readFileSync(path.join(dir, file), 'utf8').trim() : '(no licence file in the package)'}\n`);
  }
  return parts.join('\n');
}

/** Whether client/dist was built after the last change under src/, to client/package.json and to this script. */
export function clientBuildIsFresh() {
  try {
    const builtAt = statSync(STAMP).mtimeMs;
    const inputs = [newestMtime(SRC), newestMtime(CLIENT_SRC), statSync(path.join(CLIENT, 'package.json')).mtimeMs, statSync(fileURLToPath(import.meta.url)).mtimeMs];
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
  let result;
  try {
    result = await build({
      entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, file]) => [name, path.join(SRC, file)])),
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
      plugins: [serverModulesStubbed(), createRequireBundled()],
      // Bundled CommonJS packages require Node's builtins: give the ES module chunks a `require`.
      banner: { js: "import { createRequire as __flakehouseRequire } from 'node:module'; const require = __flakehouseRequire(import.meta.url);" },
      metafile: true,
      logLevel: 'warning',
    });
  } catch (err) {
    rmSync(outDir, { recursive: true, force: true });
    throw err;
  }
  const packages = bundledPackages(result.metafile);
  const bad = [...new Set([...packages.values()].map((p) => p.name))].filter(forbidden);
  const external = [...new Set(Object.values(result.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.external && !isBuiltin(i.path)).map((i) => i.path)))];
  // Anything still loaded through a require made at run time would be looked up beside the package.
  const runtimeRequires = Object.keys(result.metafile.outputs).filter((f) => /createRequire(?! as __flakehouseRequire)/.test(readFileSync(path.join(ROOT, f), 'utf8')));
  if (runtimeRequires.length > 0) {
    rmSync(outDir, { recursive: true, force: true });
    throw new Error(`a createRequire() is left in ${runtimeRequires.join(', ')}: the package it loads would not be in the client (see createRequireBundled)`);
  }
  if (bad.length > 0 || external.length > 0) {
    rmSync(outDir, { recursive: true, force: true });
    const chains = bad.map((name) => `  ${name}: ${importChain(result.metafile, (input) => packageOf(input) === name).join(' -> ')}`);
    throw new Error(`the client bundle must hold no server package and import none at run time: bundled ${bad.join(', ') || 'none'}; imported ${external.join(', ') || 'none'}\n${chains.join('\n')}`);
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

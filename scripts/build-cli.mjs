// Builds the CLI ahead of time (npm run build:cli): src/ (and the client's client/src/ it imports)
// bundled into dist/cli/<build>/ so `flakehouse` starts without transpiling (through tsx every
// start loads some 300 modules through its hooks). bin/flakehouse.js runs the build only while it
// is newer than every file in those sources.
// `--if-stale` builds only when there is no such build (the test suite's global setup).
//
// Files the sources find next to themselves (migrations, protos, pipelines/default.yaml,
// package.json) stay where they are: each module's import.meta.url is rewritten to its source
// file's URL, so those lookups resolve as they do under tsx. Packages stay external (node_modules).
//
// Several test runs may build at once in one working tree: each writes a directory of its own and
// then renames `current` onto it, so a running CLI never sees a half-written build.
import { build } from 'esbuild';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI_DIST, CURRENT, SOURCES, SRC, STAMP, freshBuild } from '../bin/built-cli.js';

// The daemon starts its pipeline thread from src/pipeline/thread/entry.mjs (tsx); the built
// daemon starts the built worker instead, so a build never mixes with transpiled sources.
const THREAD_MODULE = path.join(SRC, 'pipeline/thread/threaded.ts');
const THREAD_ENTRY = "new URL('./entry.mjs', import.meta.url)";
const BUILT_THREAD_ENTRY = "new URL('./pipeline-worker.js', import.meta.url)";
const BUILT_THREAD_MARK = '__BUILT_PIPELINE_WORKER_URL__';
/**
 * Replaced builds are removed after a day, or sooner past the newest KEEP_BUILDS: a process started
 * from a build loads parts of it later (the daemon chunk, the pipeline thread when it restarts).
 */
const KEEP_OLD_MS = 24 * 60 * 60_000;
const KEEP_BUILDS = 50;

function sourceUrls(outDir) {
  return {
    name: 'source-import-meta-url',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!SOURCES.some((dir) => args.path.startsWith(dir + path.sep))) return undefined;
        let text = readFileSync(args.path, 'utf8');
        if (args.path === THREAD_MODULE) {
          if (!text.includes(THREAD_ENTRY)) throw new Error(`${THREAD_MODULE} no longer contains ${THREAD_ENTRY}: update scripts/build-cli.mjs`);
          text = text.replace(THREAD_ENTRY, BUILT_THREAD_MARK);
        }
        // Every chunk lands in outDir, so the source is at the same relative path from any of them.
        const fromOut = path.relative(outDir, args.path).split(path.sep).join('/');
        text = text.replaceAll('import.meta.url', `new URL(${JSON.stringify(fromOut)}, import.meta.url).href`).replace(BUILT_THREAD_MARK, BUILT_THREAD_ENTRY);
        return { contents: text, loader: 'ts' };
      });
    },
  };
}

/** Pure JavaScript, no files read beside themselves, no native parts: safe to bundle. */
const BUNDLED_PACKAGES = new Set(['zod', 'yaml', 'picomatch', 'sax']);

/** Marks every bare import external unless its package is in `bundled`. */
function externalPackagesExcept(bundled) {
  return {
    name: 'external-packages-except',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith('node:')) return { path: args.path, external: true };
        const parts = args.path.split('/');
        const name = args.path.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
        return bundled.has(name) ? undefined : { path: args.path, external: true };
      });
    },
  };
}

/** Builds into a new directory and makes it current; returns that directory. */
export async function buildCli() {
  const startedAt = new Date();
  const name = `build-${startedAt.getTime().toString(36)}-${process.pid}`;
  const outDir = path.join(CLI_DIST, name);
  mkdirSync(outDir, { recursive: true });
  try {
    await build({
      entryPoints: { cli: path.join(SRC, 'main/cli.ts'), 'pipeline-worker': path.join(SRC, 'pipeline/thread/worker.ts') },
      outdir: outDir,
      entryNames: '[name]',
      chunkNames: '[name]-[hash]',
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // Packages stay in node_modules, except small pure-JS ones every command loads: bundled, they
      // are one file to compile instead of hundreds of ES modules to resolve (flakehouse gate
      // starts in 0.45 s instead of 0.58 s of CPU).
      plugins: [sourceUrls(outDir), externalPackagesExcept(BUNDLED_PACKAGES)],
      // The bundled CommonJS packages require Node's builtins: give ES module chunks a `require`.
      banner: { js: "import { createRequire as __flakehouseRequire } from 'node:module'; const require = __flakehouseRequire(import.meta.url);" },
      sourcemap: 'linked',
      sourcesContent: false,
      logLevel: 'warning',
    });
  } catch (err) {
    rmSync(outDir, { recursive: true, force: true });
    throw err;
  }
  const stamp = path.join(outDir, STAMP);
  writeFileSync(stamp, '');
  utimesSync(stamp, startedAt, startedAt);
  const current = path.join(CLI_DIST, CURRENT);
  writeFileSync(`${current}.${process.pid}`, `${name}\n`);
  renameSync(`${current}.${process.pid}`, current);
  const builds = readdirSync(CLI_DIST, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== name)
    .map((e) => ({ dir: path.join(CLI_DIST, e.name), at: statSync(path.join(CLI_DIST, e.name)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const [i, { dir, at }] of builds.entries()) {
    if (i >= KEEP_BUILDS - 1 || Date.now() - at > KEEP_OLD_MS) rmSync(dir, { recursive: true, force: true });
  }
  return outDir;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!(process.argv.includes('--if-stale') && freshBuild())) await buildCli();
}

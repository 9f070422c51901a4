// The layering .oxlintrc.json fences one import at a time, checked here through every import a
// module makes at run time (docs/architecture.md, "Layers"): the ingest door (src/ingest) and the
// receivers reach no API, store, pipeline thread or database client, however indirectly; the
// pipeline thread loads no receiver; processors and exporters never load store/client.ts (their
// repositories come from Host.extensions.repositories) nor another component; the client
// (client/src) loads nothing outside client/src and no server package, its contract
// (client/src/contract) nothing outside itself and nothing that does I/O, and the server nothing of
// the client but the contract (its composition roots aside). The graph is read from the source
// with regular expressions: static `import … from` / `export … from`, side-effect imports and `import('…')` with a literal
// specifier are edges; `import type` and `export type` are not (they vanish at run time). An
// import of inline types only (`import { type A } from`) is an edge: under verbatimModuleSyntax it
// stays as `import {} from`, which loads the module.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');
/** The client's own source; its contract (client/src/contract) is what the server may import of it. */
const CLIENT_SRC = path.join(ROOT, 'client/src');

/** Repository-relative paths (`src/api/route.ts`) of every module under `dir`. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.(ts|mts|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path.relative(ROOT, p).split(path.sep).join('/')] : [];
  });
}

/**
 * The text without its comments, strings kept: a specifier named in a comment (a doc line saying
 * "from src/api/…") is no import, and `/*` inside a string ('src/**\/*.ts') opens no comment.
 */
function withoutComments(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
      out += ' ';
    } else if (c === "'" || c === '"' || c === '`') {
      // A quoted string ends at its quote (or, for ' and ", the line's end); a template at its backtick.
      let j = i + 1;
      while (j < text.length && text[j] !== c && (c === '`' || text[j] !== '\n')) j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const STATIC_IMPORT = /^[ \t]*import\s+(type\s+)?(?:[\w$]+\s*,?\s*)?(?:\*\s*as\s+[\w$]+|\{[^}]*\})?\s*from\s*(['"])([^'"\n]+)\2/gm;
const SIDE_EFFECT_IMPORT = /^[ \t]*import\s*(['"])([^'"\n]+)\1/gm;
const RE_EXPORT = /^[ \t]*export\s+(type\s+)?(?:\*(?:\s+as\s+[\w$]+)?|\{[^}]*\})\s*from\s*(['"])([^'"\n]+)\2/gm;
const DYNAMIC_IMPORT = /\bimport\(\s*(['"])([^'"\n]+)\1\s*\)/g;

/** The specifiers a module loads at run time. */
function runtimeSpecifiers(text: string): string[] {
  const code = withoutComments(text);
  const out: string[] = [];
  for (const m of code.matchAll(STATIC_IMPORT)) if (!m[1]) out.push(m[3]!);
  for (const m of code.matchAll(SIDE_EFFECT_IMPORT)) out.push(m[2]!);
  for (const m of code.matchAll(RE_EXPORT)) if (!m[1]) out.push(m[3]!);
  for (const m of code.matchAll(DYNAMIC_IMPORT)) out.push(m[2]!);
  return out;
}

/** A module of src/ or client/src/ (its path) or a package (its name: `chdb`, `@clickhouse/client`, `node:fs`). */
function resolve(from: string, specifier: string, files: ReadonlySet<string>): string | null {
  if (!specifier.startsWith('.')) {
    const parts = specifier.split('/');
    return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
  }
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  for (const candidate of [target.replace(/\.js$/, '.ts'), target.replace(/\.mjs$/, '.mts'), target]) {
    if (files.has(candidate)) return candidate;
  }
  return null; // JSON, protobuf definitions and other files that are not modules of src/ or client/src/
}

interface ImportGraph {
  edges: Map<string, string[]>;
}

function importGraph(): ImportGraph {
  const list = [...sourceFiles(SRC), ...sourceFiles(CLIENT_SRC)];
  const files = new Set(list);
  const edges = new Map<string, string[]>();
  for (const f of list) {
    const text = readFileSync(path.join(ROOT, f), 'utf8');
    const targets = runtimeSpecifiers(text)
      .map((s) => resolve(f, s, files))
      .filter((t): t is string => t !== null);
    edges.set(f, [...new Set(targets)]);
  }
  return { edges };
}

/** Every module `start` loads, with the chain of imports that reaches it. */
function reachable(graph: ImportGraph, start: string): Map<string, string[]> {
  const via = new Map<string, string[]>([[start, [start]]]);
  const queue = [start];
  while (queue.length > 0) {
    const at = queue.shift()!;
    for (const to of graph.edges.get(at) ?? []) {
      if (via.has(to)) continue;
      via.set(to, [...via.get(at)!, to]);
      if (graph.edges.has(to)) queue.push(to);
    }
  }
  return via;
}

/** The chains from `start` to every module matching `forbidden`, as `a → b → c` lines. */
function violations(graph: ImportGraph, start: string, forbidden: (target: string) => boolean): string[] {
  return [...reachable(graph, start)].filter(([target]) => forbidden(target)).map(([, chain]) => chain.join(' → '));
}

const graph = importGraph();
const under = (dir: string) => (target: string) => target.startsWith(`${dir}/`);
const databaseClient = (target: string) => target === 'chdb' || target === '@clickhouse/client';

describe('the import graph read from src/ and client/src/', () => {
  it('follows static, re-exported and dynamic imports and skips type-only ones', () => {
    expect(runtimeSpecifiers("import { a, type B } from './a.js';\nimport type { C } from './c.js';\nexport type { D } from './d.js';")).toEqual(['./a.js']);
    expect(runtimeSpecifiers("import {\n  a,\n  b,\n} from './a.js';\nexport * from './e.js';\nexport { f } from './f.js';\nimport './g.js';\nconst h = await import('./h.js');")).toEqual([
      './a.js',
      './g.js',
      './e.js',
      './f.js',
      './h.js',
    ]);
    expect(runtimeSpecifiers("// import { x } from './commented.js';\n/* import y from './block.js'; */\nconst glob = 'src/**/*.ts';\nimport { z } from './z.js';")).toEqual(['./z.js']);
    // The walk reaches what the composition roots load: the daemon serves the API and the receivers.
    const daemon = reachable(graph, 'src/main/daemon.ts');
    expect(daemon.has('src/api/route.ts')).toBe(true);
    expect(daemon.has('src/receivers/shared.ts')).toBe(true);
    expect(daemon.has('src/store/client.ts')).toBe(true);
    // A type-only import is no edge: route-def.ts names the store's types without loading it.
    expect([...reachable(graph, 'src/pipeline/route-def.ts').keys()].filter(under('src/store'))).toEqual([]);
  });
});

describe('import boundaries', () => {
  const doorAndReceivers = [...graph.edges.keys()].filter((f) => under('src/ingest')(f) || under('src/receivers')(f));

  it('src/ingest and src/receivers hold modules', () => {
    expect(doorAndReceivers.filter(under('src/ingest')).length).toBeGreaterThan(0);
    expect(doorAndReceivers.filter(under('src/receivers')).length).toBeGreaterThan(0);
  });

  it.each([
    ['src/api', under('src/api')],
    ['src/store', under('src/store')],
    ['src/pipeline/thread', under('src/pipeline/thread')],
    ['a database client (chdb, @clickhouse/client)', databaseClient],
  ])('nothing in src/ingest or src/receivers loads %s, directly or not', (_name, forbidden) => {
    expect(doorAndReceivers.flatMap((f) => violations(graph, f, forbidden))).toEqual([]);
  });

  it('src/ingest loads no receiver: the door sits below them', () => {
    expect(doorAndReceivers.filter(under('src/ingest')).flatMap((f) => violations(graph, f, under('src/receivers')))).toEqual([]);
  });

  it('the pipeline thread (src/pipeline/thread/worker.ts) loads no receiver', () => {
    expect(violations(graph, 'src/pipeline/thread/worker.ts', under('src/receivers'))).toEqual([]);
    // …while the registry of the thread that serves ingest has them.
    expect(violations(graph, 'src/builtin/components.ts', under('src/receivers')).length).toBeGreaterThan(0);
  });
});

describe('the client\'s contract (client/src/contract)', () => {
  const contract = [...graph.edges.keys()].filter(under('client/src/contract'));
  /** Packages of Node that do I/O (or start processes and threads): the contract takes their results instead. */
  const io = (t: string) => /^(node:)?(fs|http|https|http2|net|dgram|child_process|worker_threads|os|zlib)(\/|$)/.test(t);

  it('holds the shared modules the server imports', () => {
    expect(contract.length).toBeGreaterThan(20);
    expect(violations(graph, 'src/receivers/junit/index.ts', (t) => t === 'client/src/contract/junit/parse.ts').length).toBe(1);
  });

  it('loads nothing outside client/src/contract, directly or not, and nothing that does I/O', () => {
    const outside = (t: string) => !under('client/src/contract')(t) && (t.startsWith('src/') || t.startsWith('client/'));
    expect(contract.flatMap((f) => violations(graph, f, outside))).toEqual([]);
    expect(contract.flatMap((f) => violations(graph, f, io))).toEqual([]);
  });

  it('is all the server loads of client/src (the composition roots aside)', () => {
    const server = [...graph.edges.keys()].filter((f) => under('src')(f) && !under('src/main')(f));
    const clientNotContract = (t: string) => under('client/src')(t) && !under('client/src/contract')(t);
    // Through the contract only: a server module reaching the CLI through src/main would be reported too.
    expect(server.flatMap((f) => violations(graph, f, clientNotContract))).toEqual([]);
  });
});

/**
 * The component a module of src/processors or src/exporters belongs to: the top-level file or
 * directory it is in (`src/exporters/notify`, `src/processors/scoring.ts`); null for the shared
 * pieces several use (src/exporters/shared/) and for modules elsewhere.
 */
function componentOf(file: string): string | null {
  const m = /^src\/(processors|exporters)\/([^/]+)(\/|$)/.exec(file);
  if (!m) return null;
  if (m[2] === 'shared') return null;
  return `src/${m[1]}/${m[2]}`;
}

/** Modules a component loads at run time through modules that are not themselves components (a shared piece, a helper). */
function componentEdges(g: ImportGraph, start: string): Map<string, string[]> {
  const own = componentOf(start);
  const via = new Map<string, string[]>([[start, [start]]]);
  const queue = [start];
  while (queue.length > 0) {
    const at = queue.shift()!;
    for (const to of g.edges.get(at) ?? []) {
      if (via.has(to)) continue;
      via.set(to, [...via.get(at)!, to]);
      // Into its own component, or through non-component modules: keep walking; stop at another component.
      const c = componentOf(to);
      if ((c === null || c === own) && g.edges.has(to)) queue.push(to);
    }
  }
  return via;
}

/** Every import from a component's modules that reaches another component, as chains. */
function crossComponent(g: ImportGraph, files: readonly string[]): string[] {
  return files.flatMap((f) =>
    [...componentEdges(g, f)].filter(([target]) => componentOf(target) !== null && componentOf(target) !== componentOf(f)).map(([, chain]) => chain.join(' → ')),
  );
}

describe('processors and exporters', () => {
  const components = [...graph.edges.keys()].filter((f) => under('src/processors')(f) || under('src/exporters')(f));

  it('hold modules, each in one component (shared pieces in none)', () => {
    expect(components.filter(under('src/processors')).length).toBeGreaterThan(5);
    expect(components.filter(under('src/exporters')).length).toBeGreaterThan(5);
    expect(componentOf('src/exporters/notify/store.ts')).toBe('src/exporters/notify');
    expect(componentOf('src/processors/scoring.ts')).toBe('src/processors/scoring.ts');
    expect(componentOf('src/exporters/shared/retry.ts')).toBeNull();
  });

  it('never load store/client.ts or a database client, directly or not: repositories come from Host.extensions.repositories', () => {
    const storeClient = (t: string) => t === 'src/store/client.ts' || databaseClient(t);
    expect(components.flatMap((f) => violations(graph, f, storeClient))).toEqual([]);
  });

  it('import no other component: no processor loads another processor or an exporter, no exporter another exporter or a processor', () => {
    expect(crossComponent(graph, components)).toEqual([]);
    // …nor a receiver or connector.
    const otherKinds = (t: string) => under('src/receivers')(t) || under('src/connectors')(t);
    expect(components.flatMap((f) => violations(graph, f, otherKinds))).toEqual([]);
  });

  it('the checks find what they look for', () => {
    // A processor that imported another component, or store/client.ts, would be reported.
    const probe: ImportGraph = {
      edges: new Map([
        ...graph.edges,
        ['src/processors/probe.ts', ['src/processors/scoring.ts', 'src/exporters/shared/retry.ts', 'src/store/client.ts']],
        ['src/exporters/probe.ts', ['src/exporters/shared/retry.ts', 'src/exporters/notify/index.ts']],
      ]),
    };
    expect(crossComponent(probe, ['src/processors/probe.ts', 'src/exporters/probe.ts'])).toEqual([
      'src/processors/probe.ts → src/processors/scoring.ts',
      'src/exporters/probe.ts → src/exporters/notify/index.ts',
    ]);
    expect(violations(probe, 'src/processors/probe.ts', (t) => t === 'src/store/client.ts')).toEqual(['src/processors/probe.ts → src/store/client.ts']);
  });
});

/** Packages of the server (the engine, storage, queue, HTTP, logging, cloud SDKs, the dashboard, build tools). */
const SERVER_PACKAGES = /^(chdb|@clickhouse\/.*|fastify|@fastify\/.*|lmdb|msgpackr|nats|pino|@aws-sdk\/.*|@smithy\/.*|@grpc\/.*|@trpc\/.*|@anthropic-ai\/.*|nodemailer|preact|uplot|@picocss\/.*|vite|esbuild|tsx|typescript|@opentelemetry\/exporter-.*)$/;

describe('the client (client/src: the CLI, the reporters, the contract)', () => {
  const client = [...graph.edges.keys()].filter(under('client/src'));

  it('holds the CLI, the reporters and the contract', () => {
    expect(client.filter(under('client/src/cli')).length).toBeGreaterThan(10);
    expect(client.filter(under('client/src/reporter')).length).toBeGreaterThan(10);
    expect(SERVER_PACKAGES.test('@clickhouse/client')).toBe(true);
    expect(SERVER_PACKAGES.test('zod')).toBe(false);
  });

  it('loads nothing outside client/src, directly or not: no module of the server', () => {
    const outside = (t: string) => (t.startsWith('src/') || t.startsWith('client/')) && !under('client/src')(t);
    expect(client.flatMap((f) => violations(graph, f, outside))).toEqual([]);
  });

  it('loads no server package', () => {
    expect(client.flatMap((f) => violations(graph, f, (t) => SERVER_PACKAGES.test(t)))).toEqual([]);
  });

  it('names nothing outside client/src even for its types: it type-checks from its own source', () => {
    const ANY_IMPORT = /^[ \t]*(?:import|export)\b[^'";]*?\bfrom\s*(['"])(\.[^'"\n]+)\1|\bimport\(\s*(['"])(\.[^'"\n]+)\3\s*\)/gm;
    const out = client.flatMap((f) =>
      [...withoutComments(readFileSync(path.join(ROOT, f), 'utf8')).matchAll(ANY_IMPORT)]
        .map((m) => m[2] ?? m[4]!)
        .filter((spec) => !path.posix.normalize(path.posix.join(path.posix.dirname(f), spec)).startsWith('client/src/'))
        .map((spec) => `${f}: ${spec}`),
    );
    expect(out).toEqual([]);
  });

  it("the server's CLI (src/main/cli.ts) is the client's with the server's commands: it loads the client's main, and the daemon only on demand", () => {
    expect(violations(graph, 'src/main/cli.ts', (t) => t === 'client/src/cli/main.ts').length).toBe(1);
    expect(graph.edges.get('src/main/cli.ts')).toContain('src/main/daemon.ts'); // dynamic import(), when `serve` runs
  });
});

// The PR commands run on CI machines and talk HTTP to the daemon: what they load at run time must
// not pull in the server (fastify, the routes) or the store (chDB, the ClickHouse client, LMDB).
// Walks the runtime import graph of the sources; `import type` is erased, so it is not followed.
import { readFileSync } from 'node:fs';
import path from 'node:path';
// Vite's parser (oxc, through rolldown): TypeScript in, ESTree out, with the module's imports listed.
import { parseSync } from 'vite';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../client/src');
const SERVER_PACKAGES = ['fastify', '@clickhouse/client', 'chdb', 'lmdb'];

/** Every source file and bare package `entry` loads at run time, transitively. */
function runtimeImports(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    const { program, module, errors } = parseSync(file, text);
    if (errors.length > 0) throw new Error(`${file}: ${errors.map((e) => e.message).join('; ')}`);
    const specifiers: string[] = [];
    // `import type` and `export type` are erased; `import { type A }` is not (verbatimModuleSyntax
    // keeps the import, so the module still loads).
    for (const node of program.body) {
      if (node.type === 'ImportDeclaration' && node.importKind !== 'type') specifiers.push(node.source.value);
      if ((node.type === 'ExportNamedDeclaration' || node.type === 'ExportAllDeclaration') && node.exportKind !== 'type' && node.source) specifiers.push(node.source.value);
    }
    // Dynamic import() anywhere in the file loads at run time too (a literal specifier only).
    for (const d of module.dynamicImports) {
      const literal = /^(['"])(.*)\1$/.exec(text.slice(d.moduleRequest.start, d.moduleRequest.end));
      if (literal) specifiers.push(literal[2]!);
    }
    for (const s of specifiers) {
      if (s.startsWith('.')) visit(path.resolve(path.dirname(file), s.replace(/\.js$/, '.ts')));
      else packages.add(s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!);
    }
  };
  visit(entry);
  return { files, packages };
}

describe('the PR commands (client/src/cli/pr.ts) load no server code', () => {
  const { files, packages } = runtimeImports(path.join(SRC, 'cli/pr.ts'));
  const relative = [...files].map((f) => path.relative(SRC, f));

  it('follows the graph into the shared modules (the walk itself works)', () => {
    expect(relative).toEqual(expect.arrayContaining(['contract/pr-schemas.ts', 'contract/pr-markdown.ts', 'contract/gate.ts']));
    expect(packages).toContain('zod');
  });

  it('reaches no route, store or server package', () => {
    expect(relative.filter((f) => f.startsWith('..'))).toEqual([]); // nothing outside client/src: no route, no store
    expect([...packages].filter((p) => SERVER_PACKAGES.includes(p))).toEqual([]);
  });
});

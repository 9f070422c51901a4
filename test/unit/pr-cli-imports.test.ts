// The PR commands run on CI machines and talk HTTP to the daemon: what they load at run time must
// not pull in the server (fastify, the routes) or the store (chDB, the ClickHouse client, LMDB).
// Walks the runtime import graph of the sources; `import type` is erased, so it is not followed.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');
const SERVER_PACKAGES = ['fastify', '@clickhouse/client', 'chdb', 'lmdb'];

/** Every source file and bare package `entry` loads at run time, transitively. */
function runtimeImports(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022);
    const specifiers: string[] = [];
    for (const node of source.statements) {
      if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) specifiers.push(node.moduleSpecifier.text);
      if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) specifiers.push(node.moduleSpecifier.text);
    }
    // Dynamic import() anywhere in the file loads at run time too.
    const dynamic = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0])) specifiers.push(n.arguments[0].text);
      n.forEachChild(dynamic);
    };
    source.forEachChild(dynamic);
    for (const s of specifiers) {
      if (s.startsWith('.')) visit(path.resolve(path.dirname(file), s.replace(/\.js$/, '.ts')));
      else packages.add(s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!);
    }
  };
  visit(entry);
  return { files, packages };
}

describe('the PR commands (src/cli/pr.ts) load no server code', () => {
  const { files, packages } = runtimeImports(path.join(SRC, 'cli/pr.ts'));
  const relative = [...files].map((f) => path.relative(SRC, f));

  it('follows the graph into the shared modules (the walk itself works)', () => {
    expect(relative).toEqual(expect.arrayContaining(['domain/pr-schemas.ts', 'domain/pr-markdown.ts', 'domain/gate.ts']));
    expect(packages).toContain('zod');
  });

  it('reaches no route, store or server package', () => {
    expect(relative.filter((f) => f.startsWith('api/') || f.startsWith('store/'))).toEqual([]);
    expect([...packages].filter((p) => SERVER_PACKAGES.includes(p))).toEqual([]);
  });
});

// Lint is part of `npm test`: type-aware rules catch floating promises and `any` leaks.
import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

// Pure logic in src/domain stays pure: nothing that touches disk, network, processes, threads or
// the database, and no layer above it (those all do I/O).
const IO_MODULES = [
  'fs', 'node:fs', 'fs/*', 'node:fs/*', 'net', 'node:net', 'http', 'node:http', 'https', 'node:https',
  'http2', 'node:http2', 'child_process', 'node:child_process', 'worker_threads', 'node:worker_threads',
  'lmdb', 'chdb', '@clickhouse/client', 'fastify', 'pino',
];
// config reads files and the environment; the pure layering rules it uses live in src/domain.
const IO_LAYERS = ['config', 'store', 'api', 'queue', 'pipeline', 'receivers', 'exporters', 'processors', 'cli', 'reporter'];

// scripts/check.mjs (npm test) type-checks first and hands over its programs, by tsconfig:
// linting on them builds no second program. Each file is linted with its own tsconfig's program,
// as the project service would pick it (web/ has its own; the root one imports some web files).
const sharedPrograms = globalThis[Symbol.for('flakehouse.tsPrograms')];
const typedParserOptions = (tsconfig) => (sharedPrograms ? { programs: sharedPrograms[tsconfig] } : { projectService: true, tsconfigRootDir: import.meta.dirname });

export default tseslint.config(
  // The Jest sample project is plain CommonJS with Jest's globals; its runner checks it by running it.
  { ignores: ['.tmp/**', 'node_modules/**', 'data/**', 'bench/results/**', 'coverage/**', 'dist/**', 'bin/**', 'test/fixtures/runners/**/*.cjs', 'web/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: typedParserOptions('tsconfig.json') },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // Import cycles make load order matter (a value read before its module ran is undefined).
    // Type-only imports are not followed: they vanish at run time.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      // Our specifiers name the emitted `.js`; the source beside it is `.ts`.
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'], extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    files: ['src/domain/**'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          ...IO_MODULES.filter((m) => !m.includes('*') && !m.endsWith('net')).map((name) => ({ name, message: 'src/domain is pure logic: do the I/O in the caller and pass the result in.' })),
          // isIP and friends only parse a string.
          ...['net', 'node:net'].map((name) => ({ name, allowImportNames: ['isIP', 'isIPv4', 'isIPv6'], message: 'src/domain is pure logic: only the address parsers of node:net are allowed.' })),
        ],
        patterns: [
          { group: IO_MODULES.filter((m) => m.includes('*')), message: 'src/domain is pure logic: do the I/O in the caller and pass the result in.' },
          { group: ['pino/*', 'lmdb/*', 'chdb/*', '@clickhouse/client/*', 'fastify/*'], message: 'src/domain is pure logic: do the I/O in the caller and pass the result in.' },
          { group: IO_LAYERS.map((dir) => `**/${dir}/**`), message: 'src/domain sits below every I/O layer: move the shared piece into src/domain instead.' },
        ],
      }],
    },
  },
  {
    // The pipeline runs on a thread that serves no HTTP. What receivers need of the API (a route
    // table, the ingest service) reaches them through the Host's own interfaces (component.ts).
    files: ['src/pipeline/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['**/api/**'], message: 'src/pipeline does not import the API layer: declare what it needs in pipeline/component.ts and let the daemon pass it in.' }],
      }],
    },
  },
  { files: ['web/**'], languageOptions: { parserOptions: typedParserOptions('web/tsconfig.json') } },
  {
    files: ['eslint.config.js', 'scripts/**/*.mjs', 'reporters/**/*.mjs', 'src/**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    // In no tsconfig: parsed without a program (disableTypeChecked leaves `programs` set).
    languageOptions: { parserOptions: { ...tseslint.configs.disableTypeChecked.languageOptions.parserOptions, programs: null } },
  },
  { files: ['scripts/**/*.mjs'], languageOptions: { globals: { console: 'readonly', URL: 'readonly', process: 'readonly', performance: 'readonly' } } },
);

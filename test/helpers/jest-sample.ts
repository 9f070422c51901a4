// A Jest project in a scratch folder: the repository's cart fixture with our reporter, for the
// `flakehouse run` tests (the reporter hands its run to the wrapper). Returns the folder and the
// command that runs Jest there.
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './process.js';

export function jestSample(root: string): { dir: string; command: string[] } {
  const dir = path.join(root, 'jest-sample');
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(REPO_ROOT, 'test/fixtures/runners/jest/cart.spec.cjs'), path.join(dir, 'cart.spec.cjs'));
  fs.writeFileSync(
    path.join(dir, 'jest.config.cjs'),
    `module.exports = { rootDir: __dirname, testMatch: ['<rootDir>/*.spec.cjs'], transform: {}, watchman: false,
        reporters: ['default', ${JSON.stringify(path.join(REPO_ROOT, 'reporters/jest.mjs'))}], cacheDirectory: ${JSON.stringify(path.join(root, 'jest-cache'))} };\n`,
  );
  return { dir, command: [process.execPath, path.join(REPO_ROOT, 'node_modules/jest/bin/jest.js'), '--config', 'jest.config.cjs', '--ci'] };
}

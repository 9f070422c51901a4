// Entry of the pipeline thread of a daemon run from the sources (tsx, or the tests). Plain
// JavaScript: a worker thread does not inherit the tsx hooks of the main thread. As bin/flakehouse.js
// does for the CLI, it runs the ahead-of-time build's worker while that build is newer than every
// file in src/ (the same code, compiled: a thread starts on about 1 CPU-second instead of 3.5–4.4
// spent transpiling some 300 modules), and otherwise the TypeScript sources through tsx's scoped import.
// FLAKEHOUSE_CLI_FROM_SOURCES=1 keeps to the sources, as in an image without a build.
import path from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import { freshBuild } from '../../../bin/built-cli.js';

const built = process.env.FLAKEHOUSE_CLI_FROM_SOURCES === '1' ? undefined : freshBuild();
if (built) {
  await import(pathToFileURL(path.join(built, 'pipeline-worker.js')).href);
} else {
  const { tsImport } = await import('tsx/esm/api');
  await tsImport('./worker.ts', import.meta.url);
}

// Benchmarks write one machine-readable result per benchmark: bench/results/<name>-latest.json.
// (The history of results is the git history of that file.)
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const RESULTS_DIR = path.resolve(import.meta.dirname, 'results');

export function writeResult(name: string, result: unknown): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}-latest.json`);
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  return path.relative(process.cwd(), file);
}

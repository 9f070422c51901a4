// The pipeline file, loaded with every built-in component: for `flakehouse serve` (which reads the
// graph to choose between the daemon and the agent), `validate`, and both composition roots
// (src/main/daemon.ts, src/main/agent.ts). Loading reads and validates YAML and starts nothing; it opens no
// database, so deciding whether one is needed stays cheap.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtinRegistry } from '../builtin/components.js';
import { loadPipelineFile, type PipelineGraph } from '../pipeline/graph.js';

export const DEFAULT_PIPELINE = fileURLToPath(new URL('../../pipelines/default.yaml', import.meta.url));

/** `cwd` is where errors name the file from: the CLI's working directory. */
/** `env`: where the file's `${env:NAME}` references are looked up (the CLI passes the one it was given). */
export function loadGraph(file?: string, cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): PipelineGraph {
  const p = file ?? DEFAULT_PIPELINE;
  return loadPipelineFile(p, builtinRegistry(), displayName(file, cwd), env);
}

/** How errors and logs name the file: relative to `cwd`, or the default's name. */
export function displayName(file: string | undefined, cwd = process.cwd()): string {
  return file ? path.relative(cwd, file) || file : 'pipelines/default.yaml';
}

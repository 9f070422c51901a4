// The glibc malloc setting `serve` runs with (issue 40; docs/operations.md "Memory"). glibc raises
// its mmap threshold each time a mapped block is freed, up to 32 MiB, after which the multi-MB
// buffers Node's side of the daemon allocates and frees under ingest are carved from malloc's
// arenas and stay there (which buffers was not traced: bodies of requests and of inserts, and the
// engine binding's copies of them, are the multi-MB ones). A fixed threshold turns that
// off: blocks of 1 MiB or more are mapped and unmapped each time. glibc reads it only when a
// process starts, so it is set in the environment (npm start, the image) or `serve` re-executes
// itself with it. The embedded engine does not use glibc's malloc (it has its own jemalloc).

export const MALLOC_TUNABLE = 'glibc.malloc.mmap_threshold=1048576';

/**
 * The environment with MALLOC_TUNABLE in GLIBC_TUNABLES, or undefined when it already sets the
 * threshold (an operator's value wins, and a process re-executed with it never re-executes again).
 */
export function withMallocTunable(env) {
  const current = env.GLIBC_TUNABLES ?? '';
  if (current.split(':').some((t) => t.startsWith('glibc.malloc.mmap_threshold='))) return undefined;
  return { ...env, GLIBC_TUNABLES: current ? `${MALLOC_TUNABLE}:${current}` : MALLOC_TUNABLE };
}

/**
 * Re-executes this process with MALLOC_TUNABLE when it runs `serve` on Linux without it, keeping
 * its pid, Node flags and arguments. Node has `process.execve` from 22.15 and 23.11; on an older
 * Node it returns and the process runs without the setting.
 */
export function reexecWithMallocTunable(argv = process.argv) {
  if (argv[2] !== 'serve' || process.platform !== 'linux' || typeof process.execve !== 'function') return;
  const env = withMallocTunable(process.env);
  if (!env) return;
  try {
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...argv.slice(1)], env);
  } catch (err) {
    // It returns only when the exec failed: the daemon runs on, without the setting.
    process.emitWarning(`serve runs without ${MALLOC_TUNABLE}: re-executing with it failed (${err instanceof Error ? err.message : String(err)})`);
  }
}

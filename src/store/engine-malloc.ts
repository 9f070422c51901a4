// The embedded engine's allocator setting (issue 40; docs/operations.md "Memory"). chDB allocates
// with its own jemalloc, built to keep freed pages for 5 s (`dirty_decay_ms:5000`) before giving
// them back. Under a big report's inserts those pages were 150-250 MB of the peak; kept for 1 s,
// the 100,000-case report peaked 85 MB lower on average (four alternating pairs: 1,084 against
// 1,169 MB), with no change in CPU per execution at saturation (docs/operations.md "Memory").
//
// jemalloc reads JE_MALLOC_CONF when the engine's library is loaded, so it is set in this process's
// environment before the first store opens. An operator's own JE_MALLOC_CONF is left as it is.

export const ENGINE_MALLOC_CONF = 'dirty_decay_ms:1000';

/** Sets JE_MALLOC_CONF for the engine unless already set; what the engine will read. */
export function setEngineMallocConf(env: NodeJS.ProcessEnv = process.env): string {
  if (env.JE_MALLOC_CONF === undefined || env.JE_MALLOC_CONF === '') env.JE_MALLOC_CONF = ENGINE_MALLOC_CONF;
  return env.JE_MALLOC_CONF;
}

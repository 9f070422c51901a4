// The embedded engine's jemalloc setting (src/store/engine-malloc.ts): set before the engine loads,
// an operator's own left alone.
import { describe, expect, it } from 'vitest';
import { ENGINE_MALLOC_CONF, setEngineMallocConf } from '../../src/store/engine-malloc.js';

describe('setEngineMallocConf', () => {
  it('sets the engine’s decay when JE_MALLOC_CONF is unset or empty', () => {
    const env: NodeJS.ProcessEnv = { PATH: '/bin' };
    expect(setEngineMallocConf(env)).toBe(ENGINE_MALLOC_CONF);
    expect(env).toEqual({ PATH: '/bin', JE_MALLOC_CONF: ENGINE_MALLOC_CONF });
    const empty: NodeJS.ProcessEnv = { JE_MALLOC_CONF: '' };
    expect(setEngineMallocConf(empty)).toBe(ENGINE_MALLOC_CONF);
  });

  it('leaves an operator’s JE_MALLOC_CONF as it is', () => {
    const env: NodeJS.ProcessEnv = { JE_MALLOC_CONF: 'dirty_decay_ms:0,narenas:2' };
    expect(setEngineMallocConf(env)).toBe('dirty_decay_ms:0,narenas:2');
    expect(env.JE_MALLOC_CONF).toBe('dirty_decay_ms:0,narenas:2');
  });
});

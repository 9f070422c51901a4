// An embedded store sets the engine's jemalloc setting before the engine loads (src/store/engine-malloc.ts).
import { expect, it } from 'vitest';
import { ENGINE_MALLOC_CONF } from '../../src/store/engine-malloc.js';
import { dropTestStore, openTestStore } from '../helpers/daemon.js';

it('puts the engine’s JE_MALLOC_CONF in the environment when an embedded store opens, unless the operator set one', async () => {
  const operators = process.env.JE_MALLOC_CONF;
  const store = await openTestStore();
  try {
    expect(process.env.JE_MALLOC_CONF).toBe(operators || ENGINE_MALLOC_CONF);
  } finally {
    await dropTestStore(store);
  }
});

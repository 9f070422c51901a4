// The suite's own configuration plus bench/suite/probe.ts, for bench/suite.ts.
import { fileURLToPath } from 'node:url';
import { mergeConfig } from 'vitest/config';
import base from '../../vitest.config.js';

export default mergeConfig(base, {
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: { setupFiles: [fileURLToPath(new URL('./probe.ts', import.meta.url))] },
});

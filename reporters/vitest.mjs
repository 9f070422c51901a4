// `flakehouse/vitest` (Vitest: `reporters: ['default', 'flakehouse/vitest']`).
// The reporter is TypeScript and runners load a package's files with plain Node, so this entry
// compiles it on the fly through tsx (a dependency of flakehouse).
import { tsImport } from 'tsx/esm/api';

const mod = await tsImport('../client/src/reporter/vitest.ts', import.meta.url);

export default mod.default;

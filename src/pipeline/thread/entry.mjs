// Entry of the pipeline thread. Plain JavaScript: a worker thread does not inherit the tsx hooks
// of the main thread, so the TypeScript sources are loaded through tsx's scoped import.
import { tsImport } from 'tsx/esm/api';

await tsImport('./worker.ts', import.meta.url);

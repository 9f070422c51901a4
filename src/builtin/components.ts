// Every component (and extension) type this build ships, for the pipeline file to wire: the
// receivers (src/builtin/receivers.ts) and the processors, exporters, connectors and extensions
// (src/builtin/processing.ts; the pipeline thread builds its registry from that part alone). A
// composition root, like daemon.ts: src/pipeline (the core) imports no receiver, processor,
// exporter or connector (.oxlintrc.json); these lists, outside it, are where they meet the registry.
import { builtinExtensions, builtinProcessing } from './processing.js';
import { builtinReceivers } from './receivers.js';
import { Registry } from '../pipeline/registry.js';

export function builtinRegistry(): Registry {
  const r = new Registry();
  for (const f of [...builtinReceivers, ...builtinProcessing]) r.register(f);
  for (const e of builtinExtensions) r.registerExtension(e);
  return r;
}

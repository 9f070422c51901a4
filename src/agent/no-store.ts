// What the agent hands components in place of repositories and of per-project settings, and its
// runtime in place of a store. Only components
// that declare `needsStore: false` run in an agent (./mode.ts), so neither is expected to be used;
// if one is, the failure names the component's wrong declaration instead of a null dereference.
import type { ResolvedServiceConfig } from '../../client/src/contract/config/project-settings.js';
import { resolveProjectConfig } from '../../client/src/contract/config/project-settings.js';
import type { LoadedServiceConfig } from '../config/service-yml.js';
import type { Store } from '../store/client.js';
import type { HostExtensions } from '../pipeline/component.js';
import { NO_EXTENSIONS } from '../pipeline/extensions.js';

export class NoStoreError extends Error {
  constructor(what: string) {
    super(`${what}: this process runs as an agent, without a store (a component that uses it must not declare needsStore: false)`);
    this.name = 'NoStoreError';
  }
}

/** A Store whose every call throws NoStoreError (at once: no rejected promise is left unawaited). */
export function noStore(): Store {
  return new Proxy({} as Store, {
    get(_target, prop) {
      if (prop === 'database') return '';
      if (prop === 'embedded') return false;
      // Not a thenable, not a primitive: only named methods are calls that fail.
      if (typeof prop !== 'string' || prop === 'then' || prop === 'toJSON') return undefined;
      return (): never => {
        throw new NoStoreError(`store.${prop}()`);
      };
    },
  });
}

/**
 * The Host's extensions in a process without a store (an agent, an ingest process): no extension
 * runs, and asking for repositories fails with NoStoreError, naming the component.
 */
export function storelessExtensions(): HostExtensions {
  return {
    ids: NO_EXTENSIONS.ids,
    storage: (kind, id, name) => NO_EXTENSIONS.storage(kind, id, name),
    repositories(kind, id) {
      throw new NoStoreError(`${kind} ${id}: host.extensions.repositories()`);
    },
  };
}

/**
 * Per-project policy without projects: service.yml + environment for every project id (there are
 * no stored settings to layer in between). The shape buildHost takes (src/pipeline/host.ts).
 */
export function storelessProjectConfigs(base: LoadedServiceConfig): { base: LoadedServiceConfig; get(projectId: string): Promise<ResolvedServiceConfig> } {
  const resolved = Promise.resolve(resolveProjectConfig(base, null));
  return { base, get: () => resolved };
}

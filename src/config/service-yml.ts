// service.yml on the server: the file's format, layers and environment overrides are the client's
// contract (client/src/contract/config/service-yml.ts, re-exported here for the server's modules);
// this module adds the loader that reads the file from disk.
import fs from 'node:fs';
import {
  findConfigFile,
  readServiceConfig,
  type ConfigFiles,
  type LoadedServiceConfig,
  type LoadServiceConfigOptions,
} from '../../client/src/contract/config/service-yml.js';

export * from '../../client/src/contract/config/service-yml.js';

/** The disk, through node:fs. */
export const nodeConfigFiles: ConfigFiles = {
  kind(file) {
    const stat = fs.statSync(file, { throwIfNoEntry: false });
    return stat ? (stat.isFile() ? 'file' : 'other') : undefined;
  },
  read: (file) => fs.readFileSync(file, 'utf8'),
};

/**
 * SERVICE_CONFIG (relative to cwd) when set — it must exist, since a typo there would otherwise
 * fall back to defaults silently — else `<cwd>/service.yml` or `service.yaml`, else null.
 */
export function resolveConfigPath(env: NodeJS.ProcessEnv, cwd: string): string | null {
  return findConfigFile(env, cwd, nodeConfigFiles);
}

/**
 * Resolves the effective service config. Collects every problem across the file, settings and
 * environment and throws them together (ConfigError, or AggregateConfigError for several).
 */
export function loadServiceConfig(opts: LoadServiceConfigOptions): LoadedServiceConfig {
  return readServiceConfig(opts, nodeConfigFiles);
}

// service.yml in the client: the format is the contract's (client/src/contract/config/service-yml.ts,
// the same the server reads), and this is the loader that reads the file from disk for the
// reporters and the CLI.
import fs from 'node:fs';
import { readServiceConfig, type ConfigFiles, type LoadedServiceConfig, type LoadServiceConfigOptions } from '../contract/config/service-yml.js';

const nodeConfigFiles: ConfigFiles = {
  kind(file) {
    const stat = fs.statSync(file, { throwIfNoEntry: false });
    return stat ? (stat.isFile() ? 'file' : 'other') : undefined;
  },
  read: (file) => fs.readFileSync(file, 'utf8'),
};

/**
 * The effective service config: SERVICE_CONFIG or ./service.yml, the project settings layer when
 * given, and the environment. Every problem is thrown together (ConfigError, AggregateConfigError).
 */
export function loadServiceConfig(opts: LoadServiceConfigOptions): LoadedServiceConfig {
  return readServiceConfig(opts, nodeConfigFiles);
}

// Where the CLI finds the server it administers, and what it signs in with: variables of the
// daemon's own settings (src/config/daemon-env.ts declares these four from here), which the client's
// admin commands, `sql --admin`, `export` and `config --project` read the same way, without the
// rest of the server's settings.
import path from 'node:path';
import { z } from 'zod';
import { throwConfigErrors, type ConfigError } from './errors.js';
import { envReader, intField, stringField, type Field } from './service-yml.js';

/** One variable: its name, what it does (the README's table), how it is read, and its default. */
export interface ServerVar<T> {
  name: string;
  description: string;
  field: Field<T>;
  default?: T;
}

// Interpolated into DDL/queries as an identifier, so restrict it to a plain identifier.
const databaseField: Field<string> = {
  kind: 'string',
  desc: 'a database name ([A-Za-z_][A-Za-z0-9_]*)',
  schema: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
};

export const SERVER_ADDRESS_VARS = {
  port: { name: 'SERVICE_PORT', description: 'HTTP listen port; 0 picks a free port (tests)', field: intField(0, 65535), default: 8080 },
  dataDir: {
    name: 'SERVICE_DATA_DIR',
    description: 'directory for the durable queue and embedded database; relative to the working directory',
    field: stringField('a directory path'),
    default: './data',
  },
  adminToken: { name: 'SERVICE_ADMIN_TOKEN', description: 'bearer token for the admin API (projects, tokens); unset disables it', field: stringField() },
  clickhouseDatabase: { name: 'SERVICE_CLICKHOUSE_DATABASE', description: 'ClickHouse database', field: databaseField, default: 'flakehouse' },
} satisfies Record<string, ServerVar<unknown>>;

export interface ServerAddress {
  /** The port the server listens on (SERVICE_PORT), for a server on this machine. */
  port: number;
  /** Absolute: where the server keeps its data, and the admin token it generated (`admin-token`). */
  dataDir: string;
  adminToken?: string;
  /** The database of SQL queries (SERVICE_CLICKHOUSE_DATABASE). */
  database: string;
}

/** Reads the four variables; bad values are reported together, each named, as the daemon does. */
export function readServerAddress(env: NodeJS.ProcessEnv, cwd: string): ServerAddress {
  const errors: ConfigError[] = [];
  const readVar = envReader(env, errors);
  const read = <T>(spec: ServerVar<T>): T | undefined => readVar(spec.name, spec.field) ?? spec.default;
  const v = SERVER_ADDRESS_VARS;
  const address: ServerAddress = {
    port: read(v.port) ?? v.port.default,
    dataDir: path.resolve(cwd, read(v.dataDir) ?? v.dataDir.default),
    database: read(v.clickhouseDatabase) ?? v.clickhouseDatabase.default,
  };
  const adminToken = read(v.adminToken);
  if (adminToken !== undefined) address.adminToken = adminToken;
  throwConfigErrors(errors);
  return address;
}

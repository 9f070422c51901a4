// service.yml + project settings + environment, layered per docs/architecture.md "Configuration":
// file < project settings (dashboard) < environment; nested objects merge deep, arrays replace.
// Every object is strict so a typo (`flaky.treshold`) is an error naming the path instead of a
// silently ignored setting.
//
// The file's format is the client's contract: the reporter reads `endpoint`, `project`, `ignore`
// and the channels from the same file the server reads the rest from. The contract does no I/O:
// each side reads the disk through the ConfigFiles it passes (src/config/service-yml.ts on the
// server, client/src/reporter/service-config.ts in the client).
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { AggregateConfigError, ConfigError, describeValue, expected, formatZodIssues, throwConfigErrors } from './errors.js';
import { NOTIFICATION_CHANNEL_KINDS, NOTIFICATION_EVENT_TYPES } from '../notification-kinds.js';
import { dropNulls, isPlainObject as isPlain, resolveLayers, setPath, type ConfigSource, type PlainObject as Plain } from '../config-layers.js';

// ---------------------------------------------------------------------------------------------
// Fields: one description drives the zod schema, the env coercion and the error wording, so a
// bad value reads the same whether it came from the file or from a variable.

export type FieldKind = 'string' | 'number' | 'boolean';

export interface Field<T> {
  kind: FieldKind;
  /** What a valid value looks like, e.g. 'a number between 0 and 1'. */
  desc: string;
  schema: z.ZodType<T>;
  /** Strings taken exactly as given (secrets, where whitespace may be significant). */
  verbatim?: boolean;
}

export function numberField(min: number, max?: number): Field<number> {
  const desc = max === undefined ? `a number ≥ ${min}` : `a number between ${min} and ${max}`;
  let schema = z.number({ error: expected(desc) }).min(min);
  if (max !== undefined) schema = schema.max(max);
  return { kind: 'number', desc, schema };
}

export function intField(min: number, max?: number): Field<number> {
  const desc = max === undefined ? `an integer ≥ ${min}` : `an integer ${min}..${max}`;
  let schema = z.number({ error: expected(desc) }).int().min(min);
  if (max !== undefined) schema = schema.max(max);
  return { kind: 'number', desc, schema };
}

export function booleanField(): Field<boolean> {
  const desc = 'a boolean (true/false, 1/0, yes/no)';
  return { kind: 'boolean', desc, schema: z.boolean({ error: expected('a boolean') }) };
}

export function stringField(desc = 'a non-empty string'): Field<string> {
  return { kind: 'string', desc, schema: z.string({ error: expected(desc) }).min(1) };
}

/** http(s) only: these are endpoints we POST to or print as links. */
export function urlField(desc = 'an http(s) URL'): Field<string> {
  return { kind: 'string', desc, schema: z.string({ error: expected(desc) }).refine(isHttpUrl, { error: expected(desc) }) };
}

function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const { protocol, hostname } = new URL(value);
  return (protocol === 'http:' || protocol === 'https:') && hostname !== '';
}

const BOOLEAN_WORDS: Record<string, boolean> = { true: true, false: false, '1': true, '0': false, yes: true, no: false };
const NUMBER_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** An env value, or undefined when unset. Empty (or blank) counts as unset, per docs/architecture.md "Configuration". */
export function readEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  return raw;
}

/**
 * A reader of optional variables that collects every problem in `errors` instead of stopping at
 * the first, so a config error lists them all at once.
 */
export function envReader(env: NodeJS.ProcessEnv, errors: ConfigError[]): <T>(name: string, field: Field<T>) => T | undefined {
  return <T>(name: string, field: Field<T>): T | undefined => {
    const raw = readEnv(env, name);
    if (raw === undefined) return undefined;
    try {
      return parseEnvValue(name, raw, field);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors.push(err);
      return undefined;
    }
  };
}

/**
 * Coerces and validates one env string against a field. Errors name the variable and quote the
 * raw string: `env: SERVICE_FLAKY_THRESHOLD: expected a number between 0 and 1, got "abc"`.
 */
export function parseEnvValue<T>(name: string, raw: string, field: Field<T>): T {
  const fail = (): ConfigError => new ConfigError('env', name, `expected ${field.desc}, got ${describeValue(raw)}`);
  const text = field.verbatim ? raw : raw.trim();
  let value: unknown = text;
  if (field.kind === 'boolean') {
    value = BOOLEAN_WORDS[text.toLowerCase()];
    if (value === undefined) throw fail();
  } else if (field.kind === 'number') {
    // Number() alone would take '0x10', '' and 'Infinity'; only plain decimals are meant.
    if (!NUMBER_RE.test(text)) throw fail();
    value = Number(text);
  }
  const parsed = field.schema.safeParse(value);
  if (!parsed.success) throw fail();
  return parsed.data;
}

// ---------------------------------------------------------------------------------------------
// Schema

// Re-exported here, where the config schema and its users look for them.
export { NOTIFICATION_CHANNEL_KINDS, NOTIFICATION_EVENT_TYPES, type NotificationChannelKind, type NotificationEventType } from '../notification-kinds.js';

/** docs/contract.md §9: the routing body that config channels are synced through takes at most 50. */
export const MAX_CONFIG_CHANNELS = 50;

export const FIELDS = {
  project: stringField('a non-empty project slug'),
  endpoint: urlField(),
  flakyThreshold: numberField(0, 1),
  flakyMinSamples: intField(1),
  quarantineEnabled: booleanField(),
  quarantineCooldownRuns: intField(1),
  aiRca: booleanField(),
  aiDailyTokenBudget: intField(0),
  retentionRawDays: intField(1),
  retentionArtifactDays: intField(1),
  artifactsEnabled: booleanField(),
  costCiMinute: numberField(0),
  costDeveloperHour: numberField(0),
  costInvestigationMinutes: numberField(0),
  costCurrency: { kind: 'string', desc: 'an ISO 4217 currency code such as USD', schema: z.string().regex(/^[A-Z]{3}$/, { error: expected('an ISO 4217 currency code such as USD') }) } as Field<string>,
  trackerEnabled: booleanField(),
  trackerAfterDays: intField(1),
  trackerRecoveryDays: intField(1),
};

const EMAIL_RE = /^[^\s@]+@[^\s@]+$/;

export const channelSchema = z
  .strictObject(
    {
      kind: z.enum(NOTIFICATION_CHANNEL_KINDS, { error: expected(`one of ${NOTIFICATION_CHANNEL_KINDS.join(', ')}`) }),
      target: z.string({ error: expected('a non-empty string') }).min(1),
      events: z
        .array(z.enum(NOTIFICATION_EVENT_TYPES, { error: expected(`one of ${NOTIFICATION_EVENT_TYPES.join(', ')}`) }), {
          error: expected('a list of event types'),
        })
        .optional(),
    },
    { error: expected('a mapping with kind and target') },
  )
  .superRefine(
    (channel, ctx) => {
      // Caught here rather than at first delivery, which may be days later and is best-effort.
      // Runs even when sibling keys failed (see `when`), so read the fields defensively.
      const kind: unknown = channel.kind;
      const target: unknown = channel.target;
      if (typeof target !== 'string' || target === '') return;
      if (kind === 'email') {
        if (!EMAIL_RE.test(target)) {
          ctx.addIssue({ code: 'custom', path: ['target'], message: `expected an email address, got ${describeValue(target)}` });
        }
      } else if ((NOTIFICATION_CHANNEL_KINDS as readonly unknown[]).includes(kind) && !isHttpUrl(target)) {
        ctx.addIssue({ code: 'custom', path: ['target'], message: `expected an http(s) URL, got ${describeValue(target)}` });
      }
    },
    { when: (payload) => isPlain(payload.value) },
  );

export const serviceConfigSchema = z.strictObject(
  {
    project: FIELDS.project.schema.optional(),
    endpoint: FIELDS.endpoint.schema.optional(),
    // prefault (not default): zod 4's default() returns the value as-is, skipping inner defaults.
    flaky: z
      .strictObject(
        {
          threshold: FIELDS.flakyThreshold.schema.default(0.8),
          minSamples: FIELDS.flakyMinSamples.schema.default(5),
        },
        { error: expected('a mapping') },
      )
      .prefault({}),
    quarantine: z
      .strictObject(
        {
          enabled: FIELDS.quarantineEnabled.schema.default(false),
          cooldownRuns: FIELDS.quarantineCooldownRuns.schema.default(20),
        },
        { error: expected('a mapping') },
      )
      .prefault({}),
    ai: z
      .strictObject(
        {
          rca: FIELDS.aiRca.schema.default(true),
          dailyTokenBudget: FIELDS.aiDailyTokenBudget.schema.default(200_000),
        },
        { error: expected('a mapping') },
      )
      .prefault({}),
    ignore: z
      .array(z.string({ error: expected('a glob pattern string') }).min(1), { error: expected('a list of glob patterns') })
      .default(() => []),
    // No default window: the retention rule of docs/contract.md §10 keeps everything until a window
    // is set (its options table suggests 90 days; config/service.example.yml shows how to set it).
    retention: z
      .strictObject(
        { rawDays: FIELDS.retentionRawDays.schema.optional(), artifactDays: FIELDS.retentionArtifactDays.schema.optional() },
        { error: expected('a mapping') },
      )
      .prefault({}),
    // Artifact uploads per project (presign answers 404 when off, docs/contract.md §8); storage itself is
    // switched on by SERVICE_S3_BUCKET.
    artifacts: z.strictObject({ enabled: FIELDS.artifactsEnabled.schema.default(true) }, { error: expected('a mapping') }).prefault({}),
    notifications: z
      .strictObject(
        {
          channels: z
            .array(channelSchema, { error: expected('a list of channels') })
            .max(MAX_CONFIG_CHANNELS, { error: `at most ${MAX_CONFIG_CHANNELS} channels` })
            .default(() => []),
        },
        { error: expected('a mapping') },
      )
      .prefault({}),
    // Types and defaults from docs/contract.md §10 (the interface left them open).
    cost: z
      .strictObject(
        {
          ciMinute: FIELDS.costCiMinute.schema.default(0.008),
          developerHour: FIELDS.costDeveloperHour.schema.default(75),
          investigationMinutes: FIELDS.costInvestigationMinutes.schema.default(15),
          // Every cost amount is in this currency (the dashboard formats it with Intl.NumberFormat).
          currency: FIELDS.costCurrency.schema.default('USD'),
        },
        { error: expected('a mapping') },
      )
      .prefault({}),
    tracker: z
      .strictObject(
        {
          enabled: FIELDS.trackerEnabled.schema.default(false),
          afterDays: FIELDS.trackerAfterDays.schema.default(3),
          recoveryDays: FIELDS.trackerRecoveryDays.schema.default(7),
        },
        { error: expected('a mapping') },
      )
      .prefault({}),
  },
  { error: expected('a mapping at the top level') },
);

export type ServiceConfig = z.output<typeof serviceConfigSchema>;
export type ServiceConfigSource = ConfigSource;

/**
 * Secrets people paste into config files. Rejected with a pointer to the variable instead of a
 * bare "unknown key", because config files get committed.
 */
const SECRET_KEYS: Record<string, string> = {
  token: 'SERVICE_TOKEN',
  'tracker.token': 'SERVICE_TRACKER_TOKEN',
};

// ---------------------------------------------------------------------------------------------
// Environment overrides (docs/architecture.md "Configuration")

export interface ServiceEnvOverride {
  name: string;
  /** Dotted key in ServiceConfig. */
  path: string;
  description: string;
}

const ENV_OVERRIDES: readonly (ServiceEnvOverride & { field: Field<unknown> })[] = [
  { name: 'SERVICE_PROJECT', path: 'project', field: FIELDS.project },
  { name: 'SERVICE_ENDPOINT', path: 'endpoint', field: FIELDS.endpoint },
  { name: 'SERVICE_FLAKY_THRESHOLD', path: 'flaky.threshold', field: FIELDS.flakyThreshold },
  { name: 'SERVICE_FLAKY_MIN_SAMPLES', path: 'flaky.minSamples', field: FIELDS.flakyMinSamples },
  { name: 'SERVICE_QUARANTINE_ENABLED', path: 'quarantine.enabled', field: FIELDS.quarantineEnabled },
  { name: 'SERVICE_QUARANTINE_COOLDOWN_RUNS', path: 'quarantine.cooldownRuns', field: FIELDS.quarantineCooldownRuns },
  { name: 'SERVICE_AI_RCA', path: 'ai.rca', field: FIELDS.aiRca },
  { name: 'SERVICE_AI_DAILY_TOKEN_BUDGET', path: 'ai.dailyTokenBudget', field: FIELDS.aiDailyTokenBudget },
  { name: 'SERVICE_CI_MINUTE_COST', path: 'cost.ciMinute', field: FIELDS.costCiMinute },
  { name: 'SERVICE_DEVELOPER_HOUR_COST', path: 'cost.developerHour', field: FIELDS.costDeveloperHour },
  { name: 'SERVICE_INVESTIGATION_MINUTES', path: 'cost.investigationMinutes', field: FIELDS.costInvestigationMinutes },
  { name: 'SERVICE_COST_CURRENCY', path: 'cost.currency', field: FIELDS.costCurrency },
  { name: 'SERVICE_TRACKER_ENABLED', path: 'tracker.enabled', field: FIELDS.trackerEnabled },
  { name: 'SERVICE_TRACKER_AFTER_DAYS', path: 'tracker.afterDays', field: FIELDS.trackerAfterDays },
  { name: 'SERVICE_TRACKER_RECOVERY_DAYS', path: 'tracker.recoveryDays', field: FIELDS.trackerRecoveryDays },
  // Global retention defaults: a project's own window (settings) beats them (domain/config-layers.ts).
  { name: 'SERVICE_EXECUTION_RETENTION_DAYS', path: 'retention.rawDays', field: FIELDS.retentionRawDays },
  { name: 'SERVICE_ARTIFACT_RETENTION_DAYS', path: 'retention.artifactDays', field: FIELDS.retentionArtifactDays },
].map((o) => ({ ...o, description: `overrides \`${o.path}\` (${o.field.desc})` }));

/** The variables that override service.yml keys (for docs and `config --json`). */
export const SERVICE_ENV_OVERRIDES: readonly ServiceEnvOverride[] = ENV_OVERRIDES.map(({ name, path: p, description }) => ({
  name,
  path: p,
  description,
}));

// ---------------------------------------------------------------------------------------------
// Loading

const CONFIG_FILE_NAMES = ['service.yml', 'service.yaml'] as const;

/** How the loader reads the disk: each side passes node:fs's (the contract does no I/O itself). */
export interface ConfigFiles {
  /** `file`, `other` (a directory, …), or undefined when nothing is there. */
  kind(file: string): 'file' | 'other' | undefined;
  /** The file's text; throws an error with the errno `code` when it cannot be read. */
  read(file: string): string;
}

/**
 * SERVICE_CONFIG (relative to cwd) when set — it must exist, since a typo there would otherwise
 * fall back to defaults silently — else `<cwd>/service.yml` or `service.yaml`, else null.
 */
export function findConfigFile(env: NodeJS.ProcessEnv, cwd: string, files: ConfigFiles): string | null {
  const explicit = readEnv(env, 'SERVICE_CONFIG');
  if (explicit !== undefined) {
    const file = path.resolve(cwd, explicit);
    const kind = files.kind(file);
    if (!kind) throw new ConfigError('env', 'SERVICE_CONFIG', `file not found: ${file}`);
    if (kind !== 'file') throw new ConfigError('env', 'SERVICE_CONFIG', `not a file: ${file}`);
    return file;
  }
  for (const name of CONFIG_FILE_NAMES) {
    const file = path.resolve(cwd, name);
    if (files.kind(file) === 'file') return file;
  }
  return null;
}

export interface LoadServiceConfigOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Project settings layer (dashboard): a partial config object; null/undefined means none. */
  settings?: unknown;
}

export interface LoadedServiceConfig {
  /** Absolute path of the file in use, or null when running on defaults. */
  file: string | null;
  config: ServiceConfig;
  /** Leaf key path ('flaky.threshold'; arrays are leaves) → layer its value came from. */
  sources: Record<string, ServiceConfigSource>;
  /** The validated file and environment layers, for resolving a project's settings on top later. */
  layers: { file: Plain; env: Plain };
}

/** Where a file path is shown: relative when under cwd (`service.yml`), else absolute. */
function displayPath(file: string, cwd: string): string {
  const rel = path.relative(cwd, file);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
}

/** Parses YAML text into a plain object (empty document = {}); syntax errors carry the line. */
export function parseYamlMapping(text: string, source: string): Record<string, unknown> {
  const doc = YAML.parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throwConfigErrors(
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        // The pretty message repeats the position and a code excerpt; keep just the sentence.
        const sentence = e.message.replace(/ at line \d+, column \d+:[\s\S]*$/, '');
        const where = pos ? ` at line ${pos.line}, column ${pos.col}` : '';
        return new ConfigError(source, '', `YAML syntax error${where}: ${sentence}`);
      }),
    );
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // e.g. an unresolved alias, which parseDocument does not report as an error.
    throw new ConfigError(source, '', `invalid YAML: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (value === null || value === undefined) return {};
  if (!isPlain(value)) throw new ConfigError(source, '', `expected a mapping at the top level, got ${describeValue(value)}`);
  return value;
}

/** Validates one partial layer (every key has a default, so the full schema accepts partials). */
function validateLayer(source: string, layer: unknown): { value: Plain; errors: ConfigError[] } {
  const cleaned = dropNulls(layer);
  const parsed = serviceConfigSchema.safeParse(cleaned);
  if (parsed.success) return { value: isPlain(cleaned) ? cleaned : {}, errors: [] };
  const errors = formatZodIssues(source, parsed.error).map((e) => {
    const variable = e.detail === 'unknown key' ? SECRET_KEYS[e.path] : undefined;
    return variable ? new ConfigError(source, e.path, `tokens never belong in the config file; set ${variable}`) : e;
  });
  return { value: {}, errors };
}

function envLayer(env: NodeJS.ProcessEnv): { value: Plain; errors: ConfigError[] } {
  const value: Plain = {};
  const errors: ConfigError[] = [];
  for (const o of ENV_OVERRIDES) {
    const raw = readEnv(env, o.name);
    if (raw === undefined) continue;
    try {
      setPath(value, o.path, parseEnvValue(o.name, raw, o.field));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors.push(err);
    }
  }
  return { value, errors };
}

/**
 * Resolves the effective service config. Collects every problem across the file, settings and
 * environment and throws them together (ConfigError, or AggregateConfigError for several).
 */
export function readServiceConfig(opts: LoadServiceConfigOptions, files: ConfigFiles): LoadedServiceConfig {
  const errors: ConfigError[] = [];
  const file = findConfigFile(opts.env, opts.cwd, files);

  let fileLayer: Plain = {};
  if (file !== null) {
    const source = displayPath(file, opts.cwd);
    let text: string;
    try {
      text = files.read(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new ConfigError(source, '', `cannot read file (${code})`);
    }
    try {
      const layer = validateLayer(source, parseYamlMapping(text, source));
      fileLayer = layer.value;
      errors.push(...layer.errors);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors.push(...(err instanceof AggregateConfigError ? err.errors : [err]));
    }
  }

  let settingsLayer: Plain = {};
  if (opts.settings !== undefined && opts.settings !== null) {
    const layer = validateLayer('settings', opts.settings);
    settingsLayer = layer.value;
    errors.push(...layer.errors);
  }

  const env = envLayer(opts.env);
  errors.push(...env.errors);
  throwConfigErrors(errors);

  const { value: merged, sources } = resolveServiceLayers(fileLayer, settingsLayer, env.value);
  const parsed = serviceConfigSchema.safeParse(merged);
  // Each layer was valid on its own and merging strict objects cannot add keys, so this only
  // fires on a bug; still report it path by path rather than crash opaquely.
  if (!parsed.success) {
    throwConfigErrors(formatZodIssues('config', parsed.error));
    throw parsed.error;
  }
  return { file, config: parsed.data, sources, layers: { file: fileLayer, env: env.value } };
}

const DEFAULTS: Plain = serviceConfigSchema.parse({});

/** The four layers merged per key (docs/architecture.md "Configuration" precedence; see domain/config-layers.ts), with sources. */
export function resolveServiceLayers(file: Plain, settings: Plain, env: Plain): { value: Plain; sources: Record<string, ServiceConfigSource> } {
  return resolveLayers({ default: DEFAULTS, file, settings, env });
}

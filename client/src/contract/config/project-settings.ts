// Project settings: the "dashboard" layer of docs/architecture.md "Configuration" (file < settings < environment).
// A settings document holds only what a person set for one project; a key left out (or set to
// null, a blank field) inherits from service.yml and the defaults. The same keys as service.yml,
// minus the reporter's own (`project`, `endpoint`), and every object strict so a typo is a 400
// naming the path instead of a silently ignored setting.
import { z } from 'zod';
import { applyPatch, isPlainObject } from '../config-layers.js';
import { compileIgnore } from '../ignore-globs.js';
import { retentionWindows, type RetentionWindows } from '../retention.js';
import { expected, formatZodIssues, throwConfigErrors } from './errors.js';
import {
  FIELDS,
  MAX_CONFIG_CHANNELS,
  channelSchema,
  resolveServiceLayers,
  serviceConfigSchema,
  type LoadedServiceConfig,
  type ServiceConfig,
  type ServiceConfigSource,
} from './service-yml.js';

type Mode = 'document' | 'patch';

/** Checked on write: a glob the normalize stage cannot compile would fail every batch of the project. */
const globSchema = z
  .string({ error: expected('a glob pattern string') })
  .min(1, { error: expected('a glob pattern string') })
  .superRefine((glob, ctx) => {
    try {
      compileIgnore([glob]);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
    }
  });

/** In a patch every key may also be null: "clear it here, inherit from below". */
function key<T extends z.ZodType>(schema: T, mode: Mode) {
  return mode === 'patch' ? schema.nullable().optional() : schema.optional();
}

function section<S extends z.ZodRawShape>(shape: S, mode: Mode) {
  return key(z.strictObject(shape, { error: expected('a mapping') }), mode);
}

/** A channel is its kind and target (its id and webhook secret hang on them): listed once. */
function uniqueChannels(channels: readonly { kind: string; target: string }[], ctx: z.RefinementCtx): void {
  const seen = new Map<string, number>();
  channels.forEach((ch, i) => {
    const k = `${ch.kind}\u0000${ch.target}`;
    const first = seen.get(k);
    if (first === undefined) seen.set(k, i);
    else ctx.addIssue({ code: 'custom', path: [i], message: `duplicate of channel ${first} (same kind and target)` });
  });
}

function settingsSchema(mode: Mode) {
  return z.strictObject(
    {
      flaky: section({ threshold: key(FIELDS.flakyThreshold.schema, mode), minSamples: key(FIELDS.flakyMinSamples.schema, mode) }, mode),
      quarantine: section(
        { enabled: key(FIELDS.quarantineEnabled.schema, mode), cooldownRuns: key(FIELDS.quarantineCooldownRuns.schema, mode) },
        mode,
      ),
      ai: section({ rca: key(FIELDS.aiRca.schema, mode), dailyTokenBudget: key(FIELDS.aiDailyTokenBudget.schema, mode) }, mode),
      ignore: key(z.array(globSchema, { error: expected('a list of glob patterns') }).max(200), mode),
      retention: section(
        { rawDays: key(FIELDS.retentionRawDays.schema, mode), artifactDays: key(FIELDS.retentionArtifactDays.schema, mode) },
        mode,
      ),
      artifacts: section({ enabled: key(FIELDS.artifactsEnabled.schema, mode) }, mode),
      notifications: section(
        {
          channels: key(
            z
              .array(channelSchema, { error: expected('a list of channels') })
              .max(MAX_CONFIG_CHANNELS, { error: `at most ${MAX_CONFIG_CHANNELS} channels` })
              .superRefine(uniqueChannels),
            mode,
          ),
        },
        mode,
      ),
      cost: section(
        {
          ciMinute: key(FIELDS.costCiMinute.schema, mode),
          developerHour: key(FIELDS.costDeveloperHour.schema, mode),
          investigationMinutes: key(FIELDS.costInvestigationMinutes.schema, mode),
          currency: key(FIELDS.costCurrency.schema, mode),
        },
        mode,
      ),
      tracker: section(
        {
          enabled: key(FIELDS.trackerEnabled.schema, mode),
          afterDays: key(FIELDS.trackerAfterDays.schema, mode),
          recoveryDays: key(FIELDS.trackerRecoveryDays.schema, mode),
        },
        mode,
      ),
    },
    { error: expected('a mapping of settings') },
  );
}

/** A stored settings document (PUT body). */
export const projectSettingsSchema = settingsSchema('document');
/** A PATCH body: deep-merged into the stored document, arrays replace, null clears a key. */
export const projectSettingsPatchSchema = settingsSchema('patch');

export type ProjectSettings = z.output<typeof projectSettingsSchema>;
export type ProjectSettingsPatch = z.output<typeof projectSettingsPatchSchema>;

/** Drops empty sections (`{flaky: {}}` says nothing) so the stored document stays what was set. */
function compact(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined || v === null) continue;
    if (isPlainObject(v)) {
      const inner = compact(v);
      if (Object.keys(inner).length > 0) out[k] = inner;
    } else out[k] = v;
  }
  return out;
}

/** The stored document after a PATCH; throws a ConfigError (source "settings") if the result is invalid. */
export function patchSettings(current: ProjectSettings, patch: ProjectSettingsPatch): ProjectSettings {
  return parseSettings(applyPatch(current, patch));
}

/** Validates and compacts a settings document; errors name each path (`settings: flaky.treshold: unknown key`). */
export function parseSettings(doc: unknown): ProjectSettings {
  const parsed = projectSettingsSchema.safeParse(doc);
  if (!parsed.success) {
    throwConfigErrors(formatZodIssues('settings', parsed.error));
    throw parsed.error;
  }
  return compact(parsed.data);
}

/** One project's effective policy: every key's value and the layer it came from. */
export interface ResolvedServiceConfig {
  config: ServiceConfig;
  sources: Record<string, ServiceConfigSource>;
  /** The effective retention windows (artifacts clamped to at least the execution window). */
  retention: RetentionWindows;
}

/**
 * service.yml and environment (as loaded at start) with a project's settings in between, per the docs/architecture.md
 * precedence. `settings` is a stored, already valid document (or null for none).
 */
export function resolveProjectConfig(base: LoadedServiceConfig, settings: ProjectSettings | null): ResolvedServiceConfig {
  const { value, sources } = resolveServiceLayers(base.layers.file, settings ?? {}, base.layers.env);
  // Each layer was validated on its own and strict objects merged cannot grow keys: only a bug fails here.
  const config = serviceConfigSchema.parse(value);
  return { config, sources, retention: retentionWindows(config.retention) };
}

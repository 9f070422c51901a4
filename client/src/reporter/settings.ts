// The reporter's settings: `endpoint` and `project` from service.yml / SERVICE_ENDPOINT /
// SERVICE_PROJECT (the contract's config/service-yml.ts does the layering), the token from SERVICE_TOKEN only,
// and the reporter variables of docs/architecture.md "Configuration". Every bad value is a ConfigError that
// names the variable, collected so one run shows them all.
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { AggregateConfigError, ConfigError, expected, throwConfigErrors } from '../contract/config/errors.js';
import {
  envReader,
  intField,
  numberField,
  readEnv,
  type Field,
  type LoadedServiceConfig,
  type NotificationChannelKind,
  type NotificationEventType,
  type ServiceConfigSource,
} from '../contract/config/service-yml.js';
import { loadServiceConfig } from './service-config.js';
import { LIMITS } from '../contract/batch.js';
import { jobMatrixFrom, type JobMatrix } from '../contract/ci-job.js';

export const TRANSPORTS = ['otlp', 'json'] as const;
export type Transport = (typeof TRANSPORTS)[number];
export const COMPRESSIONS = ['gzip', 'none'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

/** Where the reporter sends when neither service.yml nor SERVICE_ENDPOINT names a server. */
export const DEFAULT_ENDPOINT = 'http://127.0.0.1:8080';
/** Buffered runs survive between invocations on one machine (and CI caches, if pointed there). */
export const DEFAULT_BUFFER_DIR = path.join(os.tmpdir(), 'flakehouse-buffer');
/** Longest explicit key: leaves room for the `-shard<index>` suffix within the 128-char limit. */
const MAX_EXPLICIT_KEY = LIMITS.idempotencyKeyMax - 16;

export interface ConfigChannel {
  kind: NotificationChannelKind;
  target: string;
  events?: NotificationEventType[];
}

export interface ReporterSettings {
  /** Absolute path of service.yml, or null when none was found. */
  configFile: string | null;
  endpoint: string;
  endpointSource: ServiceConfigSource;
  project: string | undefined;
  /** SERVICE_TOKEN; never printed. */
  token: string | undefined;
  transport: Transport;
  compression: Compression;
  bufferDir: string;
  /** Fraction 0..1 of passing runs delivered. */
  sampleRate: number;
  /** Both variables given and total > 1; otherwise the run is unsharded. */
  shard: { index: number; total: number } | undefined;
  /** SERVICE_IDEMPOTENCY_KEY; else the run's trace id is the key. */
  idempotencyKey: string | undefined;
  /** SERVICE_COMMIT_SHA / SERVICE_BRANCH: used when CI detection finds none. */
  commitSha: string | undefined;
  branch: string | undefined;
  /** SERVICE_MERGE_BASE: the PR's merge base, used instead of asking git (client/src/reporter/merge-base.ts). */
  mergeBase: string | undefined;
  /**
   * SERVICE_CI_RUN_ID: the CI run, when the CI system gives none we detect. Its re-runs must keep
   * it: without a commit, runs of one CI run are the same code to the scorer.
   */
  ciRunId: string | undefined;
  /**
   * SERVICE_CI_JOB_NAME: the CI job, instead of the one the CI names (GITHUB_JOB, CI_JOB_NAME, …);
   * runs of one commit are re-runs of each other only when they are the same job.
   */
  ciJobName: string | undefined;
  /** SERVICE_CI_JOB_MATRIX: the job's matrix values, a JSON object (`${{ toJSON(matrix) }}`); `null` or `{}` is none. */
  ciJobMatrix: JobMatrix | undefined;
  /** SERVICE_CODEOWNERS_FILE resolved against cwd. */
  codeownersFile: string | undefined;
  /** `notifications.channels` of service.yml; synced to the server only when a file is in use. */
  channels: ConfigChannel[];
  /** Things the user should know that do not stop the report (e.g. half a shard setting). */
  warnings: string[];
}

function enumField<T extends string>(values: readonly T[]): Field<T> {
  const desc = values.join(' or ');
  return { kind: 'string', desc, schema: z.enum(values as [T, ...T[]], { error: expected(desc) }) };
}

const FIELDS = {
  transport: enumField(TRANSPORTS),
  compression: enumField(COMPRESSIONS),
  sampleRate: numberField(0, 1),
  shardIndex: intField(1),
  shardTotal: intField(1),
  idempotencyKey: {
    kind: 'string',
    desc: `${LIMITS.idempotencyKeyMin} to ${MAX_EXPLICIT_KEY} characters`,
    schema: z.string().min(LIMITS.idempotencyKeyMin).max(MAX_EXPLICIT_KEY),
  } satisfies Field<string>,
  commitSha: {
    kind: 'string',
    desc: '7 to 40 hex characters',
    schema: z.string().regex(/^[0-9a-f]{7,40}$/i).transform((s) => s.toLowerCase()),
  } satisfies Field<string>,
  branch: { kind: 'string', desc: 'a branch name', schema: z.string().min(1) } satisfies Field<string>,
  ciRunId: { kind: 'string', desc: '1 to 200 characters', schema: z.string().min(1).max(200) } satisfies Field<string>,
  path: { kind: 'string', desc: 'a path', schema: z.string().min(1) } satisfies Field<string>,
  ciJobName: { kind: 'string', desc: '1 to 200 characters', schema: z.string().min(1).max(200) } satisfies Field<string>,
  ciJobMatrix: {
    kind: 'string',
    desc: 'a JSON object of matrix values, e.g. ${{ toJSON(matrix) }}',
    schema: z.string().transform((text, ctx): JobMatrix | null => {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'not JSON' });
        return z.NEVER;
      }
      if (value === null) return null;
      if (typeof value !== 'object' || Array.isArray(value)) {
        ctx.addIssue({ code: 'custom', message: 'not a JSON object' });
        return z.NEVER;
      }
      return jobMatrixFrom(value) ?? null;
    }),
  } satisfies Field<JobMatrix | null>,
};

/** The reporter variables this module reads (for `config --json` and docs). */
export const REPORTER_ENV_VARS = [
  'SERVICE_TOKEN',
  'SERVICE_TRANSPORT',
  'SERVICE_COMPRESSION',
  'SERVICE_BUFFER_DIR',
  'SERVICE_SAMPLE_RATE',
  'SERVICE_SHARD_INDEX',
  'SERVICE_SHARD_TOTAL',
  'SERVICE_IDEMPOTENCY_KEY',
  'SERVICE_COMMIT_SHA',
  'SERVICE_BRANCH',
  'SERVICE_MERGE_BASE',
  'SERVICE_CI_RUN_ID',
  'SERVICE_CI_JOB_NAME',
  'SERVICE_CI_JOB_MATRIX',
  'SERVICE_CODEOWNERS_FILE',
] as const;

export interface LoadReporterSettingsOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** An already loaded service config (the CLI loads it once for several purposes). */
  service?: LoadedServiceConfig;
}

/** Resolves the reporter settings or throws every problem at once (ConfigError / AggregateConfigError). */
export function loadReporterSettings(opts: LoadReporterSettingsOptions): ReporterSettings {
  const { env, cwd } = opts;
  const errors: ConfigError[] = [];
  const warnings: string[] = [];

  let service: LoadedServiceConfig | undefined = opts.service;
  if (!service) {
    try {
      service = loadServiceConfig({ env, cwd });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors.push(...(err instanceof AggregateConfigError ? err.errors : [err]));
    }
  }

  const read = envReader(env, errors);

  const transport = read('SERVICE_TRANSPORT', FIELDS.transport) ?? 'otlp';
  const compression = read('SERVICE_COMPRESSION', FIELDS.compression) ?? 'none';
  const sampleRate = read('SERVICE_SAMPLE_RATE', FIELDS.sampleRate) ?? 1;
  const bufferDirRaw = read('SERVICE_BUFFER_DIR', FIELDS.path);
  const shardIndex = read('SERVICE_SHARD_INDEX', FIELDS.shardIndex);
  const shardTotal = read('SERVICE_SHARD_TOTAL', FIELDS.shardTotal);
  const idempotencyKey = read('SERVICE_IDEMPOTENCY_KEY', FIELDS.idempotencyKey);
  const commitSha = read('SERVICE_COMMIT_SHA', FIELDS.commitSha);
  const branch = read('SERVICE_BRANCH', FIELDS.branch);
  const mergeBase = read('SERVICE_MERGE_BASE', FIELDS.commitSha);
  const ciRunId = read('SERVICE_CI_RUN_ID', FIELDS.ciRunId);
  const ciJobName = read('SERVICE_CI_JOB_NAME', FIELDS.ciJobName);
  const ciJobMatrix = read('SERVICE_CI_JOB_MATRIX', FIELDS.ciJobMatrix) ?? undefined;
  const codeownersFile = read('SERVICE_CODEOWNERS_FILE', FIELDS.path);

  let shard: ReporterSettings['shard'];
  if (shardIndex !== undefined && shardTotal !== undefined) {
    if (shardIndex > shardTotal) {
      errors.push(new ConfigError('env', 'SERVICE_SHARD_INDEX', `shard ${shardIndex} of ${shardTotal}: the index is 1-based and at most SERVICE_SHARD_TOTAL`));
    } else if (shardTotal > 1) {
      shard = { index: shardIndex, total: shardTotal };
    }
  } else if (shardIndex !== undefined || shardTotal !== undefined) {
    const [set, unset] = shardIndex !== undefined ? ['SERVICE_SHARD_INDEX', 'SERVICE_SHARD_TOTAL'] : ['SERVICE_SHARD_TOTAL', 'SERVICE_SHARD_INDEX'];
    warnings.push(`${set} is set but ${unset} is not; both are needed, so this run is reported as unsharded`);
  }

  throwConfigErrors(errors);
  const loaded = service!;
  return {
    configFile: loaded.file,
    endpoint: (loaded.config.endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, ''),
    endpointSource: loaded.config.endpoint === undefined ? 'default' : (loaded.sources.endpoint ?? 'file'),
    project: loaded.config.project,
    token: readEnv(env, 'SERVICE_TOKEN'),
    transport,
    compression,
    bufferDir: bufferDirRaw === undefined ? DEFAULT_BUFFER_DIR : path.resolve(cwd, bufferDirRaw),
    sampleRate,
    shard,
    idempotencyKey,
    commitSha,
    branch,
    mergeBase,
    ciRunId,
    ciJobName,
    ciJobMatrix,
    codeownersFile: codeownersFile === undefined ? undefined : path.resolve(cwd, codeownersFile),
    channels: loaded.config.notifications.channels,
    warnings,
  };
}

/** What `flakehouse config --json` shows of the reporter: everything resolved, never the token. */
export function describeReporterSettings(s: ReporterSettings): Record<string, unknown> {
  return {
    endpoint: s.endpoint,
    endpointSource: s.endpointSource,
    project: s.project ?? null,
    tokenPresent: s.token !== undefined,
    transport: s.transport,
    compression: s.compression,
    bufferDir: s.bufferDir,
    sampleRate: s.sampleRate,
    shard: s.shard ?? null,
    idempotencyKeySource: s.idempotencyKey !== undefined ? 'SERVICE_IDEMPOTENCY_KEY' : 'trace id',
    commitSha: s.commitSha ?? null,
    branch: s.branch ?? null,
    mergeBase: s.mergeBase ?? null,
    ciRunId: s.ciRunId ?? null,
    ciJobName: s.ciJobName ?? null,
    ciJobMatrix: s.ciJobMatrix ?? null,
    codeownersFile: s.codeownersFile ?? null,
    configChannels: s.channels.length,
    warnings: s.warnings,
  };
}

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AggregateConfigError, ConfigError, formatZodIssues, zodIssuesToMessages } from '../../client/src/contract/config/errors.js';
import { loadServerSettings, SERVER_ENV_VARS } from '../../src/config/daemon-env.js';
import { loadServiceConfig, resolveConfigPath, SERVICE_ENV_OVERRIDES } from '../../src/config/service-yml.js';

let dir: string;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'flakehouse-config-'));
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function writeConfig(text: string, name = 'service.yml'): Promise<string> {
  const file = path.join(dir, name);
  await fs.writeFile(file, text);
  return file;
}

/** Runs fn expecting a ConfigError; returns it for assertions. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const load = (env: NodeJS.ProcessEnv = {}, settings?: unknown) => loadServiceConfig({ env, cwd: dir, settings });

describe('ConfigError and zod helpers', () => {
  it('formats source: path: message', () => {
    const err = new ConfigError('service.yml', 'flaky.treshold', 'unknown key');
    expect(err.message).toBe('service.yml: flaky.treshold: unknown key');
    expect(err.source).toBe('service.yml');
    expect(err.path).toBe('flaky.treshold');
    expect(err.detail).toBe('unknown key');
    expect(new ConfigError('f.yml', '', 'boom').message).toBe('f.yml: boom');
  });

  it('turns zod issues into path-naming messages, one per unknown key', () => {
    const schema = z.strictObject({ a: z.strictObject({ b: z.number() }), list: z.array(z.string()) });
    const result = schema.safeParse({ a: { b: 'x', c: 1, d: 2 }, list: ['ok', 3] });
    expect(result.success).toBe(false);
    if (result.success) return;
    const messages = zodIssuesToMessages('pipeline.yml', result.error);
    expect(messages.map((m) => m.path).sort()).toEqual(['a.b', 'a.c', 'a.d', 'list.1']);
    expect(messages.find((m) => m.path === 'a.c')?.message).toBe('unknown key');
    expect(zodIssuesToMessages(result.error)).toEqual(messages);
    const errors = formatZodIssues('pipeline.yml', result.error);
    expect(errors.map((e) => e.message)).toContain('pipeline.yml: a.d: unknown key');
  });

  it('AggregateConfigError lists every problem and is a ConfigError', () => {
    const err = new AggregateConfigError([new ConfigError('env', 'A', 'x'), new ConfigError('f', 'b.c', 'y')]);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe('env: A: x\nf: b.c: y');
    expect(err.errors).toHaveLength(2);
  });
});

describe('resolveConfigPath', () => {
  it('returns null without a file, finds service.yml then service.yaml', async () => {
    expect(resolveConfigPath({}, dir)).toBeNull();
    const yaml = await writeConfig('{}', 'service.yaml');
    expect(resolveConfigPath({}, dir)).toBe(yaml);
    const yml = await writeConfig('{}');
    expect(resolveConfigPath({}, dir)).toBe(yml);
  });

  it('uses SERVICE_CONFIG relative to cwd; a missing file is an error naming the variable', async () => {
    const file = await writeConfig('project: x\n', 'custom.yml');
    expect(resolveConfigPath({ SERVICE_CONFIG: 'custom.yml' }, dir)).toBe(file);
    const err = configError(() => resolveConfigPath({ SERVICE_CONFIG: 'nope.yml' }, dir));
    expect(err.source).toBe('env');
    expect(err.path).toBe('SERVICE_CONFIG');
    expect(err.message).toContain(path.join(dir, 'nope.yml'));
    expect(() => load({ SERVICE_CONFIG: 'nope.yml' })).toThrow(/SERVICE_CONFIG: file not found/);
  });

  it('treats an empty SERVICE_CONFIG as unset', async () => {
    expect(resolveConfigPath({ SERVICE_CONFIG: '' }, dir)).toBeNull();
  });
});

describe('loadServiceConfig', () => {
  it('applies the documented defaults without a file', () => {
    const { file, config, sources } = load();
    expect(file).toBeNull();
    expect(config).toEqual({
      flaky: { threshold: 0.8, minSamples: 5 },
      quarantine: { enabled: false, cooldownRuns: 20 },
      ai: { rca: true, dailyTokenBudget: 200_000 },
      ignore: [],
      retention: {}, // no window: nothing is pruned until one is set
      artifacts: { enabled: true },
      notifications: { channels: [] },
      cost: { ciMinute: 0.008, developerHour: 75, investigationMinutes: 15, currency: 'USD' },
      tracker: { enabled: false, afterDays: 3, recoveryDays: 7 },
    });
    expect(Object.values(sources).every((s) => s === 'default')).toBe(true);
    expect(sources['flaky.threshold']).toBe('default');
  });

  it('treats an empty or comments-only file as an empty config', async () => {
    await writeConfig('');
    expect(load().config.flaky.threshold).toBe(0.8);
    await writeConfig('# nothing here\n');
    expect(load().config.ai.rca).toBe(true);
  });

  it('reads file values and keeps defaults for the rest', async () => {
    const file = await writeConfig(
      [
        'project: web-app',
        'endpoint: https://flakes.example.com',
        'flaky:',
        '  threshold: 0.6',
        'quarantine:',
        '  enabled: true',
        'ignore: ["e2e/**", "legacy/*.spec.ts"]',
        'notifications:',
        '  channels:',
        '    - kind: slack',
        '      target: https://hooks.slack.com/services/T/B/X',
        '      events: [flaky_detected, ai_budget_spent]',
        '    - kind: email',
        '      target: team@example.com',
        'cost:',
        '  developerHour: 120',
        'tracker:',
        '  enabled: true',
        'retention:', // no value: same as absent
      ].join('\n'),
    );
    const { file: used, config, sources } = load();
    expect(used).toBe(file);
    expect(config.project).toBe('web-app');
    expect(config.endpoint).toBe('https://flakes.example.com');
    expect(config.flaky).toEqual({ threshold: 0.6, minSamples: 5 });
    expect(config.quarantine).toEqual({ enabled: true, cooldownRuns: 20 });
    expect(config.ignore).toEqual(['e2e/**', 'legacy/*.spec.ts']);
    expect(config.notifications.channels).toEqual([
      { kind: 'slack', target: 'https://hooks.slack.com/services/T/B/X', events: ['flaky_detected', 'ai_budget_spent'] },
      { kind: 'email', target: 'team@example.com' },
    ]);
    expect(config.cost).toEqual({ ciMinute: 0.008, developerHour: 120, investigationMinutes: 15, currency: 'USD' });
    expect(config.tracker).toEqual({ enabled: true, afterDays: 3, recoveryDays: 7 });
    expect(config.retention.rawDays).toBeUndefined();
    expect(sources['flaky.threshold']).toBe('file');
    expect(sources['flaky.minSamples']).toBe('default');
    expect(sources['notifications.channels']).toBe('file');
    expect(sources['retention.rawDays']).toBeUndefined();
  });

  it('rejects an unknown key at depth naming the path and the file', async () => {
    await writeConfig('flaky:\n  treshold: 0.5\n');
    const err = configError(() => load());
    expect(err.message).toBe('service.yml: flaky.treshold: unknown key');
    expect(err.source).toBe('service.yml');
    expect(err.path).toBe('flaky.treshold');
  });

  it('names the file by absolute path when it lives outside cwd', async () => {
    const other = await fs.mkdtemp(path.join(os.tmpdir(), 'flakehouse-other-'));
    try {
      const file = path.join(other, 'service.yml');
      await fs.writeFile(file, 'bogus: 1\n');
      expect(() => load({ SERVICE_CONFIG: file })).toThrow(`${file}: bogus: unknown key`);
    } finally {
      await fs.rm(other, { recursive: true, force: true });
    }
  });

  it('rejects unknown keys inside array items with the index in the path', async () => {
    await writeConfig('notifications:\n  channels:\n    - kind: webhook\n      target: https://x.example/h\n      secret: s\n');
    expect(() => load()).toThrow('service.yml: notifications.channels.0.secret: unknown key');
  });

  it('rejects a token key with a dedicated message', async () => {
    await writeConfig('project: p\ntoken: fh_abc\n');
    const err = configError(() => load());
    expect(err.message).toBe('service.yml: token: tokens never belong in the config file; set SERVICE_TOKEN');
  });

  it('reports every invalid value in the file at once, each naming its path', async () => {
    await writeConfig(
      [
        'endpoint: not a url',
        'flaky:',
        '  threshold: 1.5',
        '  minSamples: 0',
        'ai:',
        '  dailyTokenBudget: 2.5',
        'quarantine:',
        '  enabled: "yes"',
        'notifications:',
        '  channels:',
        '    - kind: pager',
        '      target: x',
        '    - kind: slack',
        '      target: not-a-url',
        '      events: [flaky_detected, nope]',
      ].join('\n'),
    );
    const err = configError(() => load());
    expect(err).toBeInstanceOf(AggregateConfigError);
    const lines = err.message.split('\n');
    for (const p of [
      'endpoint',
      'flaky.threshold',
      'flaky.minSamples',
      'ai.dailyTokenBudget',
      'quarantine.enabled',
      'notifications.channels.0.kind',
      'notifications.channels.1.target',
      'notifications.channels.1.events.1',
    ]) {
      expect(lines.some((l) => l.startsWith(`service.yml: ${p}: `))).toBe(true);
    }
    expect(err.message).toContain('service.yml: flaky.threshold: expected a number between 0 and 1, got 1.5');
  });

  it('rejects a non-mapping document and wrong container types', async () => {
    await writeConfig('- a\n- b\n');
    expect(() => load()).toThrow('service.yml: expected a mapping at the top level, got a list');
    await writeConfig('flaky: 3\nignore: "*.ts"\n');
    const err = configError(() => load());
    expect(err.message).toContain('service.yml: flaky: expected a mapping, got 3');
    expect(err.message).toContain('service.yml: ignore: expected a list of glob patterns, got "*.ts"');
  });

  it('reports YAML syntax errors with the line', async () => {
    await writeConfig('project: p\nflaky:\n  threshold: [0.5,\nai:\n  rca: true\n');
    const err = configError(() => load());
    expect(err.source).toBe('service.yml');
    expect(err.message).toMatch(/^service\.yml: YAML syntax error at line \d+, column \d+: /);
    await writeConfig('project: a\nproject: b\n');
    expect(() => load()).toThrow(/service\.yml: YAML syntax error at line 2, column 1: Map keys must be unique/);
  });

  it('applies env overrides with coercion', async () => {
    await writeConfig('flaky:\n  threshold: 0.6\n');
    const { config, sources } = load({
      SERVICE_PROJECT: 'from-env',
      SERVICE_ENDPOINT: 'http://localhost:8080',
      SERVICE_FLAKY_THRESHOLD: '0.9',
      SERVICE_FLAKY_MIN_SAMPLES: '10',
      SERVICE_QUARANTINE_ENABLED: 'yes',
      SERVICE_QUARANTINE_COOLDOWN_RUNS: '30',
      SERVICE_AI_RCA: '0',
      SERVICE_AI_DAILY_TOKEN_BUDGET: '0',
      SERVICE_CI_MINUTE_COST: '0.01',
      SERVICE_DEVELOPER_HOUR_COST: '100',
      SERVICE_INVESTIGATION_MINUTES: '20',
      SERVICE_TRACKER_ENABLED: 'TRUE',
      SERVICE_TRACKER_AFTER_DAYS: '4',
      SERVICE_TRACKER_RECOVERY_DAYS: '14',
      SERVICE_EXECUTION_RETENTION_DAYS: '30',
      SERVICE_TOKEN: 'fh_ignored_here',
    });
    expect(config.project).toBe('from-env');
    expect(config.endpoint).toBe('http://localhost:8080');
    expect(config.flaky).toEqual({ threshold: 0.9, minSamples: 10 });
    expect(config.quarantine).toEqual({ enabled: true, cooldownRuns: 30 });
    expect(config.ai).toEqual({ rca: false, dailyTokenBudget: 0 });
    expect(config.cost).toEqual({ ciMinute: 0.01, developerHour: 100, investigationMinutes: 20, currency: 'USD' });
    expect(config.tracker).toEqual({ enabled: true, afterDays: 4, recoveryDays: 14 });
    expect(config.retention.rawDays).toBe(30);
    expect(sources['flaky.threshold']).toBe('env');
    expect(sources['retention.rawDays']).toBe('env');
    expect(sources.project).toBe('env');
  });

  it('treats empty env vars as unset', async () => {
    await writeConfig('flaky:\n  threshold: 0.6\n');
    const { config, sources } = load({ SERVICE_FLAKY_THRESHOLD: '', SERVICE_AI_RCA: '' });
    expect(config.flaky.threshold).toBe(0.6);
    expect(sources['flaky.threshold']).toBe('file');
    expect(config.ai.rca).toBe(true);
  });

  it('names the variable on coercion errors and reports all of them', () => {
    expect(() => load({ SERVICE_FLAKY_THRESHOLD: 'abc' })).toThrow(
      'env: SERVICE_FLAKY_THRESHOLD: expected a number between 0 and 1, got "abc"',
    );
    expect(() => load({ SERVICE_FLAKY_THRESHOLD: '1.5' })).toThrow('env: SERVICE_FLAKY_THRESHOLD: expected a number between 0 and 1, got "1.5"');
    expect(() => load({ SERVICE_FLAKY_MIN_SAMPLES: '2.5' })).toThrow('env: SERVICE_FLAKY_MIN_SAMPLES: expected an integer ≥ 1, got "2.5"');
    expect(() => load({ SERVICE_CI_MINUTE_COST: '0x10' })).toThrow('env: SERVICE_CI_MINUTE_COST');
    expect(() => load({ SERVICE_ENDPOINT: 'ftp://x' })).toThrow('env: SERVICE_ENDPOINT: expected an http(s) URL, got "ftp://x"');
    const err = configError(() => load({ SERVICE_QUARANTINE_ENABLED: 'maybe', SERVICE_AI_DAILY_TOKEN_BUDGET: '-1' }));
    expect(err.message).toContain('env: SERVICE_QUARANTINE_ENABLED: expected a boolean (true/false, 1/0, yes/no), got "maybe"');
    expect(err.message).toContain('env: SERVICE_AI_DAILY_TOKEN_BUDGET: expected an integer ≥ 0, got "-1"');
  });

  it('reports file and env problems together', async () => {
    await writeConfig('flaky:\n  treshold: 0.5\n');
    const err = configError(() => load({ SERVICE_AI_RCA: 'nah' }));
    expect(err.message).toContain('service.yml: flaky.treshold: unknown key');
    expect(err.message).toContain('env: SERVICE_AI_RCA:');
  });

  it('layers file < settings < env with deep merge and replaced arrays', async () => {
    await writeConfig(
      [
        'project: from-file',
        'flaky:',
        '  threshold: 0.6',
        '  minSamples: 7',
        'ignore: ["a/**", "b/**"]',
        'cost:',
        '  ciMinute: 0.02',
      ].join('\n'),
    );
    const settings = {
      flaky: { threshold: 0.7 },
      ignore: ['c/**'],
      cost: { developerHour: 90 },
      tracker: { afterDays: null }, // blank in the dashboard: inherits
    };
    const { config, sources } = load({ SERVICE_FLAKY_THRESHOLD: '0.95', SERVICE_DEVELOPER_HOUR_COST: '' }, settings);
    expect(config.project).toBe('from-file');
    expect(config.flaky).toEqual({ threshold: 0.95, minSamples: 7 });
    expect(config.ignore).toEqual(['c/**']);
    expect(config.cost).toEqual({ ciMinute: 0.02, developerHour: 90, investigationMinutes: 15, currency: 'USD' });
    expect(config.tracker.afterDays).toBe(3);
    expect(sources).toMatchObject({
      project: 'file',
      'flaky.threshold': 'env',
      'flaky.minSamples': 'file',
      ignore: 'settings',
      'cost.ciMinute': 'file',
      'cost.developerHour': 'settings',
      'cost.investigationMinutes': 'default',
      'cost.currency': 'default',
      'tracker.afterDays': 'default',
      'notifications.channels': 'default',
    });
    expect(sources.endpoint).toBeUndefined();
  });

  it('validates the settings layer with source "settings"', () => {
    expect(() => load({}, { flaky: { minSamples: 0 } })).toThrow('settings: flaky.minSamples: expected an integer ≥ 1, got 0');
    expect(() => load({}, { quarantine: { cooldown: 5 } })).toThrow('settings: quarantine.cooldown: unknown key');
    expect(() => load({}, 'nope')).toThrow('settings: expected a mapping at the top level, got "nope"');
  });

  it('documents every env override', () => {
    expect(SERVICE_ENV_OVERRIDES.map((o) => o.name)).toContain('SERVICE_EXECUTION_RETENTION_DAYS');
    expect(SERVICE_ENV_OVERRIDES.find((o) => o.name === 'SERVICE_EXECUTION_RETENTION_DAYS')?.path).toBe('retention.rawDays');
    expect(SERVICE_ENV_OVERRIDES.find((o) => o.name === 'SERVICE_ARTIFACT_RETENTION_DAYS')?.path).toBe('retention.artifactDays');
    expect(SERVICE_ENV_OVERRIDES).toHaveLength(17);
  });
});

describe('loadServerSettings', () => {
  it('applies defaults', () => {
    const s = loadServerSettings({}, dir);
    expect(s).toEqual({
      port: 8080,
      // Loopback by default: a daemon on a laptop is not reachable from the network unless asked
      // (the Dockerfile sets SERVICE_HOST=0.0.0.0, which a container needs).
      host: '127.0.0.1',
      dataDir: path.join(dir, 'data'),
      clickhouse: { database: 'flakehouse' },
      logLevel: 'info',
      logRequests: false,
      queue: { visibilityMs: 300_000, maxDepth: 10_000, pollIntervalMs: 250, maxAttempts: 8, retryBackoffMs: 1000, maxBytes: 0, prefix: 'flakehouse', partitions: 16, leaseTtlMs: 15_000, connectTimeoutMs: 30_000 },
      role: 'all',
      minFreeBytes: 64 * 1024 * 1024,
      rateLimit: { max: 600, windowMs: 60_000 },
      clusterThreshold: 0.5,
      retentionSweepMs: 3_600_000,
      selfOtelIntervalMs: 60_000,
      notifications: { events: null, allowPrivateWebhooks: false },
      tracker: { url: 'https://api.github.com' },
      pipelineThread: true,
      sql: { enabled: true, maxExecutionTimeSec: 60, maxResultRows: 10_000_000, maxMemoryBytes: 1_073_741_824, maxThreads: 1, maxConcurrent: 2 },
      dashboard: { enabled: true, sessionTtlHours: 12 },
      door: { headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, maxConnections: 1024, maxConnectionsPerAddress: 256, maxConcurrentBodies: 4, bodyWaitMs: 2000 },
    });
  });

  it('reads every variable', () => {
    const s = loadServerSettings(
      {
        SERVICE_PORT: '0',
        SERVICE_HOST: '0.0.0.0',
        SERVICE_DATA_DIR: '/var/lib/flakehouse',
        SERVICE_CLICKHOUSE_URL: 'http://clickhouse:8123',
        SERVICE_CLICKHOUSE_USER: 'fh',
        SERVICE_CLICKHOUSE_PASSWORD: ' secret ',
        SERVICE_CLICKHOUSE_DATABASE: 'fh_test',
        SERVICE_ADMIN_TOKEN: 'admin-secret',
        LOG_LEVEL: 'DEBUG',
        SERVICE_LOG_REQUESTS: 'true',
        SERVICE_QUEUE_VISIBILITY_MS: '500',
        SERVICE_MAX_QUEUE_DEPTH: '0',
        POLL_INTERVAL_MS: '10',
        SERVICE_QUEUE_MAX_ATTEMPTS: '3',
        SERVICE_QUEUE_RETRY_BACKOFF_MS: '250',
        SERVICE_QUEUE_MAX_BYTES: '1048576',
        SERVICE_ROLE: 'Worker'.toLowerCase(),
        SERVICE_QUEUE_URL: 'nats://nats-a:4222,nats://nats-b:4222',
        SERVICE_QUEUE_PREFIX: 'fh_ci',
        SERVICE_QUEUE_PARTITIONS: '8',
        SERVICE_PARTITION_LEASE_TTL_MS: '5000',
        SERVICE_QUEUE_CONNECT_TIMEOUT_MS: '2500',
        SERVICE_MIN_FREE_BYTES: '0',
        SERVICE_RATE_LIMIT_MAX: '5',
        SERVICE_RATE_LIMIT_WINDOW_MS: '1000',
        SERVICE_CLUSTER_THRESHOLD: '0.75',
        SERVICE_PIPELINE_THREAD: 'false',
        SERVICE_ARTIFACT_RETENTION_DAYS: '60',
        SERVICE_EXECUTION_RETENTION_DAYS: '30',
        SERVICE_RETENTION_SWEEP_MS: '60000',
        SERVICE_PUBLIC_API_URL: 'https://api.example.com',
        SERVICE_SELF_OTEL_ENDPOINT: 'http://otel:4318',
        SERVICE_SELF_OTEL_INTERVAL_MS: '5000',
        SERVICE_SQL_ENABLED: 'false',
        SERVICE_SQL_PORT: '8123',
        SERVICE_SQL_MAX_EXECUTION_TIME: '5',
        SERVICE_SQL_MAX_RESULT_ROWS: '1000',
        SERVICE_SQL_MAX_MEMORY: '100000000',
        SERVICE_SQL_MAX_THREADS: '2',
        SERVICE_SQL_MAX_CONCURRENT: '4',
        SERVICE_DASHBOARD_ENABLED: 'false',
        SERVICE_DASHBOARD_SESSION_TTL_HOURS: '2',
        SERVICE_HEADERS_TIMEOUT_MS: '500',
        SERVICE_REQUEST_TIMEOUT_MS: '5000',
        SERVICE_MAX_CONNECTIONS: '100',
        SERVICE_MAX_CONNECTIONS_PER_ADDRESS: '10',
        SERVICE_MAX_CONCURRENT_BODIES: '2',
        SERVICE_BODY_WAIT_MS: '0',
      },
      dir,
    );
    expect(s).toEqual({
      port: 0,
      host: '0.0.0.0',
      dataDir: '/var/lib/flakehouse',
      clickhouse: { url: 'http://clickhouse:8123', user: 'fh', password: ' secret ', database: 'fh_test' },
      adminToken: 'admin-secret',
      logLevel: 'debug',
      logRequests: true,
      queue: {
        visibilityMs: 500,
        maxDepth: 0,
        pollIntervalMs: 10,
        maxAttempts: 3,
        retryBackoffMs: 250,
        maxBytes: 1_048_576,
        url: 'nats://nats-a:4222,nats://nats-b:4222',
        prefix: 'fh_ci',
        partitions: 8,
        leaseTtlMs: 5000,
        connectTimeoutMs: 2500,
      },
      role: 'worker',
      minFreeBytes: 0,
      rateLimit: { max: 5, windowMs: 1000 },
      clusterThreshold: 0.75,
      pipelineThread: false,
      artifactRetentionDays: 60,
      executionRetentionDays: 30,
      retentionSweepMs: 60_000,
      publicApiUrl: 'https://api.example.com',
      selfOtelEndpoint: 'http://otel:4318',
      selfOtelIntervalMs: 5000,
      notifications: { events: null, allowPrivateWebhooks: false },
      tracker: { url: 'https://api.github.com' },
      sql: { enabled: false, port: 8123, maxExecutionTimeSec: 5, maxResultRows: 1000, maxMemoryBytes: 100_000_000, maxThreads: 2, maxConcurrent: 4 },
      dashboard: { enabled: false, sessionTtlHours: 2 },
      door: { headersTimeoutMs: 500, requestTimeoutMs: 5000, maxConnections: 100, maxConnectionsPerAddress: 10, maxConcurrentBodies: 2, bodyWaitMs: 0 },
    });
  });

  it('refuses the ingest and worker roles without a queue they can share, naming the variables', () => {
    expect(() => loadServerSettings({ SERVICE_ROLE: 'ingest' }, dir)).toThrow(/env: SERVICE_QUEUE_URL: required with SERVICE_ROLE=ingest/);
    expect(() => loadServerSettings({ SERVICE_ROLE: 'leader' }, dir)).toThrow(/env: SERVICE_ROLE: expected one of all, ingest, worker/);
    expect(() => loadServerSettings({ SERVICE_QUEUE_URL: 'http://nats:4222' }, dir)).toThrow(/env: SERVICE_QUEUE_URL: expected nats:\/\/host:port/);
    expect(loadServerSettings({ SERVICE_QUEUE_URL: 'nats://127.0.0.1:4222' }, dir).role).toBe('all');
  });

  it('refuses a header timeout longer than the request timeout, naming the variable', () => {
    expect(() => loadServerSettings({ SERVICE_HEADERS_TIMEOUT_MS: '2000', SERVICE_REQUEST_TIMEOUT_MS: '1000' }, dir)).toThrow(
      'env: SERVICE_HEADERS_TIMEOUT_MS: must not exceed SERVICE_REQUEST_TIMEOUT_MS (1000)',
    );
  });

  it('resolves a relative data dir against cwd', () => {
    expect(loadServerSettings({ SERVICE_DATA_DIR: 'state/db' }, dir).dataDir).toBe(path.join(dir, 'state', 'db'));
  });

  it('names the variable in errors and reports them all', () => {
    expect(() => loadServerSettings({ SERVICE_PORT: 'x' }, dir)).toThrow('env: SERVICE_PORT: expected an integer 0..65535, got "x"');
    expect(() => loadServerSettings({ SERVICE_PORT: '70000' }, dir)).toThrow('env: SERVICE_PORT: expected an integer 0..65535, got "70000"');
    const err = configError(() =>
      loadServerSettings(
        {
          LOG_LEVEL: 'loud',
          SERVICE_CLUSTER_THRESHOLD: '2',
          SERVICE_CLICKHOUSE_DATABASE: 'x; DROP',
          SERVICE_QUEUE_VISIBILITY_MS: '5',
          SERVICE_CLICKHOUSE_URL: 'clickhouse:8123',
        },
        dir,
      ),
    );
    expect(err).toBeInstanceOf(AggregateConfigError);
    for (const name of ['LOG_LEVEL', 'SERVICE_CLUSTER_THRESHOLD', 'SERVICE_CLICKHOUSE_DATABASE', 'SERVICE_QUEUE_VISIBILITY_MS', 'SERVICE_CLICKHOUSE_URL']) {
      expect(err.message).toContain(`env: ${name}: expected `);
    }
  });

  it('treats empty variables as unset', () => {
    expect(loadServerSettings({ SERVICE_PORT: '', SERVICE_ADMIN_TOKEN: '' }, dir)).toMatchObject({ port: 8080 });
    expect(loadServerSettings({ SERVICE_ADMIN_TOKEN: '' }, dir).adminToken).toBeUndefined();
  });

  it('lists every variable it reads with defaults', () => {
    const names = SERVER_ENV_VARS.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining([
        'SERVICE_PORT',
        'SERVICE_HOST',
        'SERVICE_DATA_DIR',
        'SERVICE_CLICKHOUSE_URL',
        'SERVICE_CLICKHOUSE_USER',
        'SERVICE_CLICKHOUSE_PASSWORD',
        'SERVICE_CLICKHOUSE_DATABASE',
        'SERVICE_ADMIN_TOKEN',
        'SERVICE_AGENT_TOKEN',
        'LOG_LEVEL',
        'SERVICE_LOG_REQUESTS',
        'SERVICE_QUEUE_VISIBILITY_MS',
        'SERVICE_MAX_QUEUE_DEPTH',
        'POLL_INTERVAL_MS',
        'SERVICE_QUEUE_MAX_ATTEMPTS',
        'SERVICE_QUEUE_RETRY_BACKOFF_MS',
        'SERVICE_QUEUE_MAX_BYTES',
        'SERVICE_ROLE',
        'SERVICE_QUEUE_URL',
        'SERVICE_QUEUE_PREFIX',
        'SERVICE_QUEUE_PARTITIONS',
        'SERVICE_QUEUE_CONNECT_TIMEOUT_MS',
        'SERVICE_PARTITION_LEASE_TTL_MS',
        'SERVICE_MIN_FREE_BYTES',
        'SERVICE_RATE_LIMIT_MAX',
        'SERVICE_RATE_LIMIT_WINDOW_MS',
        'SERVICE_CLUSTER_THRESHOLD',
        'SERVICE_PIPELINE_THREAD',
        'SERVICE_ARTIFACT_RETENTION_DAYS',
        'SERVICE_EXECUTION_RETENTION_DAYS',
        'SERVICE_RETENTION_SWEEP_MS',
        'SERVICE_PUBLIC_API_URL',
        'SERVICE_SELF_OTEL_ENDPOINT',
        'SERVICE_SELF_OTEL_INTERVAL_MS',
        'SERVICE_S3_BUCKET',
        'SERVICE_S3_ENDPOINT',
        'SERVICE_S3_PUBLIC_ENDPOINT',
        'SERVICE_S3_REGION',
        'SERVICE_S3_ACCESS_KEY_ID',
        'SERVICE_S3_SECRET_ACCESS_KEY',
        'SERVICE_S3_FORCE_PATH_STYLE',
        'SERVICE_SQL_ENABLED',
        'SERVICE_SQL_PORT',
        'SERVICE_SQL_MAX_EXECUTION_TIME',
        'SERVICE_SQL_MAX_RESULT_ROWS',
        'SERVICE_SQL_MAX_MEMORY',
        'SERVICE_SQL_MAX_THREADS',
        'SERVICE_SQL_MAX_CONCURRENT',
        'SERVICE_DASHBOARD_ENABLED',
        'SERVICE_DASHBOARD_SESSION_TTL_HOURS',
        'SERVICE_HEADERS_TIMEOUT_MS',
        'SERVICE_REQUEST_TIMEOUT_MS',
        'SERVICE_MAX_CONNECTIONS',
        'SERVICE_MAX_CONNECTIONS_PER_ADDRESS',
        'SERVICE_MAX_CONCURRENT_BODIES',
        'SERVICE_BODY_WAIT_MS',
      ]),
    );
    expect(names).toHaveLength(57);
    expect(SERVER_ENV_VARS.find((v) => v.name === 'SERVICE_PORT')?.default).toBe('8080');
    expect(SERVER_ENV_VARS.find((v) => v.name === 'SERVICE_ADMIN_TOKEN')?.default).toBeUndefined();
    expect(SERVER_ENV_VARS.every((v) => v.description.length > 0)).toBe(true);
  });
});

// Reporter settings: service.yml / env layering, the transport variables, and errors that name
// the variable; plus the retry timing of delivery.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../client/src/contract/config/errors.js';
import { parseRetryAfterMs, retryDelayMs, DEFAULT_RETRY_POLICY } from '../../client/src/reporter/deliver.js';
import { DEFAULT_BUFFER_DIR, DEFAULT_ENDPOINT, describeReporterSettings, loadReporterSettings } from '../../client/src/reporter/settings.js';

let dir: string;
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fh-reporter-settings-'));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function cwdWith(name: string, yml?: string): Promise<string> {
  const d = path.join(dir, name);
  await fs.mkdir(d, { recursive: true });
  if (yml !== undefined) await fs.writeFile(path.join(d, 'service.yml'), yml);
  return d;
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadReporterSettings', () => {
  it('defaults', async () => {
    const cwd = await cwdWith('defaults');
    const s = loadReporterSettings({ env: {}, cwd });
    expect(s).toMatchObject({
      configFile: null,
      endpoint: DEFAULT_ENDPOINT,
      endpointSource: 'default',
      token: undefined,
      transport: 'otlp',
      compression: 'none',
      bufferDir: DEFAULT_BUFFER_DIR,
      sampleRate: 1,
      shard: undefined,
      idempotencyKey: undefined,
      channels: [],
      warnings: [],
    });
  });

  it('endpoint and project from service.yml, overridden by SERVICE_ENDPOINT; channels from the file', async () => {
    const cwd = await cwdWith(
      'file',
      'project: web\nendpoint: https://flakes.acme.dev/\nnotifications:\n  channels:\n    - kind: slack\n      target: https://hooks.slack.com/services/T/B/X\n',
    );
    const fromFile = loadReporterSettings({ env: {}, cwd });
    expect(fromFile).toMatchObject({ project: 'web', endpoint: 'https://flakes.acme.dev', endpointSource: 'file' });
    expect(fromFile.channels).toEqual([{ kind: 'slack', target: 'https://hooks.slack.com/services/T/B/X' }]);
    const fromEnv = loadReporterSettings({ env: { SERVICE_ENDPOINT: 'http://127.0.0.1:9999' }, cwd });
    expect(fromEnv).toMatchObject({ endpoint: 'http://127.0.0.1:9999', endpointSource: 'env', project: 'web' });
  });

  it('a token in the config file is an error pointing at SERVICE_TOKEN', async () => {
    const cwd = await cwdWith('token-in-file', 'project: web\ntoken: fh_0123\n');
    expect(errorOf(() => loadReporterSettings({ env: {}, cwd })).message).toBe('service.yml: token: tokens never belong in the config file; set SERVICE_TOKEN');
  });

  it('transport variables', async () => {
    const cwd = await cwdWith('transport');
    const s = loadReporterSettings({
      env: {
        SERVICE_TOKEN: 'fh_x',
        SERVICE_TRANSPORT: 'json',
        SERVICE_COMPRESSION: 'gzip',
        SERVICE_BUFFER_DIR: 'buf',
        SERVICE_SAMPLE_RATE: '0.25',
        SERVICE_SHARD_INDEX: '2',
        SERVICE_SHARD_TOTAL: '3',
        SERVICE_IDEMPOTENCY_KEY: 'ci-run-4711',
        SERVICE_COMMIT_SHA: 'ABCDEF1',
        SERVICE_BRANCH: 'main',
        SERVICE_CODEOWNERS_FILE: 'meta/OWNERS',
      },
      cwd,
    });
    expect(s).toMatchObject({
      token: 'fh_x',
      transport: 'json',
      compression: 'gzip',
      bufferDir: path.join(cwd, 'buf'),
      sampleRate: 0.25,
      shard: { index: 2, total: 3 },
      idempotencyKey: 'ci-run-4711',
      commitSha: 'abcdef1',
      branch: 'main',
      codeownersFile: path.join(cwd, 'meta/OWNERS'),
    });
    const shown = describeReporterSettings(s);
    expect(JSON.stringify(shown)).not.toContain('fh_x');
    expect(shown).toMatchObject({ tokenPresent: true, idempotencyKeySource: 'SERVICE_IDEMPOTENCY_KEY', shard: { index: 2, total: 3 } });
  });

  it('shards: total 1 is unsharded; one of the two is a warning, not a shard', async () => {
    const cwd = await cwdWith('shards');
    expect(loadReporterSettings({ env: { SERVICE_SHARD_INDEX: '1', SERVICE_SHARD_TOTAL: '1' }, cwd }).shard).toBeUndefined();
    const half = loadReporterSettings({ env: { SERVICE_SHARD_INDEX: '2' }, cwd });
    expect(half.shard).toBeUndefined();
    expect(half.warnings).toEqual(['SERVICE_SHARD_INDEX is set but SERVICE_SHARD_TOTAL is not; both are needed, so this run is reported as unsharded']);
    expect(errorOf(() => loadReporterSettings({ env: { SERVICE_SHARD_INDEX: '4', SERVICE_SHARD_TOTAL: '3' }, cwd })).message).toContain(
      'env: SERVICE_SHARD_INDEX: shard 4 of 3',
    );
  });

  it('bad values name the variable and quote the value, all at once', async () => {
    const cwd = await cwdWith('bad');
    const err = errorOf(() =>
      loadReporterSettings({
        env: { SERVICE_TRANSPORT: 'grpc', SERVICE_SAMPLE_RATE: '1.5', SERVICE_COMMIT_SHA: 'main', SERVICE_SHARD_INDEX: '0', SERVICE_COMPRESSION: 'br' },
        cwd,
      }),
    );
    expect(err.message.split('\n')).toEqual([
      'env: SERVICE_TRANSPORT: expected otlp or json, got "grpc"',
      'env: SERVICE_COMPRESSION: expected gzip or none, got "br"',
      'env: SERVICE_SAMPLE_RATE: expected a number between 0 and 1, got "1.5"',
      'env: SERVICE_SHARD_INDEX: expected an integer ≥ 1, got "0"',
      'env: SERVICE_COMMIT_SHA: expected 7 to 40 hex characters, got "main"',
    ]);
  });
});

describe('retry timing', () => {
  it('Retry-After in seconds or as a date, capped', () => {
    expect(parseRetryAfterMs('2')).toBe(2000);
    expect(parseRetryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfterMs('soon')).toBeUndefined();
    expect(parseRetryAfterMs(null)).toBeUndefined();
    expect(retryDelayMs(1, '3', DEFAULT_RETRY_POLICY)).toBe(3000);
    expect(retryDelayMs(1, '3600', DEFAULT_RETRY_POLICY)).toBe(DEFAULT_RETRY_POLICY.maxRetryAfterMs);
  });

  it('exponential backoff with half jitter, bounded', () => {
    const p = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(retryDelayMs(1, null, p, () => 0)).toBe(50);
    expect(retryDelayMs(1, null, p, () => 1)).toBe(100);
    expect(retryDelayMs(3, null, p, () => 1)).toBe(400);
    expect(retryDelayMs(10, null, p, () => 1)).toBe(1000);
    expect(retryDelayMs(10, null, p, () => 0)).toBe(500);
  });
});

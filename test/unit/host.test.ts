// The one Host builder: what components see of the daemon's settings (and what they do not), and
// the HTTP-side fields only where they are given.
import { describe, expect, it } from 'vitest';
import { loadServerSettings } from '../../src/config/daemon-env.js';
import { loadServiceConfig } from '../../src/config/service-yml.js';
import type { ResolvedServiceConfig } from '../../src/config/project-settings.js';
import { createLogger } from '../../src/logger.js';
import { buildHost, pipelineSettings } from '../../src/pipeline/host.js';
import type { Store } from '../../src/store/client.js';

const cwd = '/tmp/fh-host-test';

describe('pipelineSettings', () => {
  it('keeps the data dir, cluster threshold, notifications, tracker and AI; no listener, storage credential or admin token', () => {
    const server = loadServerSettings(
      {
        SERVICE_ADMIN_TOKEN: 'fha_secret',
        SERVICE_CLICKHOUSE_URL: 'http://ch:8123',
        SERVICE_CLICKHOUSE_PASSWORD: 'ch-secret',
        SERVICE_CLUSTER_THRESHOLD: '0.7',
        SERVICE_TRACKER_TOKEN: 'ghp_x',
        SERVICE_SLACK_WEBHOOK: 'https://hooks.slack.com/services/T/B/X',
        SERVICE_AI_PROVIDER: 'ollama',
      },
      cwd,
    );
    const s = pipelineSettings(server);
    expect(Object.keys(s).sort()).toEqual(['ai', 'clusterThreshold', 'dataDir', 'notifications', 'tracker']);
    expect(s).toMatchObject({ dataDir: server.dataDir, clusterThreshold: 0.7, tracker: { token: 'ghp_x' }, ai: { provider: 'ollama' }, notifications: { slackWebhook: 'https://hooks.slack.com/services/T/B/X' } });
    expect(s.notifications).toBe(server.notifications);
    expect(JSON.stringify(s)).not.toMatch(/fha_secret|ch-secret/);
    // Without SERVICE_AI_PROVIDER the key is absent, not undefined (it crosses to the pipeline thread as is).
    expect('ai' in pipelineSettings(loadServerSettings({}, cwd))).toBe(false);
  });
});

describe('buildHost', () => {
  const logger = createLogger('silent');
  const store = { database: 'db' } as Store;
  const service = loadServiceConfig({ env: {}, cwd });
  const settings = pipelineSettings(loadServerSettings({}, cwd));
  const outbox = { append: async () => {} };
  const asked: string[] = [];
  const projectConfigs = {
    base: service,
    get: async (projectId: string) => {
      asked.push(projectId);
      return { config: service.config, sources: {} } as unknown as ResolvedServiceConfig;
    },
  };

  it('reads per-project policy through the thread’s cache, service policy from its base; no HTTP side on the pipeline thread', async () => {
    const host = buildHost({ logger, store, projectConfigs, settings, outbox });
    expect(host.service).toBe(service.config);
    expect(host.settings).toBe(settings);
    expect(host.store).toBe(store);
    expect(host.outbox).toBe(outbox);
    await host.projectConfig('p1');
    expect(asked).toEqual(['p1']);
    expect('http' in host).toBe(false);
    expect('ingest' in host).toBe(false);
  });

  it('carries the route table and the ingest service on the thread that serves HTTP', () => {
    const http = { add: () => {} };
    const ingest = { accept: async () => ({ receiptId: 'r', acceptedExecutions: 0, deduplicated: false }) as never };
    const host = buildHost({ logger, store, projectConfigs, settings, outbox, http, ingest });
    expect(host.http).toBe(http);
    expect(host.ingest).toBe(ingest);
  });
});

// The one Host builder: what components see of the daemon's settings (and what they do not), and
// the HTTP-side fields only where they are given. No store: processors and exporters get their
// repositories through the repositories extension (clickhouse_storage), asked for by kind and id.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { processingRegistry } from '../../src/builtin/processing.js';
import { loadServerSettings } from '../../src/config/daemon-env.js';
import { loadServiceConfig } from '../../src/config/service-yml.js';
import type { ResolvedServiceConfig } from '../../client/src/contract/config/project-settings.js';
import { createLogger } from '../../src/telemetry/logger.js';
import type { ComponentKind, Host, HostExtensions, ReceiverDoor } from '../../src/pipeline/component.js';
import { ServiceExtensions } from '../../src/pipeline/extensions.js';
import { validatePipelineDoc } from '../../src/pipeline/graph.js';
import { buildHost, pipelineSettings } from '../../src/pipeline/host.js';
import { WorkBatch, type WorkItem } from '../../src/pipeline/work-batch.js';
import { rollupsProcessorFactory } from '../../src/processors/rollups.js';
import type { Store } from '../../src/store/client.js';
import type { Repositories } from '../../src/store/repositories.js';
import { TestRepo } from '../../src/store/tests.js';

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
    const host = buildHost({ logger, projectConfigs, settings, outbox });
    expect(host.service).toBe(service.config);
    expect(host.settings).toBe(settings);
    expect(host.outbox).toBe(outbox);
    await host.projectConfig('p1');
    expect(asked).toEqual(['p1']);
    expect('door' in host).toBe(false);
  });

  it('gives receivers one door where ingest is served: routes, the ingest service, the admission and the listeners', () => {
    const http = { add: () => {} };
    const ingest = { accept: async () => ({ receiptId: 'r', acceptedExecutions: 0, deduplicated: false }) as never };
    const admission = {} as unknown as ReceiverDoor['admission'];
    const listeners = { add: () => {} };
    const host = buildHost({ logger, projectConfigs, settings, outbox, door: { http, ingest, admission, listeners } });
    expect(host.door).toEqual({ http, ingest, admission, listeners });
    expect(Object.keys(host).sort()).toEqual(['door', 'extensions', 'logger', 'outbox', 'projectConfig', 'service', 'settings']);
  });
});

describe('the Host has no store: repositories come through the extension', () => {
  const logger = createLogger('silent');
  const service = loadServiceConfig({ env: {}, cwd });
  const settings = pipelineSettings(loadServerSettings({}, cwd));
  const projectConfigs = { base: service, get: async () => ({ config: service.config, sources: {} }) as unknown as ResolvedServiceConfig };
  const outbox = { append: async () => {} };

  it('builds a Host with logger, configuration, outbox and extensions, and no store', () => {
    expectTypeOf<Host>().not.toHaveProperty('store');
    const host = buildHost({ logger, projectConfigs, settings, outbox });
    expect('store' in host).toBe(false);
    expect(Object.keys(host).sort()).toEqual(['extensions', 'logger', 'outbox', 'projectConfig', 'service', 'settings']);
  });

  it('a processor asks the extensions for its repositories, by its kind and id, and reads through them', async () => {
    const asked: [ComponentKind, string][] = [];
    const histories: [string, string][] = [];
    const rollups = {
      suiteHistory: async (projectId: string, today: string) => {
        histories.push([projectId, today]);
        return new Map();
      },
    };
    const extensions: HostExtensions = {
      ids: ['clickhouse_storage'],
      storage: () => {
        throw new Error('not used');
      },
      repositories: (kind, id) => {
        asked.push([kind, id]);
        return { rollups } as unknown as Repositories;
      },
    };
    const host = buildHost({ logger, projectConfigs, settings, outbox, extensions });
    const p = rollupsProcessorFactory.createExecutions!({}, { id: 'rollups/suites', logger });
    await p.start(host);
    expect(asked).toEqual([['processor', 'rollups/suites']]);
    const now = Date.parse('2024-05-01T12:00:00Z');
    const item = { executions: [{ projectId: 'p1', input: { status: 'pass', startedAt: now, suite: 'S', durationMs: 5 } }] } as unknown as WorkItem;
    await p.processBatch(new WorkBatch({ leaseId: 'l1', now, items: [item] }));
    expect(histories).toEqual([['p1', '2024-05-01']]);
  });

  it('the pipeline file gets a default clickhouse_storage, built over the thread\'s store; without one, a processor cannot start', async () => {
    const doc = {
      receivers: { otlp: {} },
      processors: { normalize: {}, identity: {}, rollups: {} },
      exporters: { debug: {} },
      service: { pipelines: { executions: { receivers: ['otlp'], processors: ['normalize', 'identity', 'rollups'], exporters: ['debug'] } } },
    };
    const registry = processingRegistry([{ type: 'otlp', signals: ['executions'] }]);
    const graph = validatePipelineDoc(doc, registry, 'p.yaml');
    expect(graph.extensions.map((e) => [e.id, e.implicit])).toEqual([
      ['file_storage', true],
      ['clickhouse_storage', true],
    ]);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-host-'));
    try {
      // Over a store: each component gets its own set (a repository's cache is the component's own).
      const store = { database: 'db', embedded: true } as Store;
      const withStore = new ServiceExtensions(graph.extensions, { dataDir, logger, store });
      await withStore.start();
      const a = withStore.repositories('processor', 'scoring');
      const b = withStore.repositories('processor', 'quarantine');
      expect(a.tests).toBeInstanceOf(TestRepo);
      expect(a.tests).not.toBe(b.tests);
      await withStore.shutdown();

      // Where the process has no store, the extension refuses and names the component.
      const storeless = new ServiceExtensions(graph.extensions, { dataDir, logger });
      await storeless.start();
      const p = rollupsProcessorFactory.createExecutions!({}, { id: 'rollups', logger });
      await expect(p.start(buildHost({ logger, projectConfigs, settings, outbox, extensions: storeless }))).rejects.toThrow(
        'clickhouse_storage: processor rollups asked for repositories where this process has no store',
      );
      await storeless.shutdown();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

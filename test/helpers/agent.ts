// Agent-mode test plumbing, shared by the otlp_http and otlp_grpc forwarding tests: a port free now
// (so a gateway restarts on the same address), the gateway's runs whose branch starts with a
// prefix, and the agent itself (src/main/agent.ts) in this process.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { startAgent, type Agent } from '../../src/main/agent.js';
import { loadServerSettings } from '../../src/config/daemon-env.js';
import { loadServiceConfig } from '../../src/config/service-yml.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { loadGraph } from '../../src/main/pipeline-file.js';
import { expect } from 'vitest';
import { nativeBatch, type TestDaemon } from './daemon.js';
import { SCRATCH_DIR } from './scratch.js';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface RunItem {
  id: string;
  branch: string;
  counts: { total: number };
}

export async function gatewayRuns(gw: Pick<TestDaemon, 'request'>, prefix: string): Promise<RunItem[]> {
  const out: RunItem[] = [];
  let cursor: string | null = null;
  do {
    const res = await gw.request('GET', `/v1/runs?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    if (res.status !== 200) throw new Error(`GET /v1/runs: ${res.status} ${res.text}`);
    out.push(...(res.json.items as RunItem[]).filter((r) => r.branch.startsWith(prefix)));
    cursor = res.json.nextCursor as string | null;
  } while (cursor);
  return out;
}

/**
 * The agent (src/main/agent.ts: no store) in this test process, on a pipeline file that needs no store,
 * with its own data dir and a fixed SERVICE_AGENT_TOKEN. `${env:…}` in the file is read from the
 * process environment, as the CLI's `serve` does.
 */
export interface TestAgent {
  agent: Agent;
  url: string;
  /** SERVICE_AGENT_TOKEN: what senders present. */
  token: string;
  dataDir: string;
  request(method: string, urlPath: string, opts?: { token?: string | null; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; headers: Headers; json: any; text: string }>;
  /** Waits until the agent's queue is empty (every accepted job forwarded, or dead). */
  settled(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startTestAgent(opts: { pipelineFile: string; env?: Record<string, string>; work?: boolean }): Promise<TestAgent> {
  const dataDir = mkdtempSync(path.join(SCRATCH_DIR, 'fh-test-agent-'));
  const token = `agent-${randomBytes(12).toString('hex')}`;
  const env: Record<string, string> = {
    SERVICE_DATA_DIR: dataDir,
    SERVICE_PORT: '0',
    SERVICE_HOST: '127.0.0.1',
    SERVICE_AGENT_TOKEN: token,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...opts.env,
  };
  const settings = loadServerSettings(env, dataDir);
  const service = loadServiceConfig({ env, cwd: dataDir });
  const agent = await startAgent({ settings, service, logger: createLogger(settings.logLevel), graph: loadGraph(opts.pipelineFile), work: opts.work, announce: () => {} });
  let closed = false;
  const ta: TestAgent = {
    agent,
    url: agent.url,
    token,
    dataDir,
    async request(method, urlPath, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      const tok = o.token === undefined ? token : o.token;
      if (tok) headers.authorization = `Bearer ${tok}`;
      let body: string | undefined;
      if (o.body !== undefined) {
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(`${agent.url}${urlPath}`, { method, headers, body });
      const text = await res.text();
      let json: any;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, json, text };
    },
    async settled(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (agent.queue.depth() > 0) {
        if (Date.now() > deadline) throw new Error(`agent: queue not empty after ${timeoutMs} ms (${JSON.stringify(agent.queue.stats())})`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await agent.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return ta;
}

/**
 * The outage both forwarding exporters must survive: 10 runs of 20 executions while the gateway is
 * up, 10 more while it is down (every one 202, held in the agent's queue), then the gateway back on
 * the same address; every run must arrive once with its executions once. Branches are
 * `<prefix><i>`. Returns the restarted gateway (`track` also receives it, for closing).
 */
export async function forwardAcrossOutage(agent: TestAgent, gateway: TestDaemon, prefix: string, track: (d: TestDaemon) => void): Promise<TestDaemon> {
  const PER_RUN = 20;
  const send = async (from: number, count: number): Promise<void> => {
    for (let i = from; i < from + count; i++) {
      const res = await agent.request('POST', '/v1/ingest', { body: nativeBatch({ n: PER_RUN, resource: { branch: `${prefix}${i}` } }) });
      expect(res.status).toBe(202);
    }
  };

  // Gateway up: the first runs go through.
  await send(0, 10);
  await agent.settled(20_000);

  // Gateway down: the agent still takes runs (202); they wait in its queue.
  const sent = (): number => Object.values(agent.agent.runtime.stats.components.exporters).reduce((n, e) => n + e.sent, 0);
  const sentBefore = sent();
  await gateway.stop();
  await send(10, 10);
  // The agent holds a lease it cannot forward (its exporter retries meanwhile), the rest queued behind it.
  await gateway.waitFor(async () => agent.agent.queue.stats().inflight > 0, 30_000);
  expect(agent.agent.queue.depth()).toBe(10);
  expect(sent()).toBe(sentBefore);

  // Gateway back on the same address: the queued runs are forwarded.
  const gw = await gateway.restart();
  track(gw);
  await agent.settled(60_000);
  const runs = await gw.waitFor(async () => {
    const r = await gatewayRuns(gw, prefix);
    return r.length >= 20 && r.every((x) => x.counts.total === PER_RUN) ? r : undefined;
  }, 60_000);

  // Exactly once: each run once, each with its executions once.
  const branches = runs.map((r) => r.branch).sort();
  expect(branches).toEqual(Array.from({ length: 20 }, (_, i) => `${prefix}${i}`).sort());
  expect(runs.reduce((n, r) => n + r.counts.total, 0)).toBe(20 * PER_RUN);
  for (const r of runs) {
    const detail = await gw.request('GET', `/v1/runs/${r.id}`);
    expect(detail.json.executions).toHaveLength(PER_RUN);
    expect(new Set((detail.json.executions as { title: string }[]).map((e) => e.title)).size).toBe(PER_RUN);
  }
  expect(agent.agent.queue.stats().dead).toBe(0);
  return gw;
}

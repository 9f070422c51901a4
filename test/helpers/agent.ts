// Agent-mode test plumbing, shared by the otlp_http and otlp_grpc forwarding tests: a port free now
// (so a gateway restarts on the same address), the gateway's runs whose branch starts with a
// prefix, and the agent itself (src/agent.ts) in this process.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { startAgent, type Agent } from '../../src/agent.js';
import { loadServerSettings } from '../../src/config/daemon-env.js';
import { loadServiceConfig } from '../../src/config/service-yml.js';
import { createLogger } from '../../src/logger.js';
import { loadGraph } from '../../src/pipeline-file.js';
import type { TestDaemon } from './daemon.js';
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
 * The agent (src/agent.ts: no store) in this test process, on a pipeline file that needs no store,
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

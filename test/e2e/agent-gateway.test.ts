// Agent and gateway as two real processes (`flakehouse serve`), as deployed: the agent runs
// pipelines/agent.yaml (no store: src/main/agent.ts) and forwards to the gateway (the full daemon). CI
// keeps sending to the agent while the gateway is killed with SIGKILL and later started again on
// the same port and data dir: every send gets 202, and afterwards every run is at the gateway
// exactly once. The agent never opens chDB, and takes only its own token (SERVICE_AGENT_TOKEN).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { nativeBatch } from '../helpers/daemon.js';
import { freePort } from '../helpers/agent.js';
import { bootstrapToken, REPO_ROOT, startServerProcess, type ServerProcess } from '../helpers/process.js';

const root = mkdtempSync(path.join(tmpdir(), 'fh-e2e-agent-'));
const gatewayDir = path.join(root, 'gateway');
const agentDir = path.join(root, 'agent');
const processes: ServerProcess[] = [];

afterAll(async () => {
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) await p.kill9();
  rmSync(root, { recursive: true, force: true });
});

/** pipelines/agent.yaml with short retry intervals: the gateway is down for seconds, not minutes. */
function agentPipeline(): string {
  const doc = parse(readFileSync(path.join(REPO_ROOT, 'pipelines/agent.yaml'), 'utf8')) as { exporters: { otlp_http: Record<string, unknown> } };
  doc.exporters.otlp_http.retry_on_failure = { enabled: true, initial_interval: '100ms', max_interval: '300ms', max_elapsed_time: '60s' };
  doc.exporters.otlp_http.timeout = '3s';
  const file = path.join(root, 'agent.yaml');
  writeFileSync(file, stringify(doc));
  return file;
}

async function post(url: string, token: string | null, body: unknown): Promise<number> {
  const res = await fetch(`${url}/v1/ingest`, {
    method: 'POST',
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

async function gatewayRuns(url: string, token: string, branch: string): Promise<{ id: string; commitSha: string; counts: { total: number } }[]> {
  const items: { id: string; commitSha: string; counts: { total: number } }[] = [];
  let cursor: string | null = null;
  do {
    const res = await fetch(`${url}/v1/runs?branch=${branch}&limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`GET /v1/runs: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as { items: typeof items; nextCursor: string | null };
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

function maps(pid: number): string {
  return readFileSync(`/proc/${pid}/maps`, 'utf8');
}

describe('agent and gateway as processes', () => {
  it('every run sent to the agent reaches the gateway exactly once across a SIGKILL and restart of the gateway', async () => {
    const port = await freePort();
    const gatewayEnv = { SERVICE_DATA_DIR: gatewayDir, SERVICE_PORT: String(port), SERVICE_DASHBOARD_ENABLED: 'false' };
    let gateway = await startServerProcess(gatewayEnv);
    processes.push(gateway);
    const gatewayToken = bootstrapToken(gatewayDir);

    const agentToken = `agent-${randomBytes(16).toString('hex')}`;
    const agent = await startServerProcess(
      { SERVICE_DATA_DIR: agentDir, SERVICE_AGENT_TOKEN: agentToken, SERVICE_GATEWAY_ENDPOINT: gateway.url, SERVICE_GATEWAY_TOKEN: gatewayToken },
      60_000,
      [],
      ['--pipeline', agentPipeline()],
    );
    processes.push(agent);
    expect(agent.output()).toMatch(/agent mode/);

    // Not the agent's token: refused before anything is queued.
    const body = nativeBatch({ n: 1, resource: { branch: 'agent-e2e-refused' } });
    expect(await post(agent.url, null, body)).toBe(401);
    expect(await post(agent.url, gatewayToken, body)).toBe(401);

    // CI sends all along; each send must get 202 from the agent, whatever the gateway is doing.
    const BRANCH = 'agent-e2e';
    const sent: { commitSha: string; n: number }[] = [];
    const statuses: number[] = [];
    let sending = true;
    const ci = (async () => {
      for (let i = 0; sending; i++) {
        const commitSha = randomBytes(20).toString('hex');
        const n = 3 + (i % 4);
        statuses.push(await post(agent.url, agentToken, nativeBatch({ n, resource: { branch: BRANCH, commitSha } })));
        sent.push({ commitSha, n });
        await new Promise((r) => setTimeout(r, 40));
      }
    })();

    /** Until CI has sent `n` runs in all (ceilings are generous: only a machine's speed decides). */
    const sentAtLeast = async (n: number): Promise<void> => {
      const deadline = Date.now() + 30_000;
      while (sent.length < n) {
        if (Date.now() > deadline) throw new Error(`CI sent ${sent.length} runs, not ${n}, within 30 s (statuses ${JSON.stringify(statuses.slice(-5))})`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    // Runs before the kill, while the gateway is down, and after its restart: 10 each at least.
    await sentAtLeast(10);
    await gateway.kill9();
    await sentAtLeast(sent.length + 10);
    // Meanwhile the runs wait in the agent's queue (its admin token is in its data dir).
    const stats = await fetch(`${agent.url}/v1/admin/stats`, { headers: { authorization: `Bearer ${readFileSync(path.join(agentDir, 'admin-token'), 'utf8').trim()}` } });
    const queue = ((await stats.json()) as { queue: { pending: number; inflight: number } }).queue;
    expect(queue.pending + queue.inflight).toBeGreaterThan(0);
    gateway = await startServerProcess(gatewayEnv);
    processes.push(gateway);
    await sentAtLeast(sent.length + 10);
    sending = false;
    await ci;

    expect(sent.length).toBeGreaterThan(20);
    expect(statuses.every((s) => s === 202)).toBe(true);

    // Until the gateway has every run (or 90 s: the agent forwards its backlog as fast as a busy
    // machine lets the gateway store it; a loaded machine also means more runs sent meanwhile).
    const deadline = Date.now() + 90_000;
    let runs = await gatewayRuns(gateway.url, gatewayToken, BRANCH);
    while (runs.length < sent.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      runs = await gatewayRuns(gateway.url, gatewayToken, BRANCH);
    }
    // Exactly once: every run, none twice, each with all its executions.
    expect(runs.map((r) => r.commitSha).sort()).toEqual(sent.map((s) => s.commitSha).sort());
    expect(new Set(runs.map((r) => r.id)).size).toBe(sent.length);
    const expected = new Map(sent.map((s) => [s.commitSha, s.n]));
    for (const r of runs) expect(r.counts.total).toBe(expected.get(r.commitSha));

    // The agent never opened chDB: no database under its data dir, the library not in its memory
    // (and the check does see it in the gateway).
    expect(existsSync(path.join(agentDir, 'chdb'))).toBe(false);
    expect(existsSync(path.join(gatewayDir, 'chdb'))).toBe(true);
    expect(maps(agent.child.pid!)).not.toMatch(/chdb/i);
    expect(maps(gateway.child.pid!)).toMatch(/libchdb/);

    expect(await agent.stop()).toBe(0);
    expect(await gateway.stop()).toBe(0);
  }, 240_000);
});

// Agent mode (docs/pipeline.md "Agent mode"): the agent (src/main/agent.ts, no store) running
// pipelines/agent.yaml forwards what it receives to a gateway daemon with the otlp_http exporter.
// Senders authenticate with SERVICE_AGENT_TOKEN. CI's runs get 202 from the agent whether or not
// the gateway is up; across a gateway outage and restart every run arrives at the gateway exactly
// once (none lost, none duplicated), because the agent acks a lease only after the gateway
// accepted it and the forwarded ids make a re-send a duplicate the gateway drops.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { freePort, gatewayRuns, startTestAgent, type TestAgent, forwardAcrossOutage } from '../helpers/agent.js';
import { SCRATCH_DIR } from '../helpers/scratch.js';
import { otlpHttpConfigSchema, otlpHttpExporterFactory } from '../../src/exporters/otlp-http/index.js';
import { buildRun } from '../../src/domain/records.js';
import { WorkBatch } from '../../src/pipeline/work-batch.js';
import { leaseSink, type LeaseWrites } from '../../src/pipeline/lease-sink.js';
import { noStore } from '../../src/agent/no-store.js';
import type { Host } from '../../src/pipeline/component.js';
import type { IngestBatch } from '../../client/src/contract/batch.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { loadGraph } from '../../src/main/pipeline-file.js';
import { storeUsers } from '../../src/agent/mode.js';
import { build } from 'esbuild';

/** pipelines/agent.yaml with short retry intervals, so the test does not wait out 5 s backoffs. */
function agentPipeline(dir: string): string {
  const doc = parse(readFileSync(path.resolve('pipelines/agent.yaml'), 'utf8')) as { exporters: { otlp_http: Record<string, unknown> } };
  doc.exporters.otlp_http.retry_on_failure = { enabled: true, initial_interval: '100ms', max_interval: '500ms', max_elapsed_time: '60s' };
  doc.exporters.otlp_http.timeout = '5s';
  const file = path.join(dir, 'agent.yaml');
  writeFileSync(file, stringify(doc));
  return file;
}

const ENV_KEYS = ['SERVICE_GATEWAY_ENDPOINT', 'SERVICE_GATEWAY_TOKEN'] as const;

describe('agent mode: forwarding to a gateway', () => {
  const daemons: (TestDaemon | TestAgent)[] = [];
  /** Set by the first test, used by the throughput one. */
  let pair: { agent: TestAgent; gateway: TestDaemon } | undefined;
  const dir = mkdtempSync(path.join(SCRATCH_DIR, 'fh-agent-'));
  const envBefore = ENV_KEYS.map((k) => process.env[k]);
  afterAll(async () => {
    for (const d of daemons.reverse()) await d.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    ENV_KEYS.forEach((k, i) => {
      if (envBefore[i] === undefined) delete process.env[k];
      else process.env[k] = envBefore[i];
    });
  });

  it('every run sent to the agent arrives at the gateway exactly once across a gateway outage', async () => {
    const port = await freePort();
    const gateway = await startTestDaemon({ env: { SERVICE_PORT: String(port) } });
    daemons.push(gateway);
    // `${env:…}` in the pipeline file is read from the process environment.
    process.env.SERVICE_GATEWAY_ENDPOINT = gateway.url;
    process.env.SERVICE_GATEWAY_TOKEN = gateway.token;
    const agent = await startTestAgent({ pipelineFile: agentPipeline(dir) });
    daemons.push(agent);

    const gw = await forwardAcrossOutage(agent, gateway, 'fwd-', (d) => daemons.push(d));
    pair = { agent, gateway: gw };
  }, 180_000);

  it('a job exported twice (a re-send after a timeout, or in the half of a split lease) is stored once by the gateway; the forward does not pin the lease', async () => {
    if (!pair) throw new Error('needs the daemons of the first test');
    const gw = pair.gateway;
    const cfg = otlpHttpConfigSchema.parse({ endpoint: gw.url, headers: { authorization: `Bearer ${gw.token}` } });
    const exporter = otlpHttpExporterFactory.createExecutions!(cfg, { id: 'otlp_http', logger: createLogger('silent') });
    // The exporter reads no host service (it only posts).
    await exporter.start({} as Host);
    const raw = nativeBatch({ n: 7, resource: { branch: 'dup-0' } });
    const batch = { ...raw, run: { status: 'passed', startedAt: Date.parse(String((raw.run as { startedAt: string }).startedAt)) } } as unknown as IngestBatch;
    batch.executions = batch.executions.map((e) => ({ ...e, attempt: 1, startedAt: Date.parse('2026-11-20T10:00:00Z') }));
    const job = { id: 'j-dup', receiptId: 'r-dup', projectId: 'agent-project', source: 'native' as const, batch, receivedAt: Date.now(), attempts: 0 };
    const lease = (id: string): WorkBatch => new WorkBatch({ leaseId: id, items: [{ job, run: buildRun({ ...job }), executions: [] }], now: Date.now() });
    // The agent's store is not touched (an agent has none); nothing is recorded as written, so a
    // frozen lease that fails after forwarding may still be unfrozen and split.
    const writes: LeaseWrites = { wrote: false };
    await exporter.exportBatch(lease('l-dup'), leaseSink(noStore(), 'l-dup', writes));
    // The same job again under another lease id, as after a split: the same spans, the same keys.
    await exporter.exportBatch(lease('l-dup-half'), leaseSink(noStore(), 'l-dup-half', writes));
    expect(writes.wrote).toBe(false);
    await exporter.shutdown();
    await gw.settled(20_000);
    const runs = await gw.waitFor(async () => {
      const r = await gatewayRuns(gw, 'dup-');
      return r.length > 0 ? r : undefined;
    }, 20_000);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.counts.total).toBe(7);
  }, 60_000);

  it('measures forward throughput (executions/s from agent to gateway)', async () => {
    if (!pair) throw new Error('needs the daemons of the first test');
    const { agent, gateway: gw } = pair;
    const RUNS = 20;
    const PER_RUN = 500;
    const before = agent.agent.runtime.stats.stageMs.otlp_http ?? 0;
    const t0 = performance.now();
    for (let i = 0; i < RUNS; i++) {
      const res = await agent.request('POST', '/v1/ingest', { body: nativeBatch({ n: PER_RUN, resource: { branch: `bench-${i}` } }) });
      expect(res.status).toBe(202);
    }
    await agent.settled(60_000);
    const wallMs = performance.now() - t0;
    const exportMs = (agent.agent.runtime.stats.stageMs.otlp_http ?? 0) - before;
    const total = RUNS * PER_RUN;
    // stdout on purpose: the number the report and docs quote.
    console.log(
      `otlp_http forward: ${total} executions in ${RUNS} runs; exporter stage ${Math.round(exportMs)} ms = ${Math.round(total / (exportMs / 1000))} executions/s; ` +
        `ingest-to-forwarded wall ${Math.round(wallMs)} ms = ${Math.round(total / (wallMs / 1000))} executions/s`,
    );
    const runs = await gw.waitFor(async () => {
      const r = await gatewayRuns(gw, 'bench-');
      return r.length >= RUNS && r.every((x) => x.counts.total === PER_RUN) ? r : undefined;
    }, 60_000);
    expect(runs).toHaveLength(RUNS);
  }, 180_000);

  it('the agent needs no store, takes only its own token, and has no routes that need a store', async () => {
    if (!pair) throw new Error('needs the daemons of the first test');
    const { agent, gateway: gw } = pair;
    // The decision `serve` makes: pipelines/agent.yaml runs as an agent, the default pipeline does not.
    expect(storeUsers(loadGraph(path.resolve('pipelines/agent.yaml')))).toEqual([]);
    expect(storeUsers(loadGraph())).toEqual(expect.arrayContaining(['processors.identity', 'exporters.clickhouse']));
    // What src/main/agent.ts imports, statically or not: no store module, no database client.
    const { metafile } = await build({ entryPoints: ['src/main/agent.ts'], bundle: true, write: false, metafile: true, platform: 'node', format: 'esm', packages: 'external', outdir: path.join(dir, 'esbuild'), logLevel: 'silent' });
    const inputs = Object.keys(metafile.inputs);
    const packages = Object.values(metafile.inputs).flatMap((i) => i.imports.filter((x) => x.external).map((x) => x.path));
    expect(inputs).toContain('src/api/app.ts');
    expect(inputs.filter((f) => f.startsWith('src/store/') || f === 'src/main/daemon.ts' || f === 'src/builtin/components.ts')).toEqual([]);
    expect(packages.filter((p) => p === 'chdb' || p.startsWith('@clickhouse/'))).toEqual([]);

    const body = nativeBatch({ n: 1, resource: { branch: 'auth-0' } });
    expect((await agent.request('POST', '/v1/ingest', { token: null, body })).status).toBe(401);
    // A gateway project token is not the agent's: senders present SERVICE_AGENT_TOKEN only.
    expect((await agent.request('POST', '/v1/ingest', { token: gw.token, body })).status).toBe(401);
    expect((await agent.request('POST', '/v1/ingest', { token: `${agent.token}x`, body })).status).toBe(401);
    expect(agent.agent.queue.depth()).toBe(0);
    // The junit and otlp receivers take it too.
    expect((await agent.request('POST', '/v1/ingest/junit', { token: null, body: {} })).status).toBe(401);
    expect((await agent.request('POST', '/v1/traces', { token: null, body: {} })).status).toBe(401);

    expect((await agent.request('GET', '/health', { token: null })).json).toMatchObject({ status: 'ok', service: 'api' });
    // Routes that read the store do not exist here.
    for (const url of ['/v1/runs', '/v1/flaky', '/v1/health', '/v1/export', '/trpc/runs.list']) {
      const res = await agent.request('GET', url);
      expect(res.status, url).toBe(404);
    }
    // Operators' routes take the admin token (not the agent token).
    expect((await agent.request('GET', '/metrics')).status).toBe(401);
    expect((await agent.request('GET', '/metrics', { token: agent.agent.adminToken })).status).toBe(200);
    const stats = await agent.request('GET', '/v1/admin/stats', { token: agent.agent.adminToken });
    expect(stats.status).toBe(200);
    expect(stats.json.queue).toMatchObject({ pending: 0, dead: 0 });
    expect((await agent.request('GET', '/v1/admin/dead-jobs', { token: agent.agent.adminToken })).json.items).toEqual([]);
  }, 60_000);
});

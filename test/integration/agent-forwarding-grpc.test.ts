// Agent mode over OTLP/gRPC (docs/pipeline.md "Agent mode"): the agent (src/main/agent.ts, no store)
// running pipelines/examples/agent-grpc.yaml forwards with the otlp_grpc exporter to a gateway
// daemon whose otlp receiver listens for gRPC. As over HTTP (agent-forwarding.test.ts): across a gateway outage
// and restart every run arrives exactly once, because a lease is acked only after the gateway
// answered OK and the forwarded ids make a re-send a duplicate the gateway drops.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { freePort, gatewayRuns, startTestAgent, type TestAgent, forwardAcrossOutage } from '../helpers/agent.js';
import { grpcPipelineFile, rawExport } from '../helpers/otlp-grpc.js';
import { SCRATCH_DIR } from '../helpers/scratch.js';

/**
 * pipelines/examples/agent-grpc.yaml with short retry intervals, so the test does not wait out 5 s
 * backoffs, and the agent's own otlp receiver listening for gRPC too (its door takes the agent token).
 */
function agentPipeline(dir: string): string {
  const doc = parse(readFileSync(path.resolve('pipelines/examples/agent-grpc.yaml'), 'utf8')) as { receivers: Record<string, unknown>; exporters: { otlp_grpc: Record<string, unknown> } };
  doc.receivers.otlp = { protocols: { grpc: { endpoint: '127.0.0.1:0' }, http: {} } };
  doc.exporters.otlp_grpc.retry_on_failure = { enabled: true, initial_interval: '100ms', max_interval: '500ms', max_elapsed_time: '60s' };
  doc.exporters.otlp_grpc.timeout = '5s';
  const file = path.join(dir, 'agent.yaml');
  writeFileSync(file, stringify(doc));
  return file;
}

const ENV_KEYS = ['SERVICE_GATEWAY_GRPC_ENDPOINT', 'SERVICE_GATEWAY_TOKEN'] as const;

describe('agent mode: forwarding to a gateway over OTLP/gRPC', () => {
  const daemons: (TestDaemon | TestAgent)[] = [];
  let pair: { agent: TestAgent; gateway: TestDaemon } | undefined;
  const dir = mkdtempSync(path.join(SCRATCH_DIR, 'fh-agent-grpc-'));
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
    // A fixed gRPC port, so the gateway comes back on the same address after its restart.
    const grpcPort = await freePort();
    const gateway = await startTestDaemon({ pipelineFile: grpcPipelineFile(`127.0.0.1:${grpcPort}`) });
    daemons.push(gateway);
    const address = gateway.daemon.listeners.get('otlp:grpc');
    expect(address).toBe(`127.0.0.1:${grpcPort}`);
    process.env.SERVICE_GATEWAY_GRPC_ENDPOINT = address;
    process.env.SERVICE_GATEWAY_TOKEN = gateway.token;
    const agent = await startTestAgent({ pipelineFile: agentPipeline(dir) });
    daemons.push(agent);

    const gw = await forwardAcrossOutage(agent, gateway, 'gfwd-', (d) => daemons.push(d));
    pair = { agent, gateway: gw };
  }, 180_000);

  it('measures forward throughput (executions/s from agent to gateway)', async () => {
    if (!pair) throw new Error('needs the daemons of the first test');
    const { agent, gateway: gw } = pair;
    const RUNS = 20;
    const PER_RUN = 500;
    const before = agent.agent.runtime.stats.stageMs.otlp_grpc ?? 0;
    const t0 = performance.now();
    for (let i = 0; i < RUNS; i++) {
      const res = await agent.request('POST', '/v1/ingest', { body: nativeBatch({ n: PER_RUN, resource: { branch: `gbench-${i}` } }) });
      expect(res.status).toBe(202);
    }
    await agent.settled(60_000);
    const wallMs = performance.now() - t0;
    const exportMs = (agent.agent.runtime.stats.stageMs.otlp_grpc ?? 0) - before;
    const total = RUNS * PER_RUN;
    // stdout on purpose: the number the report and docs quote.
    console.log(
      `otlp_grpc forward: ${total} executions in ${RUNS} runs; exporter stage ${Math.round(exportMs)} ms = ${Math.round(total / (exportMs / 1000))} executions/s; ` +
        `ingest-to-forwarded wall ${Math.round(wallMs)} ms = ${Math.round(total / (wallMs / 1000))} executions/s`,
    );
    const runs = await gw.waitFor(async () => {
      const r = await gatewayRuns(gw, 'gbench-');
      return r.length >= RUNS && r.every((x) => x.counts.total === PER_RUN) ? r : undefined;
    }, 60_000);
    expect(runs).toHaveLength(RUNS);
    expect(agent.agent.queue.stats().dead).toBe(0);
  }, 180_000);

  it("the agent's gRPC listener authenticates with the agent token too", async () => {
    if (!pair) throw new Error('needs the daemons of the first test');
    const { agent, gateway: gw } = pair;
    const address = agent.agent.listeners.get('otlp:grpc')!;
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    const UNAUTHENTICATED = 16;
    expect((await rawExport(address, new Uint8Array())).error?.code).toBe(UNAUTHENTICATED);
    expect((await rawExport(address, new Uint8Array(), { authorization: `Bearer ${gw.token}` })).error?.code).toBe(UNAUTHENTICATED);
    // An empty ExportTraceServiceRequest: accepted, nothing to enqueue.
    const ok = await rawExport(address, new Uint8Array(), { authorization: `Bearer ${agent.token}` });
    expect(ok.error).toBeNull();
  }, 30_000);
});

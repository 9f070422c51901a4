// Three worker processes share the partitions of one NATS JetStream queue; one is killed with
// kill -9 while jobs keep coming. Every accepted job is processed, none twice except the ones the
// killed worker had in hand and never acked (a worker that takes a partition over starts at its
// oldest unacked job), and each project's jobs are processed in the order they were accepted.
//
// There is no ClickHouse server here for three workers to share, so the workers run a pipeline that
// needs no store (normalize → the `debug` exporter, which logs each lease's runs): what each
// process logs is what it processed, in order. The jobs are enqueued by the queue's own client,
// as an ingest process enqueues them.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsQueue } from '../../src/queue/nats/queue.js';
import { makeBatch } from '../integration/queue-contract.js';
import { natsServerAvailable, startNatsServer, type NatsServer } from '../helpers/nats.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';

const dirs: string[] = [];
const tempDir = (tag: string): string => {
  const dir = mkdtempSync(path.join(tmpdir(), `fh-workers-${tag}-`));
  dirs.push(dir);
  return dir;
};
let nats: NatsServer;
const workers: ServerProcess[] = [];
let producer: NatsQueue | undefined;

beforeAll(async () => {
  if (!natsServerAvailable()) throw new Error('nats-server is not installed (Debian package nats-server; .ci/run installs it)');
  nats = await startNatsServer();
});

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) await w.kill9();
  await producer?.close();
  await nats?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const PREFIX = 'workers';
const PARTITIONS = 6;
const PROJECTS = 8;
const ROUNDS = 36;

interface Processed {
  worker: number;
  time: number;
  projectId: string;
  seq: number;
  key: string;
}

/** The runs each worker's debug exporter logged, in its log's order. */
function processedBy(worker: number, output: string): Processed[] {
  const out: Processed[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { msg?: string; time?: number; runs?: { projectId: string; idempotencyKey: string }[] };
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (entry.msg !== 'batch' || !entry.runs) continue;
    for (const run of entry.runs) {
      const m = /^(p\d+)-seq-(\d+)$/.exec(run.idempotencyKey);
      if (m) out.push({ worker, time: entry.time ?? 0, projectId: run.projectId, seq: Number(m[2]), key: run.idempotencyKey });
    }
  }
  return out;
}

describe('three workers on one NATS queue', () => {
  it('processes every accepted job once in effect and in per-project order when one worker is killed', async () => {
    const pipeline = path.join(tempDir('pipeline'), 'workers.yaml');
    writeFileSync(
      pipeline,
      [
        'receivers:',
        '  native: {}',
        'processors:',
        '  normalize: {}',
        'exporters:',
        '  debug:',
        '    verbosity: detailed',
        'service:',
        '  pipelines:',
        '    executions:',
        '      receivers: [native]',
        '      processors: [normalize]',
        '      exporters: [debug]',
        '',
      ].join('\n'),
    );
    const env = (i: number): Record<string, string> => ({
      SERVICE_ROLE: 'worker',
      SERVICE_QUEUE_URL: nats.url,
      SERVICE_QUEUE_PREFIX: PREFIX,
      SERVICE_QUEUE_PARTITIONS: String(PARTITIONS),
      SERVICE_PARTITION_LEASE_TTL_MS: '1500',
      SERVICE_DATA_DIR: tempDir(`w${i}`),
      SERVICE_AGENT_TOKEN: 'fh_0123456789abcdef0123456789abcdef0123456789abcdef',
      LOG_LEVEL: 'info',
      POLL_INTERVAL_MS: '20',
    });
    for (let i = 0; i < 3; i++) workers.push(await startServerProcess(env(i), 60_000, [], ['--pipeline', pipeline]));

    producer = await NatsQueue.open({ servers: nats.url, prefix: PREFIX, partitions: PARTITIONS, visibilityMs: 30_000, maxAttempts: 3, consume: false });
    const accepted: string[] = [];
    const killedAt = Math.floor(ROUNDS / 3);
    let killedOutput = '';
    for (let round = 0; round < ROUNDS; round++) {
      for (let p = 0; p < PROJECTS; p++) {
        const key = `p${p}-seq-${String(round).padStart(3, '0')}`;
        const r = await producer.enqueue({ projectId: `p${p}`, source: 'native', batch: makeBatch(key, 2) });
        expect(r.deduplicated).toBe(false);
        accepted.push(key);
      }
      if (round === killedAt) {
        // Mid-stream, with leases in hand: no grace period.
        await workers[0]!.kill9();
        killedOutput = workers[0]!.output();
      }
      await new Promise((r) => setTimeout(r, 40));
    }

    const processed = (): Processed[] => [processedBy(0, killedOutput || workers[0]!.output()), processedBy(1, workers[1]!.output()), processedBy(2, workers[2]!.output())].flat();
    const deadline = Date.now() + 60_000;
    while (new Set(processed().map((p) => p.key)).size < accepted.length) {
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // Until every job is acked (the work-queue stream empty): a worker logs a lease before it acks
    // it, so any duplicate has shown by then.
    const nc = await connect({ servers: nats.url });
    try {
      const jsm = await nc.jetstreamManager();
      while ((await jsm.streams.info(`${PREFIX}_JOBS`)).state.messages > 0) {
        if (Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await nc.close();
    }
    const all = processed();

    // Every accepted job processed.
    expect([...new Set(all.map((p) => p.key))].sort()).toEqual([...accepted].sort());
    // The killed worker did part of the work before it died, and the survivors took its partitions over.
    const killedKeys = new Set(all.filter((p) => p.worker === 0).map((p) => p.key));
    expect(killedKeys.size).toBeGreaterThan(0);
    // Exactly once in effect: only what the killed worker had in hand (never acked) is done again.
    const survivors = all.filter((p) => p.worker !== 0);
    const seen = new Map<string, number>();
    for (const p of survivors) seen.set(p.key, (seen.get(p.key) ?? 0) + 1);
    expect([...seen].filter(([, n]) => n > 1)).toEqual([]);
    const redone = survivors.filter((p) => killedKeys.has(p.key));
    // Bounded by what one worker can hold: at most its in-flight leases, never the whole history.
    expect(redone.length).toBeLessThan(killedKeys.size + 1);

    // Per-project order: in each worker's log, each project's jobs go up; and over time (the first
    // time each job was processed), each project's jobs come in the order they were accepted.
    for (const w of [0, 1, 2]) {
      for (let p = 0; p < PROJECTS; p++) {
        const seqs = all.filter((x) => x.worker === w && x.projectId === `p${p}`).map((x) => x.seq);
        const redelivered = seqs.filter((s, i) => i > 0 && s <= seqs[i - 1]!);
        expect(redelivered, `worker ${w}, project p${p}`).toEqual([]);
      }
    }
    for (let p = 0; p < PROJECTS; p++) {
      const firsts: number[] = [];
      const done = new Set<number>();
      for (const x of all.filter((y) => y.projectId === `p${p}`).sort((a, b) => a.time - b.time)) {
        if (done.has(x.seq)) continue;
        done.add(x.seq);
        firsts.push(x.seq);
      }
      expect(firsts, `project p${p}`).toEqual(Array.from({ length: ROUNDS }, (_, i) => i));
    }
  }, 120_000);
});

// `npm run bench -- durability [--rounds 4] [--clients 8] [--seconds 3] [--poison 0.1]`
//
// The promise "a 202 means stored", measured the hard way: the real daemon as a child process
// takes concurrent posts (valid batches, and a share of poison values the door must refuse or
// normalise), is killed with SIGKILL mid-burst, restarted, and the clients resend what they got no
// answer for (same idempotency key, as the reporter's buffer does). After the last round the queue
// is drained and every accepted batch is looked for: runs, executions and the daily rollup must
// each count every accepted execution exactly once, with no dead job.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { bootstrapToken, startServerProcess, type ServerProcess } from '../test/helpers/process.js';
import { writeResult } from './results.js';

interface Options {
  rounds: number;
  clients: number;
  seconds: number;
  poison: number;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { rounds: 4, clients: 8, seconds: 3, poison: 0.1 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, '') as keyof Options;
    const value = Number(argv[i + 1]);
    if (!(key in opts) || !Number.isFinite(value)) throw new Error(`unknown option ${argv[i]} ${argv[i + 1]}`);
    opts[key] = value;
  }
  return opts;
}

/** Poison values a new user found getting a 202 and then dying in the worker (issue 11). */
interface Poison {
  name: string;
  apply(b: Batch): void;
  expect: 'refused' | 'stored';
}

const POISONS: Poison[] = [
  { name: 'startedAt 1e300', apply: (b) => (b.run.startedAt = 1e300), expect: 'refused' },
  { name: 'startedAt as a 23-digit string', apply: (b) => (b.run.startedAt = '99999999999999999999999'), expect: 'refused' },
  { name: 'prNumber 1e15', apply: (b) => (b.resource.prNumber = 1e15), expect: 'refused' },
  { name: 'shardIndex 5e15', apply: (b) => ((b.resource.shardIndex = 5e15), (b.resource.shardTotal = 6e15)), expect: 'refused' },
  { name: 'lone surrogate in a title', apply: (b) => (b.executions[0]!.title = `case ${b.idempotencyKey} \ud800`), expect: 'stored' },
  { name: 'params nested 5,000 levels', apply: (b) => (b.executions[0]!.params = nest(5000)), expect: 'refused' },
];

interface Batch {
  contractVersion: string;
  idempotencyKey: string;
  resource: Record<string, unknown>;
  run: { status: string; startedAt: unknown };
  executions: { filePath: string; suite: string; title: string; status: string; startedAt: number; durationMs: number; params?: unknown }[];
}

function nest(depth: number): unknown {
  let v: unknown = { leaf: true };
  for (let i = 0; i < depth; i++) v = { v };
  return v;
}

const BRANCH = 'durability';

/** A suite of 400 tests in 40 files, as a real project has; each run runs a slice of it. */
const SUITE_SIZE = 400;

function makeBatch(n: number, at: number): Batch {
  const id = randomBytes(6).toString('hex');
  const first = Math.floor(Math.random() * SUITE_SIZE);
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `dur-${id}`,
    resource: { ciProvider: 'github_actions', commitSha: randomBytes(20).toString('hex'), branch: BRANCH, trigger: 'push' },
    run: { status: 'passed', startedAt: at },
    executions: Array.from({ length: n }, (_, i) => {
      const t = (first + i) % SUITE_SIZE;
      return {
        filePath: `src/area${t % 40}.test.ts`,
        suite: `area ${t % 40}`,
        title: `case ${t}`,
        status: (t + Math.floor(at / 1000)) % 17 === 0 ? 'fail' : 'pass',
        startedAt: at + i,
        durationMs: 5 + (t % 40),
      };
    }),
  };
}

interface Tally {
  requests: number;
  accepted: Map<string, number>;
  refused: Record<string, number>;
  serverErrors: number;
  /** Sent with no answer before the kill: resent after the restart (with the poison it carries). */
  unanswered: Map<string, { batch: Batch; poison: Poison | undefined }>;
  poisonRefused: number;
  poisonAcceptedAsExpected: number;
  poisonSurprises: string[];
}

async function post(url: string, token: string, body: Batch): Promise<{ status: number; json: { receiptId?: string; acceptedExecutions?: number; error?: string } } | null> {
  try {
    const res = await fetch(`${url}/v1/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as never };
  } catch {
    return null; // the daemon died under us: the outcome is unknown
  }
}

function record(t: Tally, batch: Batch, poison: Poison | undefined, res: Awaited<ReturnType<typeof post>>): void {
  t.requests++;
  if (!res) {
    t.unanswered.set(batch.idempotencyKey, { batch, poison });
    return;
  }
  t.unanswered.delete(batch.idempotencyKey);
  if (res.status === 202) {
    t.accepted.set(batch.idempotencyKey, batch.executions.length);
    if (poison) {
      if (poison.expect === 'stored') t.poisonAcceptedAsExpected++;
      else t.poisonSurprises.push(`${poison.name}: 202`);
    }
  } else if (res.status >= 500) {
    t.serverErrors++;
  } else {
    const code = res.json.error ?? String(res.status);
    t.refused[code] = (t.refused[code] ?? 0) + 1;
    if (poison?.expect === 'refused') t.poisonRefused++;
    else if (poison) t.poisonSurprises.push(`${poison.name}: ${res.status} ${code}`);
    else if (res.status !== 503) t.poisonSurprises.push(`valid batch: ${res.status} ${code}`);
  }
}

async function adminGet<T>(url: string, admin: string, p: string): Promise<T> {
  const res = await fetch(`${url}${p}`, { headers: { authorization: `Bearer ${admin}` } });
  if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function sql(url: string, admin: string, query: string): Promise<number> {
  const res = await fetch(`${url}/clickhouse?default_format=JSONEachRow`, {
    method: 'POST',
    headers: { 'x-clickhouse-user': 'admin', 'x-clickhouse-key': admin },
    body: query,
  });
  if (!res.ok) throw new Error(`${query}: ${res.status} ${await res.text()}`);
  const row = JSON.parse((await res.text()).trim()) as { n: number | string };
  return Number(row.n);
}

export async function run(argv: string[]): Promise<number> {
  const opts = parseArgs(argv);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-bench-durability-'));
  const admin = randomBytes(24).toString('hex');
  const env = { SERVICE_DATA_DIR: dataDir, SERVICE_ADMIN_TOKEN: admin, LOG_LEVEL: 'warn', SERVICE_QUEUE_RETRY_BACKOFF_MS: '100' };
  const t: Tally = { requests: 0, accepted: new Map(), refused: {}, serverErrors: 0, unanswered: new Map(), poisonRefused: 0, poisonAcceptedAsExpected: 0, poisonSurprises: [] };
  let server: ServerProcess = await startServerProcess(env);
  const token = bootstrapToken(dataDir);
  const base = Date.parse('2026-11-01T00:00:00Z');
  let clock = 0;
  const kills: { round: number; acceptedBefore: number; unansweredAtKill: number }[] = [];
  try {
    for (let round = 1; round <= opts.rounds; round++) {
      // Resend what got no answer last round: the same key, as a reporter's buffer replays it.
      for (const { batch, poison } of [...t.unanswered.values()]) record(t, batch, poison, await post(server.url, token, batch));
      let stop = false;
      const client = async (): Promise<void> => {
        while (!stop) {
          const b = makeBatch(20 + Math.floor(Math.random() * 80), base + clock++ * 1000);
          const poison = Math.random() < opts.poison ? POISONS[Math.floor(Math.random() * POISONS.length)] : undefined;
          poison?.apply(b);
          record(t, b, poison, await post(server.url, token, b));
        }
      };
      const clients = Array.from({ length: opts.clients }, client);
      await new Promise((r) => setTimeout(r, opts.seconds * 1000 * (0.5 + Math.random())));
      await server.kill9(); // mid-burst: requests are in flight
      stop = true;
      await Promise.all(clients);
      kills.push({ round, acceptedBefore: t.accepted.size, unansweredAtKill: t.unanswered.size });
      server = await startServerProcess(env);
    }
    for (const { batch, poison } of [...t.unanswered.values()]) record(t, batch, poison, await post(server.url, token, batch));

    // Drain: nothing pending or in flight.
    const drainStart = Date.now();
    let slowDrainShown = false;
    for (;;) {
      const s = await adminGet<{ queue: { pending: number; inflight: number; dead: number } }>(server.url, admin, '/v1/admin/stats');
      if (s.queue.pending + s.queue.inflight === 0) break;
      if (Date.now() - drainStart > 20_000 && !slowDrainShown) {
        slowDrainShown = true;
        console.error(`slow drain: ${JSON.stringify(s.queue)}; daemon output so far:\n${server.output().slice(-4000)}`);
      }
      if (Date.now() - drainStart > 600_000) throw new Error(`queue did not drain: ${JSON.stringify(s.queue)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const stats = await adminGet<{ queue: { dead: number } }>(server.url, admin, '/v1/admin/stats');
    const acceptedExecutions = [...t.accepted.values()].reduce((a, b) => a + b, 0);
    const where = `branch = '${BRANCH}'`;
    const stored = {
      runs: await sql(server.url, admin, `SELECT count() AS n FROM runs FINAL WHERE ${where}`),
      runsDistinct: await sql(server.url, admin, `SELECT uniqExact(id) AS n FROM runs WHERE ${where}`),
      executions: await sql(server.url, admin, `SELECT count() AS n FROM executions WHERE ${where}`),
      executionsDistinct: await sql(server.url, admin, `SELECT uniqExact(id) AS n FROM executions WHERE ${where}`),
      // The data dir is this bench's own: the rollup holds only its executions.
      rollupExecutions: await sql(server.url, admin, 'SELECT sum(executions) AS n FROM daily_test_stats'),
    };
    const result = {
      bench: 'durability',
      at: new Date().toISOString(),
      options: opts,
      requests: t.requests,
      accepted: { batches: t.accepted.size, executions: acceptedExecutions },
      refused: t.refused,
      serverErrors: t.serverErrors,
      poison: { refused: t.poisonRefused, storedNormalised: t.poisonAcceptedAsExpected, surprises: t.poisonSurprises },
      kills,
      stored,
      dead: stats.queue.dead,
      lost: { batches: t.accepted.size - stored.runsDistinct, executions: acceptedExecutions - stored.executionsDistinct },
      duplicated: { executions: stored.executions - stored.executionsDistinct, rollup: stored.rollupExecutions - stored.executionsDistinct },
      drainMs: Date.now() - drainStart,
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`wrote ${writeResult('durability', result)}`);
    const ok = result.lost.batches === 0 && result.lost.executions === 0 && result.duplicated.executions === 0 && result.duplicated.rollup === 0 && result.dead === 0 && t.serverErrors === 0 && t.poisonSurprises.length === 0;
    return ok ? 0 : 1;
  } finally {
    await server.stop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

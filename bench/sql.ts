// `npm run bench -- sql [--rows 1000000] [--tests 20000] [--seconds 10] [--rate 20] [--data DIR] [--keep]`
//
// SQL endpoint benchmark, against the daemon running as a child process (its memory is its own):
//   1. a `--rows`-row result (SELECT * FROM executions, JSONEachRow) streamed through /clickhouse
//      with a project token: rows/s, MB/s, and the daemon's RSS sampled every 100 ms against its
//      idle RSS (the result must not be materialised: flat memory);
//   2. ingest acknowledgement latency (POST /v1/ingest, paced at `--rate` per second for `--seconds`)
//      without SQL, then while analysts' heavy queries (a GROUP BY over every execution, repeated)
//      run: p50/p99/max of the 202s.
// Data: `--rows` executions generated straight into ClickHouse as the export bench does
// (bench/scale-data.ts), in this process before the daemon starts.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openStore } from '../src/store/client.js';
import { migrate } from '../src/store/migrate.js';
import { ProjectRepo, SCOPES } from '../src/store/projects.js';
import { startServerProcess } from '../test/helpers/process.js';
import { writeResult } from './results.js';
import { SPAN_MS, generate, round, type GenPlan } from './scale-data.js';

const DATABASE = 'flakehouse';

function memMb(pid: number): { rss: number; anon: number; hwm: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(s)?.[1] ?? 0);
    return { rss: round(kb('VmRSS') / 1024), anon: round(kb('RssAnon') / 1024), hwm: round(kb('VmHWM') / 1024) };
  } catch {
    return null;
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      rows: { type: 'string', default: '1000000' },
      tests: { type: 'string', default: '20000' },
      seconds: { type: 'string', default: '10' },
      rate: { type: 'string', default: '20' },
      data: { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
  });
  const executions = Number(values.rows);
  const tests = Math.min(Number(values.tests), executions);
  const dataDir = values.data ? path.resolve(values.data) : mkdtempSync(path.join(tmpdir(), 'fh-bench-sql-'));
  mkdirSync(dataDir, { recursive: true });
  const tokenFile = path.join(dataDir, 'bench-token');
  if (!existsSync(tokenFile)) {
    console.log(`sql bench: generating ${executions.toLocaleString('en-US')} executions (data ${dataDir})`);
    const store = await openStore({ chdbPath: path.join(dataDir, 'chdb'), database: DATABASE });
    try {
      await migrate(store);
      const project = await new ProjectRepo(store).create('default', 'Default project');
      const { token } = await new ProjectRepo(store).createToken(project.id, [...SCOPES]);
      const endMs = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000;
      const perRun = Math.min(1000, tests);
      const plan: GenPlan = {
        projectId: project.id,
        tests,
        executions,
        perRun,
        runs: Math.ceil(executions / perRun),
        startMs: endMs - SPAN_MS,
        endMs,
        chunkRows: Math.max(perRun, Math.floor(1_000_000 / perRun) * perRun),
      };
      await generate(store, plan, (l) => console.log(l));
      await store.command(`DROP TABLE IF EXISTS ${store.table('bench_tests')}`);
      await store.command(`OPTIMIZE TABLE ${store.table('executions')} FINAL`);
      writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    } finally {
      await store.close();
    }
  }
  const token = readFileSync(tokenFile, 'utf8').trim();
  const basic = `Basic ${Buffer.from(`default:${token}`).toString('base64')}`;

  const server = await startServerProcess(
    { SERVICE_DATA_DIR: dataDir, SERVICE_CLICKHOUSE_DATABASE: DATABASE, LOG_LEVEL: 'warn', SERVICE_RATE_LIMIT_MAX: '0', SERVICE_SQL_MAX_CONCURRENT: '4' },
    120_000,
  );
  const pid = server.child.pid!;
  let result: Record<string, unknown>;
  try {
    await new Promise((r) => setTimeout(r, 3000));
    const idle = memMb(pid)!;

    // 1. The whole table, streamed (a reused --data dir also holds earlier runs' ingested rows).
    const counted = await fetch(`${server.url}/clickhouse?${new URLSearchParams({ database: DATABASE }).toString()}`, {
      method: 'POST',
      headers: { authorization: basic },
      body: 'SELECT count() FROM executions',
    });
    const tableRows = Number((await counted.text()).trim());
    const peak = { rss: 0, anon: 0 };
    const sampler = setInterval(() => {
      const m = memMb(pid);
      if (m) {
        peak.rss = Math.max(peak.rss, m.rss);
        peak.anon = Math.max(peak.anon, m.anon);
      }
    }, 100);
    const t0 = performance.now();
    let bytes = 0;
    let lines = 0;
    let firstByteMs = 0;
    try {
      const res = await fetch(`${server.url}/clickhouse?${new URLSearchParams({ database: DATABASE, default_format: 'JSONEachRow' }).toString()}`, {
        method: 'POST',
        headers: { authorization: basic },
        body: 'SELECT * FROM executions',
      });
      if (res.status !== 200 || !res.body) throw new Error(`SELECT *: ${res.status} ${await res.text()}`);
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        if (bytes === 0) firstByteMs = performance.now() - t0;
        bytes += chunk.length;
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      }
    } finally {
      clearInterval(sampler);
    }
    const seconds = (performance.now() - t0) / 1000;
    if (lines !== tableRows) throw new Error(`streamed ${lines} rows, the table holds ${tableRows}`);
    const stream = {
      rows: lines,
      seconds: round(seconds),
      firstByteMs: Math.round(firstByteMs),
      rowsPerSec: Math.round(lines / seconds),
      MB: round(bytes / 1e6),
      MBPerSec: round(bytes / 1e6 / seconds),
    };
    console.log('stream', stream, 'idle', idle, 'peak', peak);

    // 2. Ingest acks, without and with heavy SQL.
    const durationMs = Number(values.seconds) * 1000;
    const rate = Number(values.rate);
    let seq = 0;
    const ingestAcks = async (): Promise<Record<string, number>> => {
      const latencies: number[] = [];
      const pending: Promise<void>[] = [];
      const start = performance.now();
      for (let i = 0; performance.now() - start < durationMs; i++) {
        const due = start + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const key = `bench-sql-${process.pid}-${seq++}`;
        const sent = performance.now();
        const body = JSON.stringify({
          contractVersion: '0.1.0',
          idempotencyKey: key,
          resource: { ciProvider: 'github_actions', commitSha: 'abcdef1234', branch: 'main', trigger: 'push' },
          run: { status: 'passed', startedAt: new Date().toISOString() },
          executions: Array.from({ length: 20 }, (_, k) => ({ filePath: `src/m${k}.test.ts`, suite: 'bench', title: `case ${k}`, status: 'pass', startedAt: Date.now(), durationMs: 5 })),
        });
        pending.push(
          fetch(`${server.url}/v1/ingest`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body }).then(async (r) => {
            await r.arrayBuffer();
            if (r.status !== 202) throw new Error(`ingest ${r.status}`);
            latencies.push(performance.now() - sent);
          }),
        );
      }
      await Promise.all(pending);
      latencies.sort((a, b) => a - b);
      return { requests: latencies.length, p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)), maxMs: round(latencies[latencies.length - 1] ?? 0) };
    };
    await ingestAcks(); // warm-up, not counted
    const baseline = await ingestAcks();
    console.log('ingest without SQL', baseline);
    let heavyRunning = true;
    let heavyQueries = 0;
    const heavyErrors: string[] = [];
    const heavy = (async () => {
      const sql = 'SELECT test_id, count() AS n, quantile(0.95)(duration_ms) AS p95, uniqExact(run_id) AS runs FROM executions GROUP BY test_id ORDER BY n DESC, p95 DESC LIMIT 100';
      while (heavyRunning) {
        const r = await fetch(`${server.url}/clickhouse?${new URLSearchParams({ database: DATABASE }).toString()}`, { method: 'POST', headers: { authorization: basic }, body: sql });
        await r.arrayBuffer();
        if (r.status === 200) heavyQueries++;
        else heavyErrors.push(String(r.status));
      }
    })();
    const withSql = await ingestAcks();
    heavyRunning = false;
    await heavy;
    console.log('ingest with heavy SQL', withSql, 'heavy queries', heavyQueries);
    const after = memMb(pid)!;

    result = {
      bench: 'sql',
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version, note: 'the client runs on the same cores' },
      params: { executions, tests, ingestRatePerSec: rate, ingestSeconds: Number(values.seconds), sqlMaxThreads: 1 },
      stream,
      daemonMemoryMb: {
        idle,
        duringStreamPeak: peak,
        growthOverIdle: { rss: round(peak.rss - idle.rss), anonymous: round(peak.anon - idle.anon) },
        peakRssSinceStart: after.hwm,
      },
      ingestAck: { withoutSql: baseline, withHeavySql: withSql, heavyQueriesCompleted: heavyQueries, heavyQueryErrors: heavyErrors.slice(0, 5) },
    };
  } finally {
    await server.stop();
    if (!values.data && !values.keep) rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(result, null, 2));
  console.log(`written ${writeResult('sql', result)}`);
  return 0;
}

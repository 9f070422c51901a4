// `npm run bench -- export [--rows 5000000] [--tests 50000] [--per-run 1000] [--data DIR] [--keep]`
//
// Export benchmark: a project holding `--rows` executions (a year of CI history generated straight
// into ClickHouse with INSERT … SELECT, as the scale bench does: bench/scale-data.ts; the rollups,
// identities, runs and test state come with it), then GET /v1/export of the whole project through
// HTTP from the daemon running as a child process, so its memory is its own. The client gunzips
// and counts lines, keeping nothing. Reported:
//   - rows exported (every dataset), executions among them, seconds, rows/s, MB/s (raw and gzip),
//   - the daemon's peak RSS (VmHWM of /proc/<pid>/status) and, sampled every 100 ms during the
//     export, its resident memory split into anonymous (heap, chDB's query memory) and file-backed
//     (mostly the chDB library's mapped code) parts, against its idle numbers before the export.
// Target: peak RSS < 300 MB for 5 million executions.
//
// Generation runs in this process before the daemon starts (chDB binds a data directory to one
// process at a time); `--data DIR` keeps the data in DIR and reuses it with the same parameters.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { parseArgs } from 'node:util';
import { createGunzip } from 'node:zlib';
import { openStore, type Store } from '../src/store/client.js';
import { migrate } from '../src/store/migrate.js';
import { ProjectRepo, SCOPES } from '../src/store/projects.js';
import { startServerProcess } from '../test/helpers/process.js';
import { writeResult } from './results.js';
import { SPAN_MS, generate, round, type GenPlan } from './scale-data.js';

const TARGET_PEAK_RSS_MB = 300;
const DATABASE = 'flakehouse';

interface Mem {
  rssMb: number;
  anonMb: number;
  fileMb: number;
  hwmMb: number;
}

function memOf(pid: number): Mem | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(s)?.[1] ?? 0);
    return { rssMb: round(kb('VmRSS') / 1024), anonMb: round(kb('RssAnon') / 1024), fileMb: round(kb('RssFile') / 1024), hwmMb: round(kb('VmHWM') / 1024) };
  } catch {
    return null;
  }
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      rows: { type: 'string', default: '5000000' },
      tests: { type: 'string', default: '50000' },
      'per-run': { type: 'string', default: '1000' },
      chunk: { type: 'string', default: '1000000' },
      data: { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
  });
  const executions = Number(values.rows);
  const tests = Math.min(Number(values.tests), executions);
  const perRun = Math.min(Number(values['per-run']), tests);
  if (!(executions > 0 && tests > 0 && perRun > 0)) {
    console.error('export: need --rows > 0, --tests > 0, --per-run > 0');
    return 2;
  }
  const dataDir = values.data ? path.resolve(values.data) : mkdtempSync(path.join(tmpdir(), 'fh-bench-export-'));
  mkdirSync(dataDir, { recursive: true });
  const planFile = path.join(dataDir, 'export-plan.json');
  const tokenFile = path.join(dataDir, 'bench-token');
  let generation: Record<string, unknown> = { reused: true };
  if (existsSync(planFile)) {
    const saved = JSON.parse(readFileSync(planFile, 'utf8')) as GenPlan;
    if (saved.executions !== executions || saved.tests !== tests || saved.perRun !== perRun) {
      console.error(`export: ${dataDir} holds other data (${saved.executions} executions, ${saved.tests} tests); use another --data dir`);
      return 2;
    }
    console.log(`export bench: reusing ${executions.toLocaleString('en-US')} executions in ${dataDir}`);
  } else {
    console.log(`export bench: generating ${executions.toLocaleString('en-US')} executions of ${tests.toLocaleString('en-US')} tests (data ${dataDir})`);
    generation = await generateData(dataDir, { executions, tests, perRun, chunk: Number(values.chunk) }, planFile, tokenFile);
  }
  const token = readFileSync(tokenFile, 'utf8').trim();

  const server = await startServerProcess({ SERVICE_DATA_DIR: dataDir, SERVICE_CLICKHOUSE_DATABASE: DATABASE, LOG_LEVEL: 'warn', SERVICE_RATE_LIMIT_MAX: '0' }, 120_000);
  const pid = server.child.pid!;
  let result: Record<string, unknown>;
  try {
    // Idle first: what the daemon holds before any export.
    await new Promise((r) => setTimeout(r, 3000));
    const idle = memOf(pid)!;
    console.log(`daemon idle: RSS ${idle.rssMb} MB (anonymous ${idle.anonMb}, file-backed ${idle.fileMb}), peak so far ${idle.hwmMb} MB`);

    const peak = { rssMb: 0, anonMb: 0, fileMb: 0 };
    const sampler = setInterval(() => {
      const m = memOf(pid);
      if (!m) return;
      peak.rssMb = Math.max(peak.rssMb, m.rssMb);
      peak.anonMb = Math.max(peak.anonMb, m.anonMb);
      peak.fileMb = Math.max(peak.fileMb, m.fileMb);
    }, 100);
    const t0 = performance.now();
    let res: Response;
    let read: Awaited<ReturnType<typeof readExport>>;
    try {
      res = await fetch(`${server.url}/v1/export`, { headers: { authorization: `Bearer ${token}` } });
      if (res.status !== 200 || !res.body) throw new Error(`GET /v1/export: ${res.status} ${await res.text()}`);
      read = await readExport(res.body as WebReadableStream<Uint8Array>, () => performance.now() - t0);
    } finally {
      clearInterval(sampler);
    }
    const seconds = (performance.now() - t0) / 1000;
    const after = memOf(pid)!;

    const manifest = JSON.parse(read.first) as { type: string; datasets: string[] };
    const summary = JSON.parse(read.last) as { type: string; rows: number; artifacts: number; counts: Record<string, number> };
    if (manifest.type !== 'manifest' || summary.type !== 'summary') throw new Error('the export does not start with a manifest and end with a summary');
    if (read.lines !== summary.rows + summary.artifacts + 2) throw new Error(`read ${read.lines} lines, the summary accounts for ${summary.rows + summary.artifacts + 2}`);
    if (summary.counts.executions !== executions) throw new Error(`exported ${summary.counts.executions} executions, generated ${executions}`);

    result = {
      bench: 'export',
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, node: process.version, note: 'the client (gunzip, line count) runs on the same cores' },
      params: { executions, tests, perRun, gzipLevel: 1 },
      generation,
      export: {
        rows: summary.rows,
        executions: summary.counts.executions,
        counts: summary.counts,
        seconds: round(seconds),
        firstByteMs: round(read.firstByteMs),
        rowsPerSec: Math.round(summary.rows / seconds),
        ndjsonMB: round(read.rawBytes / 1e6),
        gzipMB: round(read.gzipBytes / 1e6),
        ndjsonMBPerSec: round(read.rawBytes / 1e6 / seconds),
      },
      daemonMemoryMb: {
        peakRss: after.hwmMb,
        idle,
        duringExportPeak: peak,
        growthOverIdle: { rss: round(peak.rssMb - idle.rssMb), anonymous: round(peak.anonMb - idle.anonMb) },
        note: 'peakRss is VmHWM (since the daemon started); anonymous = heap and chDB query memory, file-backed = mapped library code (shared, reclaimable)',
      },
      targets: { peakRssMb: TARGET_PEAK_RSS_MB },
      meetsTarget: after.hwmMb < TARGET_PEAK_RSS_MB,
    };
  } finally {
    await server.stop();
    if (!values.data && !values.keep) rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(result, null, 2));
  console.log(`written ${writeResult('export', result)}`);
  return 0;
}

/** Counts lines and bytes of the gzipped body as it streams; keeps only the first and last line. */
async function readExport(body: WebReadableStream<Uint8Array>, elapsedMs: () => number) {
  let gzipBytes = 0;
  let rawBytes = 0;
  let lines = 0;
  let first = '';
  let firstByteMs = 0;
  let tail: Buffer = Buffer.alloc(0);
  let lastLine: Buffer = Buffer.alloc(0);
  const gunzip = Readable.fromWeb(body)
    .on('data', (c: Buffer) => {
      if (gzipBytes === 0) firstByteMs = elapsedMs();
      gzipBytes += c.length;
    })
    .pipe(createGunzip({ chunkSize: 256 * 1024 }));
  for await (const chunk of gunzip as AsyncIterable<Buffer>) {
    rawBytes += chunk.length;
    // Count newlines; only the first line of all and the last whole line of each chunk are kept.
    let prev = -1;
    let nl = -1;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) {
      if (lines === 0) first = Buffer.concat([tail, chunk.subarray(0, i)]).toString('utf8');
      lines++;
      prev = nl;
      nl = i;
    }
    if (nl === -1) {
      tail = Buffer.concat([tail, chunk]);
      continue;
    }
    lastLine = prev === -1 ? Buffer.concat([tail, chunk.subarray(0, nl)]) : Buffer.from(chunk.subarray(prev + 1, nl));
    tail = Buffer.from(chunk.subarray(nl + 1));
  }
  return { lines, first, last: lastLine.toString('utf8'), rawBytes, gzipBytes, firstByteMs };
}

/** The project, its token and the generated history, written by this process; then it lets go of the data dir. */
async function generateData(
  dataDir: string,
  p: { executions: number; tests: number; perRun: number; chunk: number },
  planFile: string,
  tokenFile: string,
): Promise<Record<string, unknown>> {
  const store = await openStore({ chdbPath: path.join(dataDir, 'chdb'), database: DATABASE });
  try {
    await migrate(store);
    // The daemon finds a project and prints no bootstrap token: the bench mints its own.
    const projects = new ProjectRepo(store);
    const project = await projects.create('default', 'Default project');
    const { token } = await projects.createToken(project.id, [...SCOPES]);
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    const endMs = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000;
    const plan: GenPlan = {
      projectId: project.id,
      tests: p.tests,
      executions: p.executions,
      perRun: p.perRun,
      runs: Math.ceil(p.executions / p.perRun),
      startMs: endMs - SPAN_MS,
      endMs,
      chunkRows: Math.max(p.perRun, Math.floor(p.chunk / p.perRun) * p.perRun),
    };
    const t0 = performance.now();
    const tables = await generate(store, plan, (l) => console.log(l));
    const seconds = (performance.now() - t0) / 1000;
    // Merged before the daemon starts, so its memory is the export's and not a backlog of merges.
    const settleSeconds = await settle(store);
    writeFileSync(planFile, JSON.stringify(plan));
    return { seconds: round(seconds), executionsPerSec: Math.round(p.executions / seconds), settleSeconds, tables };
  } finally {
    await store.close();
  }
}

async function settle(store: Store): Promise<number> {
  const t0 = performance.now();
  await store.command(`DROP TABLE IF EXISTS ${store.table('bench_tests')}`);
  for (const table of ['executions', 'daily_test_stats', 'test_recent']) {
    await store.command(`OPTIMIZE TABLE ${store.table(table)} FINAL`);
  }
  return round((performance.now() - t0) / 1000);
}

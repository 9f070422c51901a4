// `npm run bench -- identity-stitch [--cases 100000] [--part 5000] [--lease 10000] [--rerun false] [--label NAME]`
//
// The identity stage's stitch lookup over one large single-file, single-suite JUnit report (issue
// 40): the report's parts (`--part` executions each, one run, as the JUnit receiver splits it) go
// through the real identity processor as consecutive leases of up to `--lease` executions, against
// real chDB, and each lease is written by the real clickhouse exporter before the next is resolved
// (as the worker does). Run 1 is the report's first run: every test is new. With `--rerun true` a
// second run of the same file (another commit) follows in which one test in 100 is renamed, one in
// 100 moved to another file and one in 100 is new, so the stitch decisions (L2, L3, new; a present
// runner-up blocking a rename) are exercised and compared: `digest` hashes every execution's
// fingerprint → test id and every stitch row. (Scoring each renamed test against every test of the
// file is most of that run's time: at 100,000 cases, minutes.)
//
// Prints and writes per-lease milliseconds (identity stage alone, and the write), the repository
// calls of the identity stage with the rows they returned (the stitch candidates among them), and
// the totals: bench/results/identity-stitch.json (`--label` other than `current`:
// identity-stitch-<label>.json). Times on a shared machine are noisy: compare the row counts.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CURRENT_CONTRACT_VERSION, type ExecutionInput, type IngestBatch } from '../client/src/contract/batch.js';
import { buildRun } from '../src/domain/records.js';
import { reportPartKey } from '../client/src/contract/report-parts.js';
import { clickhouseExporterFactory } from '../src/exporters/clickhouse.js';
import type { Host } from '../src/pipeline/component.js';
import { leaseSink } from '../src/pipeline/lease-sink.js';
import { WorkBatch } from '../src/pipeline/work-batch.js';
import { identityProcessorFactory } from '../src/processors/identity.js';
import type { Job } from '../src/queue/types.js';
import { openStore, type Store } from '../src/store/client.js';
import { IdentityRepo } from '../src/store/identities.js';
import { migrate } from '../src/store/migrate.js';
import { openRepositories } from '../src/store/repositories.js';
import { createLogger } from '../src/telemetry/logger.js';
import { RESULTS_DIR } from './results.js';
import { instrumentIdentityRepo, type CallStats } from './identity-calls.js';

const PROJECT = '00000000-0000-4000-8000-0000000000a1';
const FILE = 'src/test/java/com/example/BigTest.java';
const SUITE = 'com.example.BigTest';
const T0 = Date.parse('2026-11-20T10:00:00Z');

interface LeaseStat {
  run: number;
  lease: number;
  executions: number;
  identityMs: number;
  /** CPU time of this process (the event loop and chDB's threads) during the identity stage: less noisy than wall time on a shared machine. */
  identityCpuMs: number;
  writeMs: number;
  /** Rows of the stitch candidate lookups (stitchCandidates, and presentCompetitors where it exists). */
  candidateRows: number;
  /** Where candidates ran in the lease's runs: rows of ranWith (a query of its own), or the candidates' ranAt entries. */
  presenceRows: number;
  queries: number;
  calls: CallStats;
}

/** A run's executions: `cases` tests of FILE/SUITE; in a rerun, one in 100 renamed, moved or new. */
function runExecutions(cases: number, rerun: boolean, startedAt: number): ExecutionInput[] {
  const out: ExecutionInput[] = [];
  for (let i = 0; i < cases; i++) {
    let filePath = FILE;
    let title = `test_${i}`;
    if (rerun && i % 100 === 10) title = `test_${i}_renamed`;
    if (rerun && i % 100 === 50) filePath = 'src/test/java/com/example/moved/BigTest.java';
    out.push({ filePath, suite: SUITE, title, status: i % 250 === 0 ? 'fail' : 'pass', attempt: 1, startedAt: startedAt + i, durationMs: 12 });
    if (rerun && i % 100 === 90) out.push({ filePath: FILE, suite: SUITE, title: `test_${i}_added`, status: 'pass', attempt: 1, startedAt: startedAt + i, durationMs: 12 });
  }
  return out;
}

/** The report's parts as the JUnit receiver makes them: one run, `part` executions each. */
function reportJobs(executions: readonly ExecutionInput[], part: number, key: string, commitSha: string, receivedAt: number): Job[] {
  const count = Math.ceil(executions.length / part);
  const startedAt = executions[0]!.startedAt;
  return Array.from({ length: count }, (_, index): Job => {
    const batch: IngestBatch = {
      contractVersion: CURRENT_CONTRACT_VERSION,
      idempotencyKey: reportPartKey(key, index, count),
      resource: { ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push' },
      run: { status: 'failed', startedAt, reportPart: { key, index, count }, ...(index === count - 1 ? { hasRunSpan: true } : {}) },
      executions: executions.slice(index * part, (index + 1) * part),
    };
    return { id: `${key}-${index}`, receiptId: randomUUID(), receivedAt, attempts: 0, projectId: PROJECT, source: 'junit', batch };
  });
}

async function digest(store: Store): Promise<{ executions: string; stitches: string; identities: number; stitchesByLevel: Record<string, number> }> {
  const execs = await store.query<{ fingerprint: string; test: string }>(
    `SELECT fingerprint, toString(test_id) AS test FROM ${store.table('executions')} WHERE project_id = {p:UUID} ORDER BY run_id, fingerprint, test`,
    { p: PROJECT },
  );
  const stitches = await store.query<{ test: string; level: string; from_file_path: string; from_title: string; to_file_path: string; to_title: string; confidence: number }>(
    `SELECT toString(test_id) AS test, level, from_file_path, from_title, to_file_path, to_title, round(confidence, 6) AS confidence
     FROM ${store.table('identity_stitches')} FINAL WHERE project_id = {p:UUID} ORDER BY test, level, to_title`,
    { p: PROJECT },
  );
  const ids = await store.query<{ n: number | string }>(`SELECT uniqExact(id) AS n FROM ${store.table('test_identities')} WHERE project_id = {p:UUID}`, { p: PROJECT });
  const hash = (rows: unknown[]): string => createHash('sha256').update(JSON.stringify(rows)).digest('hex').slice(0, 16);
  const stitchesByLevel: Record<string, number> = {};
  for (const s of stitches) stitchesByLevel[s.level] = (stitchesByLevel[s.level] ?? 0) + 1;
  return { executions: hash(execs), stitches: hash(stitches), identities: Number(ids[0]?.n ?? 0), stitchesByLevel };
}

const round = (ms: number): number => Math.round(ms);

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      cases: { type: 'string', default: '100000' },
      part: { type: 'string', default: '5000' },
      lease: { type: 'string', default: '10000' },
      rerun: { type: 'string', default: 'false' },
      label: { type: 'string', default: 'current' },
    },
  });
  const cases = Number(values.cases);
  const part = Number(values.part);
  const leaseLimit = Number(values.lease);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-bench-identity-'));
  const store = await openStore({ chdbPath: path.join(dataDir, 'chdb'), database: `b_${randomBytes(4).toString('hex')}` });
  const logger = createLogger('silent');
  try {
    await migrate(store);
    const repos = openRepositories(store);
    const meter = instrumentIdentityRepo(repos.identities, IdentityRepo.prototype);
    const host = { logger, extensions: { ids: [], repositories: () => repos } } as unknown as Host;
    const identity = identityProcessorFactory.createExecutions!({}, { id: 'identity', logger });
    const exporter = clickhouseExporterFactory.createExecutions!({}, { id: 'clickhouse', logger });
    await identity.start(host);
    await exporter.start(host);

    const leases: LeaseStat[] = [];
    const runs = values.rerun === 'true' ? [false, true] : [false];
    const t0 = performance.now();
    for (const [r, rerun] of runs.entries()) {
      const startedAt = T0 + r * 3_600_000;
      const jobs = reportJobs(runExecutions(cases, rerun, startedAt), part, `identity-stitch-run-${r}`, createHash('sha1').update(`commit-${r}`).digest('hex'), startedAt + 600_000);
      // Consecutive parts, as many as fit in a lease (at least one).
      const groups: Job[][] = [];
      for (const job of jobs) {
        const last = groups.at(-1);
        const size = last?.reduce((n, j) => n + j.batch.executions.length, 0) ?? Infinity;
        if (last && size + job.batch.executions.length <= leaseLimit) last.push(job);
        else groups.push([job]);
      }
      for (const [i, group] of groups.entries()) {
        const batch = new WorkBatch({
          leaseId: `lease-${r}-${i}`,
          now: startedAt + 600_000 + i,
          items: group.map((job) => ({
            job,
            run: buildRun({ projectId: job.projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt }),
            executions: [],
          })),
        });
        meter.take();
        const ti = performance.now();
        const cpu0 = process.cpuUsage();
        await identity.processBatch(batch);
        const identityMs = performance.now() - ti;
        const cpu = process.cpuUsage(cpu0);
        const calls = meter.stats();
        const tw = performance.now();
        await exporter.exportBatch(batch, leaseSink(store, batch.leaseId));
        const writeMs = performance.now() - tw;
        const rowsOf = (re: RegExp): number => Object.entries(calls).reduce((n, [k, v]) => n + (re.test(k) ? v.rows : 0), 0);
        const stat: LeaseStat = {
          run: r + 1,
          lease: i + 1,
          executions: group.reduce((n, j) => n + j.batch.executions.length, 0),
          identityMs: round(identityMs),
          identityCpuMs: round((cpu.user + cpu.system) / 1000),
          writeMs: round(writeMs),
          candidateRows: rowsOf(/^(stitchCandidates|presentCompetitors)$/),
          presenceRows: rowsOf(/^ranWith$/) + Object.values(calls).reduce((n, v) => n + (v.ranAt ?? 0), 0),
          queries: Object.values(calls).reduce((n, v) => n + v.calls, 0),
          calls: Object.fromEntries(Object.entries(calls).map(([k, v]) => [k, { ...v, ms: round(v.ms) }])),
        };
        leases.push(stat);
        console.log(
          `run ${stat.run} lease ${String(stat.lease).padStart(2)}: ${stat.executions} executions, identity ${stat.identityMs} ms (${stat.identityCpuMs} CPU-ms; write ${stat.writeMs} ms), candidate rows ${stat.candidateRows}, presence rows ${stat.presenceRows}, ${stat.queries} queries`,
        );
      }
    }
    const totalMs = performance.now() - t0;
    const sum = (xs: LeaseStat[], f: (l: LeaseStat) => number): number => xs.reduce((n, l) => n + f(l), 0);
    const perRun = runs.map((_, r) => {
      const mine = leases.filter((l) => l.run === r + 1);
      return {
        run: r + 1,
        leases: mine.length,
        firstLeaseIdentityMs: mine[0]!.identityMs,
        lastLeaseIdentityMs: mine.at(-1)!.identityMs,
        identityMs: sum(mine, (l) => l.identityMs),
        identityCpuMs: sum(mine, (l) => l.identityCpuMs),
        writeMs: sum(mine, (l) => l.writeMs),
        candidateRows: sum(mine, (l) => l.candidateRows),
        presenceRows: sum(mine, (l) => l.presenceRows),
        lastLeaseCandidateRows: mine.at(-1)!.candidateRows,
        queries: sum(mine, (l) => l.queries),
      };
    });
    const result = {
      label: values.label,
      at: new Date().toISOString(),
      cases,
      part,
      lease: leaseLimit,
      rerun: values.rerun === 'true',
      totalMs: round(totalMs),
      identityMs: sum(leases, (l) => l.identityMs),
      identityCpuMs: sum(leases, (l) => l.identityCpuMs),
      candidateRows: sum(leases, (l) => l.candidateRows),
      presenceRows: sum(leases, (l) => l.presenceRows),
      queries: sum(leases, (l) => l.queries),
      runs: perRun,
      digest: await digest(store),
      leases,
    };
    console.log(JSON.stringify({ ...result, leases: undefined }, null, 2));
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = path.join(RESULTS_DIR, values.label === 'current' ? 'identity-stitch.json' : `identity-stitch-${values.label}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`wrote ${path.relative(process.cwd(), file)}`);
    await identity.shutdown();
    await exporter.shutdown();
    return 0;
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

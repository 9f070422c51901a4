// `npm run bench -- identity-cold [--tests 20000] [--batch 100] [--lease 10000] [--leases 4] [--impl DIR] [--replay 5]`
//
// The identity stage's cold start as the saturating ingest bench sees it (`ingest --only
// saturation`: native batches of `--batch` executions over `--tests` distinct tests, each batch its
// own run and commit, in leases of up to `--lease` executions): the first leases are full of new
// tests, most of them sharing a file, suite and params with tests of the leases before (rename
// candidates). Batches are the ingest bench's, made deterministic (commit, key and times derived
// from the batch index), so two runs can be compared by `digest`: every execution's fingerprint →
// test id and every stitch row.
//
// Each lease goes through the real identity processor, then the real clickhouse exporter, against
// real chDB (as the worker does). Prints per lease the identity stage's wall and CPU milliseconds and
// each identity-repository call's count, rows and milliseconds.
//
// `--impl DIR` takes the identity processor and IdentityRepo from another checkout (e.g. a git
// worktree of an older commit) to compare whole stages. With `--replay N` every stitch candidate
// query the lease made is run again before the lease is written, N times alternately with the
// IdentityRepo of `--replay-impl DIR` (default: none), on the same data and arguments: their
// results must be equal (checked), and their median times are printed side by side.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import type { IngestBatch } from '../client/src/contract/batch.js';
import { buildRun } from '../src/domain/records.js';
import { clickhouseExporterFactory } from '../src/exporters/clickhouse.js';
import type { Host } from '../src/pipeline/component.js';
import { leaseSink } from '../src/pipeline/lease-sink.js';
import { WorkBatch } from '../src/pipeline/work-batch.js';
import type { Job } from '../src/queue/types.js';
import { openStore, type Store } from '../src/store/client.js';
import type * as IdentityProcessorModule from '../src/processors/identity.js';
import type * as IdentityStoreModule from '../src/store/identities.js';
import type { IdentityRepo, SeenIn, StitchKey } from '../src/store/identities.js';
import { migrate } from '../src/store/migrate.js';
import { openRepositories } from '../src/store/repositories.js';
import { createLogger } from '../src/telemetry/logger.js';
import { makeBatch } from './ingest.js';
import { instrumentIdentityRepo } from './identity-calls.js';

const PROJECT = '00000000-0000-4000-8000-0000000000c1';
const T0 = Date.parse('2026-11-20T10:00:00Z');

const hex = (s: string, n: number): string => createHash('sha256').update(s).digest('hex').slice(0, n);

/** bench/ingest.ts makeBatch, deterministic: the same tests, files and suites, commits, keys and times. */
function fixedBatch(i: number, size: number, tests: number): IngestBatch {
  return makeBatch(i, size, tests, { key: `bench-${hex(`key-${i}`, 16)}-${i}`, commitSha: hex(`commit-${i}`, 40), startedAt: T0 + i });
}

async function digest(store: Store): Promise<{ executions: string; stitches: string; aliases: string; identities: number; stitchesByLevel: Record<string, number> }> {
  const execs = await store.query<{ fingerprint: string; test: string }>(
    `SELECT fingerprint, toString(test_id) AS test FROM ${store.table('executions')} WHERE project_id = {p:UUID} ORDER BY run_id, fingerprint, test`,
    { p: PROJECT },
  );
  const stitches = await store.query<unknown>(
    `SELECT toString(test_id) AS test, level, from_file_path, from_title, to_file_path, to_title, round(confidence, 6) AS confidence
     FROM ${store.table('identity_stitches')} FINAL WHERE project_id = {p:UUID} ORDER BY test, level, to_title, from_title`,
    { p: PROJECT },
  );
  const aliases = await store.query<unknown>(
    `SELECT fingerprint, toString(test_id) AS test FROM ${store.table('identity_aliases')} WHERE project_id = {p:UUID} ORDER BY fingerprint, test`,
    { p: PROJECT },
  );
  const ids = await store.query<{ n: number | string }>(`SELECT uniqExact(id) AS n FROM ${store.table('test_identities')} WHERE project_id = {p:UUID}`, { p: PROJECT });
  const hash = (rows: unknown[]): string => createHash('sha256').update(JSON.stringify(rows)).digest('hex').slice(0, 16);
  const stitchesByLevel: Record<string, number> = {};
  for (const s of stitches as { level: string }[]) stitchesByLevel[s.level] = (stitchesByLevel[s.level] ?? 0) + 1;
  return { executions: hash(execs), stitches: hash(stitches), aliases: hash(aliases), identities: Number(ids[0]?.n ?? 0), stitchesByLevel };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)]!;
};
const canon = (rows: unknown[]): string =>
  JSON.stringify(
    (rows as { id: string; ranAt: { runId: string; commitSha: string }[] }[])
      .map((r) => ({ ...r, ranAt: [...r.ranAt].sort((a, b) => (a.runId + a.commitSha).localeCompare(b.runId + b.commitSha)) }))
      .sort((a, b) => a.id.localeCompare(b.id)),
  );

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      tests: { type: 'string', default: '20000' },
      batch: { type: 'string', default: '100' },
      lease: { type: 'string', default: '10000' },
      leases: { type: 'string', default: '4' },
      impl: { type: 'string' },
      replay: { type: 'string', default: '0' },
      'replay-impl': { type: 'string' },
    },
  });
  const tests = Number(values.tests);
  const size = Number(values.batch);
  const perLease = Math.max(1, Math.floor(Number(values.lease) / size));
  const leaseCount = Number(values.leases);
  const replay = Number(values.replay);
  const root = values.impl ? path.resolve(values.impl) : path.resolve(import.meta.dirname, '..');
  const load = async <T>(dir: string, rel: string): Promise<T> => (await import(pathToFileURL(path.join(dir, rel)).href)) as T;
  const { identityProcessorFactory } = await load<typeof IdentityProcessorModule>(root, 'src/processors/identity.ts');
  const { IdentityRepo: Repo } = await load<typeof IdentityStoreModule>(root, 'src/store/identities.ts');
  const OtherRepo = values['replay-impl'] ? (await load<typeof IdentityStoreModule>(path.resolve(values['replay-impl']), 'src/store/identities.ts')).IdentityRepo : null;

  const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-bench-identity-cold-'));
  const store = await openStore({ chdbPath: path.join(dataDir, 'chdb'), database: `b_${hex(String(process.pid), 8)}` });
  const logger = createLogger('silent');
  try {
    await migrate(store);
    const repos = openRepositories(store);
    const identities = new Repo(store);
    const other = OtherRepo ? new OtherRepo(store) : null;
    const captured: { name: string; args: unknown[] }[] = [];
    let capturing = true;
    const meter = instrumentIdentityRepo(identities, Repo.prototype, (name, args) => {
      if (capturing && (name === 'stitchCandidates' || name === 'presentCompetitors')) captured.push({ name, args });
    });
    const host = { logger, extensions: { ids: [], repositories: () => ({ ...repos, identities }) } } as unknown as Host;
    const identity = identityProcessorFactory.createExecutions!({}, { id: 'identity', logger });
    const exporter = clickhouseExporterFactory.createExecutions!({}, { id: 'clickhouse', logger });
    await identity.start(host);
    await exporter.start(host);
    console.log(`impl ${root}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
    let identityMs = 0;
    let identityCpuMs = 0;
    const replayed: Record<string, { mine: number[]; other: number[]; mineCpu: number[]; otherCpu: number[] }> = {};
    for (let l = 0; l < leaseCount; l++) {
      const jobs: Job[] = Array.from({ length: perLease }, (_, k) => {
        const i = l * perLease + k;
        return { id: `job-${i}`, receiptId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, receivedAt: T0 + 60_000 + i, attempts: 0, projectId: PROJECT, source: 'native', batch: fixedBatch(i, size, tests) };
      });
      const batch = new WorkBatch({
        leaseId: `lease-${l}`,
        now: T0 + 120_000 + l,
        items: jobs.map((job) => ({ job, run: buildRun({ projectId: job.projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt }), executions: [] })),
      });
      captured.length = 0;
      const t = performance.now();
      const cpu0 = process.cpuUsage();
      await identity.processBatch(batch);
      const ms = performance.now() - t;
      const cpu = process.cpuUsage(cpu0);
      const calls = meter.take();
      identityMs += ms;
      identityCpuMs += (cpu.user + cpu.system) / 1000;
      console.log(
        `lease ${l + 1}: identity ${Math.round(ms)} ms (${Math.round((cpu.user + cpu.system) / 1000)} CPU-ms), new ${batch.identities.length}, stitches ${batch.stitches.length}; ` +
          Object.entries(calls)
            .map(([k, v]) => `${k} ${v.calls}x ${v.rows} rows ${Math.round(v.ms)} ms`)
            .join(', '),
      );
      capturing = false;
      // The lease's candidate queries again, on the same data (not yet written), alternately with the other implementation.
      for (const [n, { name, args }] of [...captured].entries()) {
        const [projectId, keys, seen, renameKeys] = args as [string, StitchKey[], SeenIn, StitchKey[] | undefined];
        const call = (r: IdentityRepo) => (name === 'stitchCandidates' ? r.stitchCandidates(projectId, keys, seen) : r.presentCompetitors(projectId, keys, seen, renameKeys ?? []));
        const slot = (replayed[`lease ${l + 1} #${n + 1} ${name} (${keys.length} keys${renameKeys ? `, ${renameKeys.length} rename keys` : ''})`] ??= { mine: [], other: [], mineCpu: [], otherCpu: [] });
        for (let k = 0; k < replay; k++) {
          const cpuMs = (c: NodeJS.CpuUsage): number => (c.user + c.system) / 1000;
          const t1 = performance.now();
          const c1 = process.cpuUsage();
          const a = await call(identities);
          slot.mineCpu.push(cpuMs(process.cpuUsage(c1)));
          slot.mine.push(performance.now() - t1);
          if (!other) continue;
          const t2 = performance.now();
          const c2 = process.cpuUsage();
          const b = await call(other);
          slot.otherCpu.push(cpuMs(process.cpuUsage(c2)));
          slot.other.push(performance.now() - t2);
          if (canon(a) !== canon(b)) throw new Error(`lease ${l + 1} ${name}: results differ (${a.length} vs ${b.length} rows)`);
        }
      }
      capturing = true;
      meter.take();
      await exporter.exportBatch(batch, leaseSink(store, batch.leaseId));
    }
    for (const [k, v] of Object.entries(replayed)) {
      console.log(
        `replay ${k}: this ${Math.round(median(v.mine))} ms (${Math.round(median(v.mineCpu))} CPU-ms)` +
          (other ? `, other ${Math.round(median(v.other))} ms (${Math.round(median(v.otherCpu))} CPU-ms); medians of ${v.mine.length}, results equal` : ''),
      );
    }
    console.log(JSON.stringify({ identityMs: Math.round(identityMs), identityCpuMs: Math.round(identityCpuMs), loadavg: loadavg(), digest: await digest(store) }, null, 2));
    await identity.shutdown();
    await exporter.shutdown();
    return 0;
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// Data generator of the scale benchmark (bench/scale.ts): a year of CI history written straight
// into ClickHouse with `INSERT … SELECT … FROM numbers(…)`, in chunks so memory stays bounded.
//
// Test identities are computed in JS with the daemon's own functions (client/src/contract/identity.ts), so a
// batch posted later with the same file / suite / title resolves to the generated identity exactly.
// They go to a helper table `bench_tests` (idx → id, fingerprint, names) that the generator joins.
//
// Population (per test, from a hash of its index; shares of the tests):
//   stable 84%    fails 0.1% of its runs, skipped 0.5%
//   flaky   2%    flaky (failed, then passed on a retry) 6%, failed 6%
//   broken  0.3%  fails half its runs
//   noisy  ~9.7%  failed 1%, flaky 0.5%
//   skipper 1.5%  skipped 80%
// Outage runs (1%): 30% of their tests fail. ≈97% of executions pass.
// Runs: `perRun` tests each (run r covers tests r·perRun … r·perRun+perRun−1, modulo the test
// count, like a sharded suite), evenly spread over 365 days ending two hours ago; two runs per
// commit (re-runs and shards share a sha), 70% on main, the rest on PR branches.
import type { Store } from '../src/store/client.js';
import { fingerprint, testIdentityId } from '../client/src/contract/identity.js';

export const DAY_MS = 86_400_000;
export const SPAN_MS = 365 * DAY_MS;

export interface GenPlan {
  projectId: string;
  tests: number;
  executions: number;
  perRun: number;
  runs: number;
  startMs: number;
  endMs: number;
  chunkRows: number;
}

export interface GenTiming {
  table: string;
  rows: number;
  seconds: number;
  rowsPerSec: number;
}

export interface BenchTest {
  idx: number;
  id: string;
  fingerprint: string;
  filePath: string;
  suite: string;
  title: string;
}

/** Names of test `idx`: ~20 tests per file, 4 suites per file. Lower case paths (normalisation-proof). */
export function benchTest(projectId: string, idx: number): BenchTest {
  const file = Math.floor(idx / 20);
  const area = file % 40;
  const filePath = `src/area${area}/module${Math.floor(file / 40)}/feature${file}.test.ts`;
  const suite = `Feature ${file} > group ${Math.floor((idx % 20) / 5)}`;
  const title = `case ${idx} handles input variant ${idx % 7}`;
  const fp = fingerprint({ filePath, suite, title });
  return { idx, id: testIdentityId(projectId, fp), fingerprint: fp, filePath, suite, title };
}

/**
 * Settings of every generating INSERT … SELECT. `insert_deduplicate = 0` alone is not enough in
 * chDB 26: chDB keeps SET values for the session, so the last `insert_deduplication_token` of the
 * daemon's own inserts is still set, and the blocks of an INSERT … SELECT are then deduplicated by
 * token + block number, silently dropping whole blocks of later chunks.
 * `deduplicate_insert_select = 'disable'` turns that off; a unique token as well, to be sure.
 */
const genSalt = `${process.pid}-${Date.now()}`;
function noDedup(what: string): string {
  return `insert_deduplicate = 0, deduplicate_insert_select = 'disable', insert_deduplication_token = 'bench-gen:${genSalt}:${what}'`;
}

/** Kind of a test as SQL over `idx` (0 stable, 1 flaky, 2 broken, 3 noisy, 4 skipper). */
const KIND_SQL = `multiIf(sipHash64(idx, 7) % 1000 < 20, 1, sipHash64(idx, 7) % 1000 < 23, 2, sipHash64(idx, 7) % 1000 < 120, 3, sipHash64(idx, 7) % 1000 < 135, 4, 0)`;

export const KIND_NAMES = ['stable', 'flaky', 'broken', 'noisy', 'skipper'] as const;

export function runIdSql(expr: string): string {
  return `toUUID(UUIDNumToString(MD5(concat('fh-bench-run-', toString(${expr})))))`;
}

function commitSql(runExpr: string): string {
  return `lower(hex(SHA1(concat('commit-', toString(intDiv(${runExpr}, 2))))))`;
}

/** Start (ms) of run `r` as SQL. */
function runStartMsSql(p: GenPlan, r: string): string {
  return `(${p.startMs} + intDiv(toUInt64(${r}) * ${SPAN_MS}, ${p.runs}))`;
}

/** One generated execution per row of numbers(start, count); all execution columns plus `r`. */
function genSql(store: Store, p: GenPlan, start: number, count: number): string {
  return `
SELECT g.n AS n, g.r AS r, t.id AS test_id, g.started_at AS started_at, g.status AS status, g.error_type AS error_type,
       g.duration_ms AS duration_ms, g.commit_sha AS commit_sha, g.branch AS branch, g.pr_number AS pr_number,
       g.trigger AS trigger, g.idx AS idx, t.fingerprint AS fingerprint, t.file_path AS file_path, t.suite AS suite, t.title AS title
FROM (
  SELECT number AS n,
         intDiv(number, ${p.perRun}) AS r,
         number % ${p.perRun} AS k,
         toUInt32(number % ${p.tests}) AS idx,
         ${KIND_SQL} AS kind,
         (sipHash64(number, 11) % 1000000) / 1000000.0 AS u,
         sipHash64(r, 13) % 100 = 0 AS outage,
         fromUnixTimestamp64Milli(toInt64(${runStartMsSql(p, 'r')} + k * 37), 'UTC') AS started_at,
         multiIf(kind = 4 AND u < 0.8, 'skip',
                 outage AND u < 0.3, 'fail',
                 kind = 1, multiIf(u < 0.06, 'flaky', u < 0.12, 'fail', 'pass'),
                 kind = 2, if(u < 0.5, 'fail', 'pass'),
                 kind = 3, multiIf(u < 0.01, 'fail', u < 0.015, 'flaky', 'pass'),
                 u < 0.001, 'fail', u > 0.995, 'skip', 'pass') AS status,
         if(status IN ('fail', 'flaky'), if(sipHash64(number, 23) % 10 = 0, 'TimeoutError', 'AssertionError'), '') AS error_type,
         toUInt32(multiIf(status = 'skip', 0, error_type = 'TimeoutError', 5000,
                          intDiv((5 + sipHash64(idx, 17) % 400) * (50 + sipHash64(number, 19) % 100), 100))) AS duration_ms,
         ${commitSql('r')} AS commit_sha,
         sipHash64(intDiv(r, 2), 37) % 10 < 7 AS on_main,
         if(on_main, 'main', concat('feature/f-', toString(sipHash64(intDiv(r, 2), 41) % 300))) AS branch,
         if(on_main, CAST(NULL AS Nullable(UInt32)), toNullable(toUInt32(1000 + sipHash64(intDiv(r, 2), 41) % 300))) AS pr_number,
         if(on_main, 'push', 'pull_request') AS trigger
  FROM numbers(${start}, ${count})
) AS g
INNER JOIN ${store.table('bench_tests')} AS t ON t.idx = g.idx`;
}

function executionsInsertSql(store: Store, p: GenPlan, start: number, count: number): string {
  return `
INSERT INTO ${store.table('executions')}
  (project_id, test_id, started_at, id, run_id, day, status, attempt, retry_of, duration_ms, file_path, suite, title, params,
   fingerprint, commit_sha, branch, pr_number, ci_provider, trigger, error_type, error_message, error_stack, signature_id,
   cluster_id, artifacts, attributes, spans, trace_id, span_id, ingested_at)
SELECT toUUID('${p.projectId}'), test_id, started_at, toUUID(UUIDNumToString(MD5(concat('fh-bench-exec-', toString(n))))),
       ${runIdSql('r')}, toDate(started_at), status, 1, NULL, duration_ms, file_path, suite, title, '',
       fingerprint, commit_sha, branch, pr_number, 'github_actions', trigger, error_type,
       multiIf(error_type = '', '', error_type = 'TimeoutError', 'Timeout of 5000ms exceeded. For async tests and hooks, ensure "done()" is called',
               concat('expected ', toString(sipHash64(idx, 29) % 1000), ' to equal ', toString(sipHash64(n, 31) % 1000))),
       if(error_type = '', '', concat(error_type, ': test failed\\n    at Context.<anonymous> (', file_path, ':', toString(10 + idx % 200),
          ':7)\\n    at processImmediate (node:internal/timers:476:21)')),
       if(error_type = '', '', lower(hex(SHA1(concat(error_type, toString(idx % 50)))))),
       '', '', '', '', '', '', started_at + toIntervalSecond(90)
FROM (${genSql(store, p, start, count)})
SETTINGS ${noDedup(`exec:${start}`)}, max_insert_threads = 2`;
}

function runsInsertSql(store: Store, p: GenPlan, start: number, count: number): string {
  return `
INSERT INTO ${store.table('runs')}
  (project_id, started_at, id, receipt_id, idempotency_key, source, ci_provider, ci_run_id, ci_job_url, repository, commit_sha,
   branch, base_branch, pr_number, trigger, shard_index, shard_total, status, finished_at, duration_ms, total, passed, failed,
   skipped, flaky, trace_id, has_run_span, status_explicit, ingested_at, version)
SELECT toUUID('${p.projectId}'), min(started_at), ${runIdSql('r')}, toUUID(UUIDNumToString(MD5(concat('fh-bench-receipt-', toString(r))))),
       concat('fh-bench-', toString(r)), 'native', 'github_actions', toString(r), '', 'acme/shop', any(commit_sha),
       any(branch), if(any(branch) = 'main', '', 'main'), any(pr_number), any(trigger), 0, 0,
       if(countIf(status = 'fail') > 0, 'failed', 'passed'),
       max(started_at + toIntervalMillisecond(duration_ms)),
       toUInt64(toUnixTimestamp64Milli(max(started_at + toIntervalMillisecond(duration_ms))) - toUnixTimestamp64Milli(min(started_at))),
       count(), countIf(status = 'pass'), countIf(status = 'fail'), countIf(status = 'skip'), countIf(status = 'flaky'),
       '', 0, 0, max(started_at) + toIntervalSecond(90), toUInt64(toUnixTimestamp64Milli(max(started_at)) + 90000)
FROM (${genSql(store, p, start, count)})
GROUP BY r
SETTINGS ${noDedup(`runs:${start}`)}`;
}

/**
 * Latest state of every test, as the scorer would have left it: most scores 0, the flaky ones
 * 0.2–1 (a few hundred above 0.5, a quarter of them candidates, a third of those auto-quarantined),
 * broken ones damped, noisy ones low. `model` is a full-size ScoreState (ring of 32 runs, 16
 * commits, 8 run ids) like the scorer writes, so reads pay for it as they would in production.
 */
function testStateInsertSql(store: Store, p: GenPlan): string {
  const lastN = `toInt64(idx + ${p.tests} * intDiv(${p.executions} - 1 - idx, ${p.tests}))`;
  return `
INSERT INTO ${store.table('test_state')}
  (project_id, test_id, file_path, suite, title, score, candidate, broken, samples, flip_rate, pass_on_rerun_rate, trend,
   last_flaked_at, reasons, model, auto_quarantined, quarantine_reason, quarantined_at, clean_runs, released_at, last_run_id,
   last_status, last_seen_at, scored_at, applied_lease, version)
SELECT toUUID('${p.projectId}'), id, file_path, suite, title, score, score >= 0.8 AND samples >= 5, kind = 2, samples, flip_rate, rerun_rate,
       multiIf(kind != 1, 'stable', sipHash64(idx, 53) % 3 = 0, 'rising', sipHash64(idx, 53) % 3 = 1, 'falling', 'stable'),
       last_flaked_at,
       multiIf(kind = 1, '[{"code":"PASS_ON_RERUN","message":"failed and then passed on a retry in 4 runs (last 14 days)"},{"code":"HIGH_FLIP_RATE","message":"flipped between pass and fail in 22% of its last 32 runs"}]',
               kind = 2, '[{"code":"RECENT_INSTABILITY","message":"failed 48% of its recent runs"}]',
               kind = 3, '[{"code":"MIXED_OUTCOMES","message":"both passed and failed in its last 32 runs"}]',
               '[{"code":"STABLE","message":"no sign of flakiness"}]'),
       concat('{"v":1,"at":', toString(last_seen_ms), ',"samples":', toString(samples), ',"rerun":', toString(rerun_rate * 3),
              ',"sameSha":', toString(round(score / 3, 6)), ',"isolation":0.25,"retried":', toString(rerun_rate * 4), ',"recovered":', toString(rerun_rate * 3),
              ',"passW":12.5,"failW":', toString(round(flip_rate * 10, 6)), ',"trendFast":0.2,"trendSlow":0.8,"cleanSince":', toString(sipHash64(idx, 59) % 20),
              ',"flakeRate":', toString(round(flip_rate, 6)), ',"episodeStable":true,"ring":"', ring,
              '","commits":[', arrayStringConcat(arrayMap(x -> concat('["', ${commitSql('intDiv(x, ' + p.perRun + ')')}, '",', if(kind = 1 AND x % 3 = 0, '3', '1'), ']'), arrayFilter(x -> x >= 0, arrayMap(j -> last_n - j * ${p.tests}, range(16)))), ','),
              '],"runIds":[', arrayStringConcat(arrayMap(x -> concat('"', toString(${runIdSql('intDiv(x, ' + p.perRun + ')')}), '"'), arrayFilter(x -> x >= 0, arrayMap(j -> last_n - j * ${p.tests}, range(8)))), ','),
              '],"lastFlakedAt":', if(isNull(last_flaked_at), 'null', toString(toUnixTimestamp64Milli(assumeNotNull(last_flaked_at)))),
              ',"events":{"rerun":', toString(if(kind = 1, 4, 0)), ',"sameSha":', toString(if(kind = 1, 2, 0)), ',"isolation":', toString(if(kind = 3, 1, 0)), '}}'),
       auto_q, if(auto_q, concat('score ', toString(round(score, 2)), ' ≥ 0.8'), ''), if(auto_q, last_flaked_at, NULL), 0, NULL,
       ${runIdSql(`intDiv(last_n, ${p.perRun})`)}, 'pass', last_seen, last_seen, concat('gen-', toString(intDiv(last_n, ${p.perRun}))),
       toUInt64(last_seen_ms)
FROM (
  SELECT idx, id, file_path, suite, title,
         ${KIND_SQL} AS kind,
         (sipHash64(idx, 43) % 10000) / 10000.0 AS f,
         toFloat32(multiIf(kind = 1, 0.2 + 0.8 * f, kind = 2, 0.05 + 0.2 * f, kind = 3, 0.01 + 0.3 * f * f, 0)) AS score,
         toUInt32(intDiv(${p.executions} - 1 - idx, ${p.tests}) + 1) AS samples,
         toFloat32(multiIf(kind = 1, 0.1 + 0.3 * f, kind = 2, 0.4, kind = 3, 0.02, 0)) AS flip_rate,
         toFloat32(multiIf(kind = 1, 0.05 + 0.2 * f, kind = 3, 0.005, 0)) AS rerun_rate,
         ${lastN} AS last_n,
         ${runStartMsSql(p, `intDiv(last_n, ${p.perRun})`)} AS last_seen_ms,
         fromUnixTimestamp64Milli(toInt64(last_seen_ms), 'UTC') AS last_seen,
         if(kind IN (1, 3), toNullable(fromUnixTimestamp64Milli(toInt64(last_seen_ms - (sipHash64(idx, 61) % 30) * ${DAY_MS}), 'UTC')), NULL) AS last_flaked_at,
         kind = 1 AND score >= 0.8 AND sipHash64(idx, 67) % 3 = 0 AS auto_q,
         arrayStringConcat(arrayMap(i -> multiIf(kind = 1 AND sipHash64(idx, i) % 8 = 0, 'R', kind = 1 AND sipHash64(idx, i) % 8 = 1, 'F', kind = 3 AND sipHash64(idx, i) % 30 = 0, 'F', 'P'), range(32))) AS ring
  FROM ${store.table('bench_tests')}
)
SETTINGS ${noDedup('state')}`;
}

async function timed(table: string, rows: () => Promise<number>, f: () => Promise<void>): Promise<GenTiming> {
  const t0 = performance.now();
  await f();
  const seconds = (performance.now() - t0) / 1000;
  const n = await rows();
  return { table, rows: n, seconds: round(seconds), rowsPerSec: Math.round(n / seconds) };
}

async function count(store: Store, table: string): Promise<number> {
  const rows = await store.query<{ n: number | string }>(`SELECT count() AS n FROM ${store.table(table)}`);
  return Number(rows[0]?.n ?? 0);
}

/** Generates everything; logs progress; returns per-table timings. */
export async function generate(store: Store, p: GenPlan, log: (line: string) => void): Promise<GenTiming[]> {
  const timings: GenTiming[] = [];
  // 1. Identities, computed with the daemon's own fingerprint functions.
  await store.command(`DROP TABLE IF EXISTS ${store.table('bench_tests')}`);
  await store.command(
    `CREATE TABLE ${store.table('bench_tests')} (idx UInt32, id UUID, fingerprint String, file_path String, suite String, title String)
     ENGINE = MergeTree ORDER BY idx`,
  );
  timings.push(
    await timed('test_identities', () => count(store, 'test_identities'), async () => {
      for (let s = 0; s < p.tests; s += 50_000) {
        const rows = [];
        for (let i = s; i < Math.min(p.tests, s + 50_000); i++) {
          const t = benchTest(p.projectId, i);
          rows.push({ idx: t.idx, id: t.id, fingerprint: t.fingerprint, file_path: t.filePath, suite: t.suite, title: t.title });
        }
        await store.insert('bench_tests', rows, `bench:tests:${p.projectId}:${s}`);
      }
      await store.command(
        `INSERT INTO ${store.table('test_identities')} (project_id, id, fingerprint, file_path, suite, title, params, params_hash, first_seen_at, version)
         SELECT toUUID('${p.projectId}'), id, fingerprint, file_path, suite, title, '', '',
                fromUnixTimestamp64Milli(toInt64(${runStartMsSql(p, `intDiv(idx, ${p.perRun})`)}), 'UTC'),
                toUInt64(${runStartMsSql(p, `intDiv(idx, ${p.perRun})`)})
         FROM ${store.table('bench_tests')} SETTINGS ${noDedup('identities')}`,
      );
    }),
  );
  // 2. Executions (the materialized views fill the daily rollups as they go), then runs.
  let execSeconds = 0;
  let runSeconds = 0;
  for (let s = 0; s < p.executions; s += p.chunkRows) {
    const n = Math.min(p.chunkRows, p.executions - s);
    const t0 = performance.now();
    await store.command(executionsInsertSql(store, p, s, n));
    const t1 = performance.now();
    await store.command(runsInsertSql(store, p, s, n));
    const t2 = performance.now();
    execSeconds += (t1 - t0) / 1000;
    runSeconds += (t2 - t1) / 1000;
    log(`  executions ${(s + n).toLocaleString('en-US')} / ${p.executions.toLocaleString('en-US')}  (${round((t1 - t0) / 1000)} s + runs ${round((t2 - t1) / 1000)} s)`);
  }
  const execRows = await count(store, 'executions');
  if (execRows !== p.executions) throw new Error(`generated ${execRows} executions, expected ${p.executions}`);
  timings.push({ table: 'executions (+ 3 materialized views)', rows: execRows, seconds: round(execSeconds), rowsPerSec: Math.round(execRows / execSeconds) });
  const runRows = await count(store, 'runs');
  timings.push({ table: 'runs', rows: runRows, seconds: round(runSeconds), rowsPerSec: Math.round(runRows / runSeconds) });
  // 3. Test state, a few people's overrides.
  timings.push(await timed('test_state', () => count(store, 'test_state'), () => store.command(testStateInsertSql(store, p))));
  timings.push(
    await timed('quarantine_overrides', () => count(store, 'quarantine_overrides'), () =>
      store.command(
        `INSERT INTO ${store.table('quarantine_overrides')} (project_id, test_id, override, reason, state_after, decided_at, version)
         SELECT toUUID('${p.projectId}'), id, if(idx % 2 = 0, 'quarantined', 'released'), 'triaged by the team', idx % 2 = 0,
                fromUnixTimestamp64Milli(toInt64(${p.endMs} - idx * 1000), 'UTC'), toUInt64(${p.endMs} - idx * 1000)
         FROM ${store.table('bench_tests')} WHERE sipHash64(idx, 71) % 1000 = 0 SETTINGS ${noDedup('overrides')}`,
      ),
    ),
  );
  return timings;
}

/** Tests of the block a run `r` would cover, with their kind: what a next CI run posts. */
export async function testsOfRun(store: Store, p: GenPlan, r: number): Promise<(BenchTest & { kind: number })[]> {
  const idxs = Array.from({ length: p.perRun }, (_, k) => (r * p.perRun + k) % p.tests);
  const rows = await store.query<{ idx: number; id: string; fingerprint: string; file_path: string; suite: string; title: string; kind: number }>(
    `SELECT idx, id, fingerprint, file_path, suite, title, ${KIND_SQL} AS kind FROM ${store.table('bench_tests')} WHERE idx IN {idxs:Array(UInt32)} ORDER BY idx`,
    { idxs },
  );
  return rows.map((x) => ({ idx: Number(x.idx), id: x.id, fingerprint: x.fingerprint, filePath: x.file_path, suite: x.suite, title: x.title, kind: Number(x.kind) }));
}

export function round(n: number): number {
  return Math.round(n * 100) / 100;
}

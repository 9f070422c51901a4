// Pull-request routes for CI: GET /v1/runs/summary (the PR comment) and GET /v1/runs/gate (the
// merge gate) (docs/contract.md §6).
//
// A commit is every run stored for it: shards and reruns are merged per test. A test that failed
// in one run and passed in another, or failed and then passed on a retry, is `flaky`; one that
// only failed is `fail`. A commit sha of ≥ 7 characters matches a stored sha it is a prefix of,
// and a stored short sha matches a longer query that starts with it.
import { z } from 'zod';
import type { RunStatus } from '../../domain/batch.js';
import { parseReportPartKey } from '../../domain/report-parts.js';
import { effectiveQuarantine } from '../../domain/quarantine.js';
import { toNumber, type Store } from '../../store/client.js';
import type { CodeownersRepo } from '../../store/codeowners.js';
import type { TestRepo } from '../../store/tests.js';
import { errors } from '../errors.js';
import { defineRoute, type AnyRouteDef } from '../route.js';
import { cell } from '../../domain/markdown.js';

const COMMIT_SHA_RE = /^[0-9a-f]{7,40}$/i;
const BASE_BRANCH_RE = /^[\w./-]{1,255}$/;
/** Score from which a test counts as a known flake on its own (docs/contract.md §6). */
export const KNOWN_FLAKE_SCORE = 0.5;
/** How far back the base branch's history decides whether a failure is known. */
export const BASE_WINDOW_DAYS = 14;
/** Rows of tests shown in a markdown comment before "and N more". */
export const MARKDOWN_MAX_ROWS = 50;
/** Runs of one commit considered (shards × reruns); more than this is not a real commit. */
const MAX_RUNS = 1000;

export const STRICTNESS = ['off', 'new', 'any'] as const;
export type Strictness = (typeof STRICTNESS)[number];
export type Classification = 'new_failure' | 'known_flake' | 'quarantined';

const summaryTestSchema = z.object({
  testIdentityId: z.string(),
  filePath: z.string(),
  suite: z.string(),
  title: z.string(),
  status: z.enum(['fail', 'flaky']),
  errorMessage: z.string().nullable(),
  score: z.number(),
  quarantined: z.boolean(),
  /** The top reason's message, as Flakemetry sends it (its PR comment shows it). */
  topReason: z.string().nullable(),
  /** The top reason's code (e.g. PASS_ON_RERUN). */
  topReasonCode: z.string().nullable(),
});

export const summaryResponseSchema = z.object({
  found: z.literal(true),
  summary: z.object({
    commitSha: z.string(),
    branch: z.string(),
    prNumber: z.number().nullable(),
    runStatus: z.string(),
    /** False while a run of the commit is still arriving (an OTLP trace whose run span is not in yet). */
    complete: z.boolean(),
    failed: z.number(),
    flaky: z.number(),
    /** Distinct tests that ran (not only skipped) in the commit's runs. */
    totalTests: z.number(),
    tests: z.array(summaryTestSchema),
  }),
  markdown: z.string(),
});

const gateTestSchema = summaryTestSchema.extend({
  classification: z.enum(['new_failure', 'known_flake', 'quarantined']),
  baseFailRate: z.number(),
  baseSampleSize: z.number(),
});

export const gateResponseSchema = z.union([
  z.object({ found: z.literal(false) }),
  z.object({
    found: z.literal(true),
    gate: z.object({
      commitSha: z.string(),
      branch: z.string(),
      baseBranch: z.string(),
      prNumber: z.number().nullable(),
      runStatus: z.string(),
      /** False while a run of the commit is still arriving: a verdict on part of a run. */
      complete: z.boolean(),
      newFailures: z.number(),
      knownFlakes: z.number(),
      strictness: z.enum(STRICTNESS),
      verdict: z.enum(['pass', 'block']),
      tests: z.array(gateTestSchema),
    }),
    markdown: z.string(),
  }),
]);

export type SummaryTest = z.infer<typeof summaryTestSchema> & { owners: string[] };
export type GateTest = SummaryTest & { classification: Classification; baseFailRate: number; baseSampleSize: number };

export interface CommitView {
  commitSha: string;
  branch: string;
  baseBranch: string | null;
  prNumber: number | null;
  runStatus: RunStatus;
  /** Every run of the commit is whole (an OTLP trace counts once its run span is in). */
  complete: boolean;
  runIds: string[];
  /** Distinct tests that ran in the commit's runs (markdown headline). */
  totalTests: number;
  tests: SummaryTest[];
}

export interface PrRouteDeps {
  store: Store;
  tests: TestRepo;
  codeowners: CodeownersRepo;
}

interface RunRow {
  id: string;
  commit_sha: string;
  branch: string;
  base_branch: string;
  pr_number: number | string | null;
  status: RunStatus;
  shard_index: number | string;
  started_ms: number | string;
  source: string;
  has_run_span: number | string;
  idempotency_key: string;
}

interface FailingRow {
  test_id: string;
  file_path: string;
  suite: string;
  title: string;
  fails: number | string;
  passes: number | string;
  flakies: number | string;
  error_message: string;
}

function commitShaOf(raw: string | undefined): string {
  const sha = raw?.trim() ?? '';
  if (!COMMIT_SHA_RE.test(sha)) throw errors.invalidCommitSha();
  return sha.toLowerCase();
}

/** Two shas name the same commit when one starts with the other. */
function sameCommit(a: string, b: string): boolean {
  return a.startsWith(b) || b.startsWith(a);
}

const RUN_STATUS_RANK: Record<RunStatus, number> = { failed: 3, running: 2, canceled: 1, passed: 0 };

/**
 * The commit's status: per shard the latest run decides (a rerun replaces the attempt before it),
 * and across shards the worst wins (failed > running > canceled > passed).
 */
export function mergeRunStatus(runs: readonly { shardIndex: number; status: RunStatus; startedAt: number }[]): RunStatus {
  const latest = new Map<number, { status: RunStatus; startedAt: number }>();
  for (const r of runs) {
    const prev = latest.get(r.shardIndex);
    if (!prev || r.startedAt > prev.startedAt) latest.set(r.shardIndex, r);
  }
  let status: RunStatus = 'passed';
  for (const r of latest.values()) if (RUN_STATUS_RANK[r.status] > RUN_STATUS_RANK[status]) status = r.status;
  return status;
}

/** fail only failed; flaky = failed somewhere and passed somewhere (another run or a retry), or reported flaky. */
export function mergedStatus(fails: number, passes: number, flakies: number): 'fail' | 'flaky' | null {
  if (flakies > 0 || (fails > 0 && passes > 0)) return 'flaky';
  if (fails > 0) return 'fail';
  return null;
}

/** Fails first, then score desc, then a stable order by file and title. */
export function compareTests(a: SummaryTest, b: SummaryTest): number {
  if (a.status !== b.status) return a.status === 'fail' ? -1 : 1;
  if (a.score !== b.score) return b.score - a.score;
  return a.filePath.localeCompare(b.filePath) || a.suite.localeCompare(b.suite) || a.title.localeCompare(b.title) || a.testIdentityId.localeCompare(b.testIdentityId);
}

async function loadCommit(d: PrRouteDeps, projectId: string, sha: string): Promise<CommitView | null> {
  const runs = await d.store.query<RunRow>(
    `SELECT id, commit_sha, branch, base_branch, pr_number, status, shard_index, toUnixTimestamp64Milli(started_at) AS started_ms, source, has_run_span, idempotency_key
     FROM ${d.store.table('runs')} FINAL
     WHERE project_id = {projectId:UUID} AND length(commit_sha) >= 7
       AND (startsWith(commit_sha, {sha:String}) OR startsWith({sha:String}, commit_sha))
     ORDER BY started_at DESC, id DESC
     LIMIT {limit:UInt32}`,
    { projectId, sha, limit: MAX_RUNS },
  );
  const latest = runs[0];
  if (!latest) return null;
  // An abbreviated query may match several commits: the one of the newest run wins, with every run
  // whose sha is compatible with it (a reporter may have sent the short form).
  const selected = runs.filter((r) => sameCommit(r.commit_sha, latest.commit_sha));
  const commitSha = selected.reduce((longest, r) => (r.commit_sha.length > longest.length ? r.commit_sha : longest), latest.commit_sha);
  const prRun = selected.find((r) => r.pr_number !== null && toNumber(r.pr_number) > 0);
  const baseRun = selected.find((r) => r.base_branch !== '');
  const runIds = selected.map((r) => r.id);
  // A trace arrives in parts and its run span comes last (an SDK ends it last; our reporter sends it
  // last): until it is in, more executions of the run may still be on their way.
  // Runs still arriving in parts: an OTLP trace until its run span, a split JUnit report until its last part.
  const inParts = (r: RunRow): boolean => r.source === 'otlp' || (r.source === 'junit' && parseReportPartKey(r.idempotency_key) !== undefined);
  const complete = selected.every((r) => !inParts(r) || toNumber(r.has_run_span) === 1);
  const runStatus = mergeRunStatus(selected.map((r) => ({ shardIndex: toNumber(r.shard_index), status: r.status, startedAt: toNumber(r.started_ms) })));

  const [failing, totals] = await Promise.all([
    d.store.query<FailingRow>(
      `SELECT test_id,
              argMax(file_path, started_at) AS file_path,
              argMax(suite, started_at) AS suite,
              argMax(title, started_at) AS title,
              countIf(status = 'fail') AS fails,
              countIf(status = 'pass') AS passes,
              countIf(status = 'flaky') AS flakies,
              argMaxIf(error_message, started_at, status IN ('fail', 'flaky') AND error_message != '') AS error_message
       FROM ${d.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND run_id IN {runIds:Array(UUID)}
       GROUP BY test_id
       HAVING fails > 0 OR flakies > 0`,
      { projectId, runIds },
    ),
    d.store.query<{ n: number | string }>(
      `SELECT uniqExact(test_id) AS n FROM ${d.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND run_id IN {runIds:Array(UUID)} AND status != 'skip'`,
      { projectId, runIds },
    ),
  ]);

  const ids = failing.map((r) => r.test_id);
  const [states, overrides, owners] = await Promise.all([d.tests.states(projectId, ids), d.tests.overrides(projectId, ids), d.codeowners.resolver(projectId)]);
  const tests: SummaryTest[] = [];
  for (const r of failing) {
    const status = mergedStatus(toNumber(r.fails), toNumber(r.passes), toNumber(r.flakies));
    if (status === null) continue;
    const state = states.get(r.test_id) ?? null;
    const top = state?.reasons[0] ?? null;
    tests.push({
      testIdentityId: r.test_id,
      filePath: r.file_path,
      suite: r.suite,
      title: r.title,
      status,
      errorMessage: r.error_message === '' ? null : r.error_message,
      score: round4(state?.score ?? 0),
      quarantined: effectiveQuarantine(state?.auto ?? null, overrides.get(r.test_id) ?? null).quarantined,
      topReason: top?.message ?? null,
      topReasonCode: top?.code ?? null,
      owners: owners(r.file_path),
    });
  }
  tests.sort(compareTests);
  return {
    commitSha,
    branch: latest.branch,
    baseBranch: baseRun?.base_branch ?? null,
    prNumber: prRun ? toNumber(prRun.pr_number) : null,
    runStatus,
    complete,
    runIds,
    totalTests: toNumber(totals[0]?.n),
    tests,
  };
}

/** Per test: graded base-branch runs in the window and how many of them failed or flaked. */
async function baseHistory(d: PrRouteDeps, projectId: string, baseBranch: string, testIds: string[], excludeRunIds: string[]): Promise<Map<string, { graded: number; bad: number }>> {
  if (testIds.length === 0) return new Map();
  const rows = await d.store.query<{ test_id: string; graded: number | string; bad: number | string }>(
    `SELECT test_id, count() AS graded, countIf(bad = 1) AS bad
     FROM (
       SELECT test_id, run_id, max(status IN ('fail', 'flaky')) AS bad
       FROM ${d.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)}
         AND started_at >= now64(3) - toIntervalDay({days:UInt32})
         AND branch = {baseBranch:String} AND status != 'skip'
         AND run_id NOT IN {exclude:Array(UUID)}
       GROUP BY test_id, run_id
     )
     GROUP BY test_id`,
    { projectId, ids: testIds, days: BASE_WINDOW_DAYS, baseBranch, exclude: excludeRunIds },
  );
  return new Map(rows.map((r) => [r.test_id, { graded: toNumber(r.graded), bad: toNumber(r.bad) }]));
}

/** Classification of one failing (fail or flaky) test of the PR. */
export function classify(t: { status: 'fail' | 'flaky'; score: number; quarantined: boolean }, base: { graded: number; bad: number }): Classification {
  if (t.quarantined) return 'quarantined';
  if (t.score >= KNOWN_FLAKE_SCORE || base.bad > 0) return 'known_flake';
  // Passed on a retry (or in another run of the commit): flaky by definition, never a new failure.
  if (t.status === 'flaky') return 'known_flake';
  return 'new_failure';
}

export function verdictOf(strictness: Strictness, tests: readonly GateTest[]): 'pass' | 'block' {
  if (strictness === 'off') return 'pass';
  if (strictness === 'new') return tests.some((t) => t.classification === 'new_failure') ? 'block' : 'pass';
  return tests.some((t) => t.status === 'fail' && !t.quarantined) ? 'block' : 'pass';
}

export function prRoutes(d: PrRouteDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/runs/summary',
      summary: 'Failing and flaky tests of a commit, merged over its shards and reruns, with a PR comment',
      tags: ['runs'],
      auth: { kind: 'token', anyOf: ['ingest', 'read'] },
      query: z.object({ commitSha: z.string().optional() }),
      response: summaryResponseSchema,
      async handler({ query, principal }) {
        const sha = commitShaOf(query.commitSha);
        const view = await loadCommit(d, principal!.projectId, sha);
        if (!view) throw errors.notFound(`no run of commit ${sha} was ingested`);
        const failed = view.tests.filter((t) => t.status === 'fail').length;
        return {
          found: true as const,
          summary: {
            commitSha: view.commitSha,
            branch: view.branch,
            prNumber: view.prNumber,
            runStatus: view.runStatus,
            complete: view.complete,
            failed,
            flaky: view.tests.length - failed,
            totalTests: view.totalTests,
            tests: view.tests.map(publicTest),
          },
          markdown: summaryMarkdown(view),
        };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/runs/gate',
      summary: 'Merge gate: failures of a commit that are new versus already flaky on the base branch',
      tags: ['runs'],
      auth: { kind: 'token', anyOf: ['ingest', 'read'] },
      query: z.object({
        commitSha: z.string().optional(),
        baseBranch: z.string().optional(),
        // An unknown value means `new`, as in Flakemetry: its gate action reads any non-2xx as "not
        // processed yet" and skips the gate, so a 400 here would let a PR through that should block.
        strictness: z.enum(STRICTNESS).catch('new'),
      }),
      response: gateResponseSchema,
      async handler({ query, principal }) {
        const sha = commitShaOf(query.commitSha);
        if (query.baseBranch !== undefined && !BASE_BRANCH_RE.test(query.baseBranch)) throw errors.invalidBaseBranch();
        const projectId = principal!.projectId;
        const view = await loadCommit(d, projectId, sha);
        if (!view) return { found: false as const };
        const baseBranch = query.baseBranch ?? (view.baseBranch !== null && BASE_BRANCH_RE.test(view.baseBranch) ? view.baseBranch : 'main');
        const history = await baseHistory(d, projectId, baseBranch, view.tests.map((t) => t.testIdentityId), view.runIds);
        const tests: GateTest[] = view.tests.map((t) => {
          const base = history.get(t.testIdentityId) ?? { graded: 0, bad: 0 };
          return {
            ...t,
            classification: classify(t, base),
            baseFailRate: base.graded > 0 ? round4(base.bad / base.graded) : 0,
            baseSampleSize: base.graded,
          };
        });
        // New failures first, then known flakes, then quarantined; fails before flaky; score desc.
        const rank: Record<Classification, number> = { new_failure: 0, known_flake: 1, quarantined: 2 };
        tests.sort((a, b) => rank[a.classification] - rank[b.classification] || compareTests(a, b));
        const newFailures = tests.filter((t) => t.classification === 'new_failure').length;
        const knownFlakes = tests.length - newFailures;
        const verdict = verdictOf(query.strictness, tests);
        const gate = {
          commitSha: view.commitSha,
          branch: view.branch,
          baseBranch,
          prNumber: view.prNumber,
          runStatus: view.runStatus,
          complete: view.complete,
          newFailures,
          knownFlakes,
          strictness: query.strictness,
          verdict,
          tests: tests.map((t) => ({ ...publicTest(t), classification: t.classification, baseFailRate: t.baseFailRate, baseSampleSize: t.baseSampleSize })),
        };
        return { found: true as const, gate, markdown: gateMarkdown(view, gate.baseBranch, query.strictness, verdict, tests) };
      },
    }),
  ];
}

function publicTest(t: SummaryTest): z.infer<typeof summaryTestSchema> {
  return {
    testIdentityId: t.testIdentityId,
    filePath: t.filePath,
    suite: t.suite,
    title: t.title,
    status: t.status,
    errorMessage: t.errorMessage,
    score: t.score,
    quarantined: t.quarantined,
    topReason: t.topReason,
    topReasonCode: t.topReasonCode,
  };
}

function round4(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

// ---------------------------------------------------------------------------------------------
// Markdown

export const SUMMARY_MARKER = '<!-- service:pr-comment -->';
export const GATE_MARKER = '<!-- service:pr-gate -->';
/** Flakemetry's markers: its pr-comment and gate actions update the comment holding theirs (sticky). */
export const FLAKEMETRY_SUMMARY_MARKER = '<!-- flakemetry:pr-comment -->';
export const FLAKEMETRY_GATE_MARKER = '<!-- flakemetry:pr-gate -->';

/** Inline code that survives backticks in the text. */
function code(text: string, max = 120): string {
  const c = cell(text, max).replace(/`/g, 'ˋ');
  return c === '' ? '' : `\`${c}\``;
}

function testName(t: SummaryTest): string {
  const name = t.suite ? `${t.suite} › ${t.title}` : t.title;
  return cell(name, 140);
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function shortSha(sha: string): string {
  return sha.slice(0, 12);
}

function contextLine(view: CommitView, extra: string[] = []): string {
  const parts = [`commit ${code(shortSha(view.commitSha))}`, `branch ${code(view.branch)}`];
  if (view.prNumber !== null) parts.push(`PR #${view.prNumber}`);
  parts.push(`run ${view.runStatus}`, `${view.runIds.length === 1 ? '1 run' : `${view.runIds.length} runs (shards and reruns merged)`}`);
  return [...parts, ...extra].join(' · ');
}

function knownFromScore(t: SummaryTest): boolean {
  return t.quarantined || t.score >= KNOWN_FLAKE_SCORE;
}

function summaryKind(t: SummaryTest): string {
  if (t.quarantined) return '🔒 quarantined';
  if (t.score >= KNOWN_FLAKE_SCORE) return `🔁 known flaky (${t.score.toFixed(2)})`;
  return '🆕 new';
}

function ownersCell(t: SummaryTest): string {
  return t.owners.length > 0 ? cell(t.owners.join(' '), 80) : '—';
}

function errorCell(t: SummaryTest): string {
  return t.errorMessage ? code(t.errorMessage) : '—';
}

export function summaryMarkdown(view: CommitView): string {
  const fails = view.tests.filter((t) => t.status === 'fail');
  const flaky = view.tests.filter((t) => t.status === 'flaky');
  const lines: string[] = [SUMMARY_MARKER, FLAKEMETRY_SUMMARY_MARKER];
  if (fails.length === 0 && flaky.length === 0) {
    lines.push(`### ✅ Flakehouse: all ${plural(view.totalTests, 'test')} passed`);
  } else {
    const head = fails.length > 0 ? '❌' : '⚠️';
    const counts = [fails.length > 0 ? `${fails.length} failed` : null, flaky.length > 0 ? `${flaky.length} flaky` : null].filter((x) => x !== null).join(', ');
    lines.push(`### ${head} Flakehouse: ${counts} of ${plural(view.totalTests, 'test')}`);
  }
  lines.push('', contextLine(view));
  let budget = MARKDOWN_MAX_ROWS;
  let hidden = 0;
  if (fails.length > 0) {
    const newCount = fails.filter((t) => !knownFromScore(t)).length;
    lines.push('', `**Failing tests** (${plural(newCount, 'new failure')}, ${fails.length - newCount} known flaky or quarantined)`, '');
    lines.push('| | Test | File | Owners | Error |', '|---|---|---|---|---|');
    const shown = fails.slice(0, budget);
    for (const t of shown) lines.push(`| ${summaryKind(t)} | ${testName(t)} | ${code(t.filePath)} | ${ownersCell(t)} | ${errorCell(t)} |`);
    hidden += fails.length - shown.length;
    budget -= shown.length;
  }
  if (flaky.length > 0) {
    const shown = flaky.slice(0, Math.max(0, budget));
    hidden += flaky.length - shown.length;
    lines.push('', `<details><summary>${plural(flaky.length, 'flaky test')} (failed, then passed on a retry or in another run)</summary>`, '');
    if (shown.length > 0) {
      lines.push('| Test | File | Score | Reason | Error |', '|---|---|---|---|---|');
      for (const t of shown) {
        const reason = t.quarantined ? 'quarantined' : t.topReason ? cell(t.topReason, 100) : '—';
        lines.push(`| ${testName(t)} | ${code(t.filePath)} | ${t.score.toFixed(2)} | ${reason} | ${errorCell(t)} |`);
      }
    }
    lines.push('', '</details>');
  }
  if (hidden > 0) lines.push('', `_…and ${hidden} more._`);
  return `${lines.join('\n')}\n`;
}

const CLASS_LABEL: Record<Classification, string> = {
  new_failure: '🆕 new failure',
  known_flake: '🔁 known flake',
  quarantined: '🔒 quarantined',
};

export function gateMarkdown(view: CommitView, baseBranch: string, strictness: Strictness, verdict: 'pass' | 'block', tests: readonly GateTest[]): string {
  const newFailures = tests.filter((t) => t.classification === 'new_failure').length;
  const known = tests.filter((t) => t.classification === 'known_flake').length;
  const quarantined = tests.filter((t) => t.classification === 'quarantined').length;
  const counts = `${plural(newFailures, 'new failure')}, ${plural(known, 'known flake')}, ${quarantined} quarantined`;
  const lines: string[] = [GATE_MARKER, FLAKEMETRY_GATE_MARKER];
  lines.push(verdict === 'block' ? `### 🚫 Flakehouse gate: blocked — ${counts}` : `### ✅ Flakehouse gate: passed — ${counts}`);
  const why =
    strictness === 'off'
      ? 'strictness `off`: the gate never blocks'
      : strictness === 'new'
        ? 'strictness `new`: only failures not seen on the base branch block'
        : 'strictness `any`: any failing test that is not quarantined blocks';
  lines.push('', contextLine(view, [`base ${code(baseBranch)}`]), '', `_${why}; a failure is known when the test is quarantined, has a flaky score ≥ ${KNOWN_FLAKE_SCORE}, failed or flaked on the base branch in the last ${BASE_WINDOW_DAYS} days, or passed on a retry._`);
  if (tests.length > 0) {
    lines.push('', '| | Test | File | Status | Base fail rate (14 d) | Score | Error |', '|---|---|---|---|---|---|---|');
    const shown = tests.slice(0, MARKDOWN_MAX_ROWS);
    for (const t of shown) {
      const base = t.baseSampleSize > 0 ? `${(t.baseFailRate * 100).toFixed(0)}% of ${t.baseSampleSize}` : 'no runs';
      lines.push(`| ${CLASS_LABEL[t.classification]} | ${testName(t)} | ${code(t.filePath)} | ${t.status} | ${base} | ${t.score.toFixed(2)} | ${errorCell(t)} |`);
    }
    if (tests.length > shown.length) lines.push('', `_…and ${tests.length - shown.length} more._`);
  }
  return `${lines.join('\n')}\n`;
}

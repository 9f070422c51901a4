// Every text about a pull request's results (docs/contract.md §6), rendered from the answers of
// GET /v1/runs/summary and /v1/runs/gate. Pure: the routes render their `markdown` here, and the
// CLI renders what `flakehouse summary` / `comment` post and what `gate` prints.
//
// The CLI's comment is rendered on the CI side rather than taken from the server's `markdown` so it
// can merge the summary with the gate's classification (new failure, already broken on the base
// branch, known flake, from the base branch's history) and link to the dashboard, whose URL only the
// CI side knows.
import { BASE_WINDOW_DAYS, classifyByState, newTestFailed, verdictOf, type Classification } from './gate.js';
import { cell } from './markdown.js';
import type { FixVerificationBody, GateBody, GateTestBody, SummaryBody, SummaryTestBody } from './pr-schemas.js';
import { countsAsFailed, countsText, prTally, type PrStatus, type PrTally } from './pr-summary.js';

export const SUMMARY_MARKER = '<!-- service:pr-comment -->';
export const GATE_MARKER = '<!-- service:pr-gate -->';
/** Flakemetry's markers: its pr-comment and gate actions update the comment holding theirs (sticky). */
export const FLAKEMETRY_SUMMARY_MARKER = '<!-- flakemetry:pr-comment -->';
export const FLAKEMETRY_GATE_MARKER = '<!-- flakemetry:pr-gate -->';
/** The hidden first line that makes the CLI's comment findable again (sticky), as the server's. */
export const COMMENT_MARKER = SUMMARY_MARKER;

/** Rows of tests shown before "and N more" (GitHub refuses comments over 65,536 characters). */
export const MAX_ROWS = 50;
/** The CLI's comment is cut here, below GitHub's limit. */
const MAX_BODY = 60_000;

/**
 * Whether a PR comment is the sticky one to update: ours, or the one Flakemetry's pr-comment action
 * left (a team moving over keeps its comment). Ours carries both markers, so Flakemetry's action,
 * if it still runs, finds it too.
 */
export function isStickyComment(body: string | null | undefined): boolean {
  return !!body && (body.includes(COMMENT_MARKER) || body.includes(FLAKEMETRY_SUMMARY_MARKER));
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

/** Inline code that survives backticks in the text; `empty` when nothing is left of it. */
function code(text: string, empty: string): string {
  const c = cell(text, 120).replace(/`/g, 'ˋ');
  return c === '' ? empty : `\`${c}\``;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function testName(t: Pick<SummaryTestBody, 'suite' | 'title'>): string {
  return cell(t.suite ? `${t.suite} › ${t.title}` : t.title, 140);
}

/** "new test failed 1 of 10": a new test `flakehouse run --verify-new` re-ran, that failed an attempt. */
function newTestText(t: Pick<SummaryTestBody, 'newTest'>): string | null {
  return t.newTest && newTestFailed(t) ? `new test failed ${t.newTest.failed} of ${t.newTest.runs}` : null;
}

/** A flaky test's failure here not proven a flake (client/src/contract/gate.ts flakeProof): why, and how to prove it. */
function unprovenText(t: Pick<SummaryTestBody, 'flakeProof' | 'proofHint' | 'knownFlake'>): string | null {
  return t.flakeProof === 'unproven' && !t.knownFlake ? `flake unproven: ${t.proofHint ?? 're-run the test on this commit'}` : null;
}

/** The fixes `flakehouse run --verify-fix` proved or not, as a section of a comment. */
function fixLines(fixes: readonly FixVerificationBody[] | undefined): string[] {
  if (!fixes || fixes.length === 0) return [];
  const lines = ['', `#### 🩹 Fixes of flaky tests (${fixes.length})`, ''];
  for (const f of fixes.slice(0, MAX_ROWS)) {
    const verdict = f.verified ? `✅ fix verified: passed ${f.runs} of ${f.runs} re-runs` : `❌ fix not verified: failed ${f.failed} of ${f.runs} re-runs`;
    lines.push(`- ${verdict} — ${testName(f)} (${code(f.filePath, '—')})`);
  }
  if (fixes.length > MAX_ROWS) lines.push(`- …and ${fixes.length - MAX_ROWS} more`);
  return lines;
}

// ---------------------------------------------------------------------------------------------
// The server's markdown: the `markdown` of the summary and the gate answers

/** A test of the summary with the owners CODEOWNERS gives its file (the answer itself does not carry them). */
export type OwnedSummaryTest = SummaryTestBody & { owners: string[] };
type CommitHeadline = Pick<SummaryBody, 'commitSha' | 'branch' | 'prNumber' | 'jobs'> & { status: PrStatus };

/** How many jobs and runs were merged: "1 run", "2 jobs, 3 runs (shards and reruns merged)". */
function jobsText(jobs: number | undefined, runCount: number): string {
  if (jobs === undefined || jobs <= 1) return runCount === 1 ? '1 run' : `${runCount} runs (reruns merged)`;
  return `${jobs} jobs, ${runCount} runs (shards and reruns merged)`;
}

/** The status word, with the gate's meaning: never "passed" while the gate blocks. */
export function statusText(status: PrStatus): string {
  return `status ${status}`;
}

function contextLine(commit: CommitHeadline, runCount: number, extra: string[] = []): string {
  const parts = [`commit ${code(commit.commitSha.slice(0, 12), '')}`, `branch ${code(commit.branch, '')}`];
  if (commit.prNumber !== null) parts.push(`PR #${commit.prNumber}`);
  parts.push(statusText(commit.status), jobsText(commit.jobs, runCount));
  return [...parts, ...extra].join(' · ');
}

/** The one summary of a gate answer (client/src/contract/pr-summary.ts prTally): every text below reads it. */
export function gateTally(gate: Pick<GateBody, 'verdict' | 'runStatus' | 'complete'> & { tests: readonly GateTestBody[] }): PrTally {
  return prTally(gate);
}

function errorCell(t: SummaryTestBody): string {
  return t.errorMessage ? code(t.errorMessage, '') : '—';
}

/** "on `main` since `ed3d460`", from a test's state (where its break began). */
function sinceText(t: SummaryTestBody): string {
  return t.stateSince ? ` on ${code(t.stateSince.branch, '?')} since ${code(t.stateSince.commitSha.slice(0, 7), 'an unknown commit')}` : '';
}

/** A failing test's kind: the gate's classification of it. */
function failKind(t: SummaryTestBody & { classification: Classification }): string {
  const c = t.classification;
  if (c === 'quarantined') return t.state === 'broken' ? `🔒 quarantined (broken${sinceText(t)})` : '🔒 quarantined';
  if (c === 'broken_on_base') return `🧱 already broken${sinceText(t)}`;
  if (c === 'known_flake') return `🔁 known flaky (${t.score.toFixed(2)})`;
  const fresh = newTestText(t) ?? unprovenText(t);
  return fresh ? `🆕 ${fresh}` : '🆕 new';
}

/** A test of the summary, with its owners and the gate's classification of it (absent: the state-based rule's). */
export type ClassifiedSummaryTest = OwnedSummaryTest & { classification?: Classification };

/**
 * The summary answer's comment; `runCount` is how many runs (shards and reruns) were merged. Its
 * counts and status are the one summary's (prTally at strictness `new`, over the gate's
 * classification the route passes in), so they are the gate's.
 */
export function summaryMarkdown(
  input: Pick<SummaryBody, 'commitSha' | 'branch' | 'prNumber' | 'runStatus' | 'jobs'> & {
    complete?: boolean;
    /** The base branch the classification is against; absent: not shown. */
    baseBranch?: string;
    totalTests: number;
    tests: readonly ClassifiedSummaryTest[];
    fixes?: readonly FixVerificationBody[];
  },
  runCount: number,
): string {
  const tests = input.tests.map((t) => ({ ...t, classification: t.classification ?? classifyByState(t) }));
  const summary = { ...input, tests, ...prTally({ tests, verdict: verdictOf('new', tests), runStatus: input.runStatus, complete: input.complete ?? true }) };
  // The table's two parts are the counts' `failed` and `flaky` (countsAsFailed).
  const fails = summary.tests.filter(countsAsFailed);
  const flaky = summary.tests.filter((t) => !countsAsFailed(t));
  const lines: string[] = [SUMMARY_MARKER, FLAKEMETRY_SUMMARY_MARKER];
  if (fails.length === 0 && flaky.length === 0) {
    lines.push(`### ✅ Flakehouse: all ${plural(summary.totalTests, 'test')} passed`);
  } else {
    const head = summary.status === 'blocked' ? '❌' : '⚠️';
    const counts = [summary.failed > 0 ? `${summary.failed} failed` : null, summary.flaky > 0 ? `${summary.flaky} flaky` : null].filter((x) => x !== null).join(', ');
    lines.push(`### ${head} Flakehouse: ${counts} of ${plural(summary.totalTests, 'test')}`);
  }
  lines.push('', contextLine(summary, runCount));
  if (summary.tests.length > 0) {
    const against = summary.baseBranch !== undefined ? ` against ${code(summary.baseBranch, '')}` : '';
    lines.push('', `**Gate**${against} (strictness \`new\`): ${summary.status === 'blocked' ? 'blocks' : 'passes'} — ${countsText(summary)}`);
  }
  let budget = MAX_ROWS;
  let hidden = 0;
  if (fails.length > 0) {
    lines.push('', '**Failing tests**', '');
    lines.push('| | Test | File | Owners | Error |', '|---|---|---|---|---|');
    const shown = fails.slice(0, budget);
    for (const t of shown) {
      const owners = t.owners.length > 0 ? cell(t.owners.join(' '), 80) : '—';
      lines.push(`| ${failKind(t)} | ${testName(t)} | ${code(t.filePath, '')} | ${owners} | ${errorCell(t)} |`);
    }
    hidden += fails.length - shown.length;
    budget -= shown.length;
  }
  if (flaky.length > 0) {
    const shown = flaky.slice(0, Math.max(0, budget));
    hidden += flaky.length - shown.length;
    lines.push('', `<details><summary>${plural(flaky.length, 'flaky test')} (failed, then passed on a retry or in another run)</summary>`, '');
    if (shown.length > 0) {
      lines.push('| | Test | File | Score | Reason | Error |', '|---|---|---|---|---|---|');
      for (const t of shown) {
        const reason = t.topReason ? cell(t.topReason, 100) : '—';
        lines.push(`| ${failKind(t)} | ${testName(t)} | ${code(t.filePath, '')} | ${t.score.toFixed(2)} | ${reason} | ${errorCell(t)} |`);
      }
    }
    lines.push('', '</details>');
  }
  if (hidden > 0) lines.push('', `_…and ${hidden} more._`);
  lines.push(...fixLines(summary.fixes));
  return `${lines.join('\n')}\n`;
}

const GATE_LABEL: Record<Classification, string> = {
  new_failure: '🆕 new failure',
  broken_on_base: '🧱 already broken',
  known_flake: '🔁 known flake',
  quarantined: '🔒 quarantined',
};

/** The rule the gate applied, in one sentence under its verdict. */
function gateRule(baseBranch: string): string {
  return (
    `a failure is *already broken* when every run of the test on ${baseBranch} since a commit failed (not this change's doing, and never a flake), ` +
    `a *known flake* when the test was flaky before this commit and this code also passed it (a retry, re-run or shard), or its flakiness is established and its failures here fit even the low end of its flake rate; ` +
    `anything else is *new* (a flake not proven here is *unproven*, and blocks like one)`
  );
}

/** The base branch's side of a gate row: the break, or its runs in the window before this commit. */
function baseText(t: GateTestBody, baseBranch: string): string {
  if (t.classification === 'broken_on_base' && t.brokenSince) return `broken on ${baseBranch} since ${t.brokenSince.commitSha.slice(0, 7)}`;
  if (t.baseSampleSize === 0) return `not run on ${baseBranch} in the ${BASE_WINDOW_DAYS} days before`;
  return `${Math.round(t.baseFailRate * t.baseSampleSize)} of ${plural(t.baseSampleSize, 'run')} failed on ${baseBranch}`;
}

/** The gate answer's comment (also the CLI's GitHub step summary); `runCount` as for the summary. */
export function gateMarkdown(gate: Omit<GateBody, 'tests'> & { tests: readonly GateTestBody[] }, runCount: number): string {
  const { tests } = gate;
  const tally = gateTally(gate);
  const counts = countsText(tally);
  const lines: string[] = [GATE_MARKER, FLAKEMETRY_GATE_MARKER];
  lines.push(gate.verdict === 'block' ? `### 🚫 Flakehouse gate: blocked — ${counts}` : `### ✅ Flakehouse gate: passed — ${counts}`);
  const why =
    gate.strictness === 'off'
      ? 'strictness `off`: the gate never blocks'
      : gate.strictness === 'new'
        ? 'strictness `new`: new failures block'
        : 'strictness `any`: any failing test that is not quarantined blocks';
  const base = code(gate.baseBranch, '');
  lines.push('', contextLine({ ...gate, status: tally.status }, runCount, [`base ${base}`]), '', `_${why}; ${gateRule(base)}._`);
  if (tests.length > 0) {
    lines.push('', `| | Test | File | Status | On ${base} (${BASE_WINDOW_DAYS} d before) | Score | Error |`, '|---|---|---|---|---|---|---|');
    const shown = tests.slice(0, MAX_ROWS);
    for (const t of shown) {
      const fresh = newTestText(t) ?? unprovenText(t);
      const label = t.classification === 'new_failure' && unprovenText(t) ? '❔ unproven flake' : GATE_LABEL[t.classification];
      lines.push(`| ${label} | ${testName(t)} | ${code(t.filePath, '')} | ${t.status}${fresh ? ` — ${fresh}` : ''} | ${baseText(t, base)} | ${t.score.toFixed(2)} | ${errorCell(t)} |`);
    }
    if (tests.length > shown.length) lines.push('', `_…and ${tests.length - shown.length} more._`);
  }
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// The CLI's comment (`flakehouse summary` / `comment`) and its gate verdict for a log

export interface CommentInput {
  summary: SummaryBody;
  /** The gate's answer for the same commit, when it could be had: its classification is better informed. */
  gate: GateBody | null;
  /** The project's page in the dashboard (`SERVICE_DASHBOARD_URL/projects/<slug>`): tests and the commit become links. */
  dashboardProjectUrl?: string;
}

interface Row {
  test: SummaryTestBody;
  classification: Classification;
  baseFailRate: number | null;
  baseSampleSize: number | null;
  /** Already broken: the base branch's first failing commit. */
  brokenSince: string | null;
}

function rowsOf(input: CommentInput): Row[] {
  const byId = new Map((input.gate?.tests ?? []).map((t) => [t.testIdentityId, t]));
  return input.summary.tests.map((test) => {
    const g = byId.get(test.testIdentityId);
    return g
      ? { test, classification: g.classification, baseFailRate: g.baseFailRate, baseSampleSize: g.baseSampleSize, brokenSince: g.brokenSince?.commitSha ?? null }
      : { test, classification: classifyByState(test), baseFailRate: null, baseSampleSize: null, brokenSince: test.state === 'broken' ? (test.stateSince?.commitSha ?? null) : null };
  });
}

function testCell(t: SummaryTestBody, dash: string | undefined): string {
  const name = testName(t).replace(/[[\]]/g, (c) => `\\${c}`);
  return dash ? `[${name}](${dash}/tests/${encodeURIComponent(t.testIdentityId)})` : name;
}

function baseCell(r: Row, baseBranch: string): string {
  if (r.baseSampleSize === null || r.baseFailRate === null) return '—';
  if (r.baseSampleSize === 0) return `not run on \`${cell(baseBranch, 60)}\` in the ${BASE_WINDOW_DAYS} days before`;
  const bad = Math.round(r.baseFailRate * r.baseSampleSize);
  return `${bad} of ${plural(r.baseSampleSize, 'run')} failed`;
}

function outcome(t: SummaryTestBody): string {
  return t.status === 'fail' ? 'failed' : 'flaky (passed on retry or rerun)';
}

function why(t: SummaryTestBody): string {
  if (t.topReason && t.topReasonCode !== 'STABLE') return cell(t.topReason, 100);
  return t.status === 'flaky' ? 'passed on a retry here' : '—';
}

export function commentMarkdown(input: CommentInput): string {
  const { summary, gate } = input;
  const dash = input.dashboardProjectUrl ? input.dashboardProjectUrl.replace(/\/+$/, '') : undefined;
  const rows = rowsOf(input);
  const fresh = rows.filter((r) => r.classification === 'new_failure');
  const broken = rows.filter((r) => r.classification === 'broken_on_base');
  const known = rows.filter((r) => r.classification === 'known_flake');
  const quarantined = rows.filter((r) => r.classification === 'quarantined');
  const baseBranch = gate?.baseBranch ?? 'the base branch';
  const sha = summary.commitSha.slice(0, 12);

  // The one summary: the gate's when it answered, else the same function over the state-based rule.
  const classified = rows.map((r) => ({ ...r.test, classification: r.classification }));
  const tally = gate ? gateTally(gate) : prTally({ tests: classified, verdict: verdictOf('new', classified), runStatus: summary.runStatus, complete: summary.complete });
  const lines: string[] = [COMMENT_MARKER, FLAKEMETRY_SUMMARY_MARKER];
  if (rows.length === 0) {
    lines.push(`### ✅ Flakehouse: all ${plural(summary.totalTests, 'test')} passed`);
  } else {
    lines.push(`### ${tally.status === 'blocked' ? '❌' : '⚠️'} Flakehouse: ${countsText(tally)} of ${plural(summary.totalTests, 'test')}`);
  }

  const commit = dash ? `[\`${sha}\`](${dash}/runs?commitSha=${encodeURIComponent(summary.commitSha)})` : `\`${sha}\``;
  const context = [`Commit ${commit} on \`${cell(summary.branch, 80)}\`${gate ? ` → \`${cell(gate.baseBranch, 80)}\`` : ''}`, statusText(tally.status)];
  const jobs = gate?.jobs ?? summary.jobs;
  if (jobs !== undefined && jobs > 1) context.push(`${jobs} jobs`);
  context.push(`${tally.failed} failed, ${tally.flaky} flaky`);
  if (gate) {
    const verdict = gate.verdict === 'block' ? '🚫 **blocks the merge**' : '✅ passes';
    context.push(`gate ${verdict} (strictness \`${gate.strictness}\`)`);
  }
  lines.push('', context.join(' · '));

  let budget = MAX_ROWS;
  let hidden = 0;
  const take = (list: Row[]): Row[] => {
    const shown = list.slice(0, Math.max(0, budget));
    budget -= shown.length;
    hidden += list.length - shown.length;
    return shown;
  };

  if (fresh.length > 0) {
    lines.push('', `#### 🆕 New failures (${fresh.length})`, '', `Not broken on ${gate ? `\`${cell(gate.baseBranch, 80)}\`` : 'the base branch'} before this change and not a known flake: most likely caused by this change.`, '');
    lines.push('| Test | File | Error |', '|---|---|---|');
    for (const r of take(fresh)) {
      const proof = newTestText(r.test) ?? unprovenText(r.test);
      lines.push(`| ${testCell(r.test, dash)}${proof ? ` (${proof})` : ''} | ${code(r.test.filePath, '—')} | ${code(r.test.errorMessage ?? '', '—')} |`);
    }
  }
  if (broken.length > 0) {
    lines.push('', `#### 🧱 Already broken on ${gate ? `\`${cell(gate.baseBranch, 80)}\`` : 'the base branch'} (${broken.length})`, '', `Every run of these on the base branch since the commit shown failed: a real break there, not this change's doing and not flaky. Fix them on the base branch.`, '');
    lines.push('| Test | Broken since | Error |', '|---|---|---|');
    for (const r of take(broken)) lines.push(`| ${testCell(r.test, dash)} | ${r.brokenSince ? `\`${r.brokenSince.slice(0, 7)}\`` : '—'} | ${code(r.test.errorMessage ?? '', '—')} |`);
  }
  if (known.length > 0) {
    lines.push('', `#### 🔁 Known flaky (${known.length})`, '', `These failed here but are known to flake, so they are probably not this change's fault.`, '');
    lines.push(`| Test | Outcome | Score | Why | On ${gate ? `\`${cell(gate.baseBranch, 80)}\`` : 'base'} (${BASE_WINDOW_DAYS} d) | Error |`, '|---|---|---|---|---|---|');
    for (const r of take(known)) {
      lines.push(`| ${testCell(r.test, dash)} | ${outcome(r.test)} | ${r.test.score.toFixed(2)} | ${why(r.test)} | ${baseCell(r, baseBranch)} | ${code(r.test.errorMessage ?? '', '—')} |`);
    }
  }
  if (quarantined.length > 0) {
    lines.push('', `<details><summary>🔒 ${plural(quarantined.length, 'quarantined test')} failed (never blocks)</summary>`, '');
    const shown = take(quarantined);
    if (shown.length > 0) {
      lines.push('| Test | Outcome | Score | Error |', '|---|---|---|---|');
      for (const r of shown) lines.push(`| ${testCell(r.test, dash)} | ${outcome(r.test)} | ${r.test.score.toFixed(2)} | ${code(r.test.errorMessage ?? '', '—')} |`);
    }
    lines.push('', '</details>');
  }
  if (hidden > 0) lines.push('', `_…and ${hidden} more${dash ? ` — [all of them](${dash}/runs?commitSha=${encodeURIComponent(summary.commitSha)})` : ''}._`);
  lines.push(...fixLines(summary.fixes));

  const foot = ['Known flaky = flaky before this change, and proven a flake here: this code also passed it (a retry, re-run or shard), or its flakiness is established and it failed here no more often than even the low end of its flake rate explains.'];
  if (dash) foot.push(`[Flaky board](${dash}/flaky)`);
  lines.push('', `<sub>${foot.join(' · ')}</sub>`);
  const body = `${lines.join('\n')}\n`;
  return body.length > MAX_BODY ? `${body.slice(0, MAX_BODY)}\n\n_…cut to fit a GitHub comment._\n` : body;
}

const LOG_LABEL: Record<Classification, string> = { new_failure: 'NEW FAILURE', broken_on_base: 'ALREADY BROKEN', known_flake: 'known flake', quarantined: 'quarantined' };

/** The gate's verdict for a terminal or CI log. */
export function gateText(gate: GateBody): string {
  const tally = gateTally(gate);
  const jobs = gate.jobs !== undefined && gate.jobs > 1 ? ` · ${gate.jobs} jobs` : '';
  const lines = [
    `Flakehouse gate: ${gate.verdict === 'block' ? 'BLOCKED' : 'passed'} — ${countsText(tally)}`,
    `  commit ${gate.commitSha.slice(0, 12)} · branch ${gate.branch} · base ${gate.baseBranch} · strictness ${gate.strictness} · ${statusText(tally.status)}${jobs} · ${tally.failed} failed, ${tally.flaky} flaky`,
  ];
  if (gate.tests.length > 0) lines.push('');
  for (const t of gate.tests) {
    const name = t.suite ? `${t.suite} › ${t.title}` : t.title;
    const fresh = newTestText(t) ?? unprovenText(t);
    const label = t.classification === 'new_failure' && unprovenText(t) ? 'UNPROVEN FLAKE' : LOG_LABEL[t.classification];
    lines.push(`  ${label.padEnd(14)}  ${name}  (${t.filePath})  ${t.status}${fresh ? ` · ${fresh}` : ''} · score ${t.score.toFixed(2)} · ${baseText(t, gate.baseBranch)}`);
    if (t.errorMessage) lines.push(`               ${t.errorMessage.replace(/\s+/g, ' ').slice(0, 200)}`);
  }
  if (gate.verdict === 'block') {
    lines.push('', gate.strictness === 'any' ? 'Blocked: tests failed that are not quarantined.' : 'Blocked: new failures — not broken on the base branch before this change, and not proven flakes. Fix them, or prove a flake by re-running it on this commit.');
  }
  return `${lines.join('\n')}\n`;
}

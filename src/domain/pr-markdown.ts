// Every text about a pull request's results (docs/contract.md §6), rendered from the answers of
// GET /v1/runs/summary and /v1/runs/gate. Pure: the routes render their `markdown` here, and the
// CLI renders what `flakehouse summary` / `comment` post and what `gate` prints.
//
// The CLI's comment is rendered on the CI side rather than taken from the server's `markdown` so it
// can merge the summary with the gate's classification (new failure versus known flake, from the
// base branch's history) and link to the dashboard, whose URL only the CI side knows.
import { BASE_WINDOW_DAYS, KNOWN_FLAKE_SCORE, classify, type Classification } from './gate.js';
import { cell } from './markdown.js';
import type { GateBody, GateTestBody, SummaryBody, SummaryTestBody } from './pr-schemas.js';

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

function testName(t: SummaryTestBody): string {
  return cell(t.suite ? `${t.suite} › ${t.title}` : t.title, 140);
}

// ---------------------------------------------------------------------------------------------
// The server's markdown: the `markdown` of the summary and the gate answers

/** A test of the summary with the owners CODEOWNERS gives its file (the answer itself does not carry them). */
export type OwnedSummaryTest = SummaryTestBody & { owners: string[] };
type CommitHeadline = Pick<SummaryBody, 'commitSha' | 'branch' | 'prNumber' | 'runStatus'>;

function contextLine(commit: CommitHeadline, runCount: number, extra: string[] = []): string {
  const parts = [`commit ${code(commit.commitSha.slice(0, 12), '')}`, `branch ${code(commit.branch, '')}`];
  if (commit.prNumber !== null) parts.push(`PR #${commit.prNumber}`);
  parts.push(`run ${commit.runStatus}`, `${runCount === 1 ? '1 run' : `${runCount} runs (shards and reruns merged)`}`);
  return [...parts, ...extra].join(' · ');
}

function errorCell(t: SummaryTestBody): string {
  return t.errorMessage ? code(t.errorMessage, '') : '—';
}

/** A failed test's kind by the gate's rule without base-branch history (what the summary knows). */
function failKind(t: SummaryTestBody): string {
  const c = classify(t);
  if (c === 'quarantined') return '🔒 quarantined';
  if (c === 'known_flake') return `🔁 known flaky (${t.score.toFixed(2)})`;
  return '🆕 new';
}

/** The summary answer's comment; `runCount` is how many runs (shards and reruns) were merged. */
export function summaryMarkdown(summary: CommitHeadline & { totalTests: number; tests: readonly OwnedSummaryTest[] }, runCount: number): string {
  const fails = summary.tests.filter((t) => t.status === 'fail');
  const flaky = summary.tests.filter((t) => t.status === 'flaky');
  const lines: string[] = [SUMMARY_MARKER, FLAKEMETRY_SUMMARY_MARKER];
  if (fails.length === 0 && flaky.length === 0) {
    lines.push(`### ✅ Flakehouse: all ${plural(summary.totalTests, 'test')} passed`);
  } else {
    const head = fails.length > 0 ? '❌' : '⚠️';
    const counts = [fails.length > 0 ? `${fails.length} failed` : null, flaky.length > 0 ? `${flaky.length} flaky` : null].filter((x) => x !== null).join(', ');
    lines.push(`### ${head} Flakehouse: ${counts} of ${plural(summary.totalTests, 'test')}`);
  }
  lines.push('', contextLine(summary, runCount));
  let budget = MAX_ROWS;
  let hidden = 0;
  if (fails.length > 0) {
    const newCount = fails.filter((t) => classify(t) === 'new_failure').length;
    lines.push('', `**Failing tests** (${plural(newCount, 'new failure')}, ${fails.length - newCount} known flaky or quarantined)`, '');
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
      lines.push('| Test | File | Score | Reason | Error |', '|---|---|---|---|---|');
      for (const t of shown) {
        const reason = t.quarantined ? 'quarantined' : t.topReason ? cell(t.topReason, 100) : '—';
        lines.push(`| ${testName(t)} | ${code(t.filePath, '')} | ${t.score.toFixed(2)} | ${reason} | ${errorCell(t)} |`);
      }
    }
    lines.push('', '</details>');
  }
  if (hidden > 0) lines.push('', `_…and ${hidden} more._`);
  return `${lines.join('\n')}\n`;
}

const GATE_LABEL: Record<Classification, string> = {
  new_failure: '🆕 new failure',
  known_flake: '🔁 known flake',
  quarantined: '🔒 quarantined',
};

/** The gate answer's comment (also the CLI's GitHub step summary); `runCount` as for the summary. */
export function gateMarkdown(gate: Omit<GateBody, 'tests'> & { tests: readonly GateTestBody[] }, runCount: number): string {
  const { tests } = gate;
  const newFailures = tests.filter((t) => t.classification === 'new_failure').length;
  const known = tests.filter((t) => t.classification === 'known_flake').length;
  const quarantined = tests.filter((t) => t.classification === 'quarantined').length;
  const counts = `${plural(newFailures, 'new failure')}, ${plural(known, 'known flake')}, ${quarantined} quarantined`;
  const lines: string[] = [GATE_MARKER, FLAKEMETRY_GATE_MARKER];
  lines.push(gate.verdict === 'block' ? `### 🚫 Flakehouse gate: blocked — ${counts}` : `### ✅ Flakehouse gate: passed — ${counts}`);
  const why =
    gate.strictness === 'off'
      ? 'strictness `off`: the gate never blocks'
      : gate.strictness === 'new'
        ? 'strictness `new`: only failures not seen on the base branch block'
        : 'strictness `any`: any failing test that is not quarantined blocks';
  lines.push('', contextLine(gate, runCount, [`base ${code(gate.baseBranch, '')}`]), '', `_${why}; a failure is known when the test is quarantined, has a flaky score ≥ ${KNOWN_FLAKE_SCORE}, failed or flaked on the base branch in the last ${BASE_WINDOW_DAYS} days, or passed on a retry._`);
  if (tests.length > 0) {
    lines.push('', '| | Test | File | Status | Base fail rate (14 d) | Score | Error |', '|---|---|---|---|---|---|---|');
    const shown = tests.slice(0, MAX_ROWS);
    for (const t of shown) {
      const base = t.baseSampleSize > 0 ? `${(t.baseFailRate * 100).toFixed(0)}% of ${t.baseSampleSize}` : 'no runs';
      lines.push(`| ${GATE_LABEL[t.classification]} | ${testName(t)} | ${code(t.filePath, '')} | ${t.status} | ${base} | ${t.score.toFixed(2)} | ${errorCell(t)} |`);
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
}

function rowsOf(input: CommentInput): Row[] {
  const byId = new Map((input.gate?.tests ?? []).map((t) => [t.testIdentityId, t]));
  return input.summary.tests.map((test) => {
    const g = byId.get(test.testIdentityId);
    return g
      ? { test, classification: g.classification, baseFailRate: g.baseFailRate, baseSampleSize: g.baseSampleSize }
      : { test, classification: classify(test), baseFailRate: null, baseSampleSize: null };
  });
}

function testCell(t: SummaryTestBody, dash: string | undefined): string {
  const name = testName(t).replace(/[[\]]/g, (c) => `\\${c}`);
  return dash ? `[${name}](${dash}/tests/${encodeURIComponent(t.testIdentityId)})` : name;
}

function baseCell(r: Row, baseBranch: string): string {
  if (r.baseSampleSize === null || r.baseFailRate === null) return '—';
  if (r.baseSampleSize === 0) return `no runs on \`${cell(baseBranch, 60)}\``;
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
  const known = rows.filter((r) => r.classification === 'known_flake');
  const quarantined = rows.filter((r) => r.classification === 'quarantined');
  const baseBranch = gate?.baseBranch ?? 'the base branch';
  const sha = summary.commitSha.slice(0, 12);

  const lines: string[] = [COMMENT_MARKER, FLAKEMETRY_SUMMARY_MARKER];
  if (rows.length === 0) {
    lines.push(`### ✅ Flakehouse: all ${plural(summary.totalTests, 'test')} passed`);
  } else {
    const parts = [
      fresh.length > 0 ? plural(fresh.length, 'new failure') : null,
      known.length > 0 ? `${known.length} known flaky` : null,
      quarantined.length > 0 ? `${quarantined.length} quarantined` : null,
    ].filter((p) => p !== null);
    lines.push(`### ${fresh.length > 0 ? '❌' : '⚠️'} Flakehouse: ${parts.join(', ')} of ${plural(summary.totalTests, 'test')}`);
  }

  const commit = dash ? `[\`${sha}\`](${dash}/runs?commitSha=${encodeURIComponent(summary.commitSha)})` : `\`${sha}\``;
  const context = [`Commit ${commit} on \`${cell(summary.branch, 80)}\`${gate ? ` → \`${cell(gate.baseBranch, 80)}\`` : ''}`, `run ${summary.runStatus}`];
  context.push(`${summary.failed} failed, ${summary.flaky} flaky`);
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
    lines.push('', `#### 🆕 New failures (${fresh.length})`, '', `Not known to be flaky: ${gate ? `no failure on \`${cell(gate.baseBranch, 80)}\` in the last ${BASE_WINDOW_DAYS} days and ` : ''}a flaky score below ${KNOWN_FLAKE_SCORE}. Most likely caused by this change.`, '');
    lines.push('| Test | File | Error |', '|---|---|---|');
    for (const r of take(fresh)) lines.push(`| ${testCell(r.test, dash)} | ${code(r.test.filePath, '—')} | ${code(r.test.errorMessage ?? '', '—')} |`);
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

  const foot = [`Known flaky = quarantined, flaky score ≥ ${KNOWN_FLAKE_SCORE}, failed on the base branch in the last ${BASE_WINDOW_DAYS} days, or passed on a retry.`];
  if (dash) foot.push(`[Flaky board](${dash}/flaky)`);
  lines.push('', `<sub>${foot.join(' · ')}</sub>`);
  const body = `${lines.join('\n')}\n`;
  return body.length > MAX_BODY ? `${body.slice(0, MAX_BODY)}\n\n_…cut to fit a GitHub comment._\n` : body;
}

const LOG_LABEL: Record<Classification, string> = { new_failure: 'NEW FAILURE', known_flake: 'known flake', quarantined: 'quarantined' };

/** The gate's verdict for a terminal or CI log. */
export function gateText(gate: GateBody): string {
  const quarantined = gate.tests.filter((t) => t.classification === 'quarantined').length;
  const known = gate.tests.filter((t) => t.classification === 'known_flake').length;
  const counts = `${plural(gate.newFailures, 'new failure')}, ${plural(known, 'known flake')}, ${quarantined} quarantined`;
  const lines = [
    `Flakehouse gate: ${gate.verdict === 'block' ? 'BLOCKED' : 'passed'} — ${counts}`,
    `  commit ${gate.commitSha.slice(0, 12)} · branch ${gate.branch} · base ${gate.baseBranch} · strictness ${gate.strictness} · run ${gate.runStatus}`,
  ];
  if (gate.tests.length > 0) lines.push('');
  for (const t of gate.tests) {
    const name = t.suite ? `${t.suite} › ${t.title}` : t.title;
    const baseRuns = t.baseSampleSize > 0 ? `${Math.round(t.baseFailRate * t.baseSampleSize)} of ${plural(t.baseSampleSize, 'run')} failed on ${gate.baseBranch}` : `no runs on ${gate.baseBranch}`;
    lines.push(`  ${LOG_LABEL[t.classification].padEnd(11)}  ${name}  (${t.filePath})  ${t.status} · score ${t.score.toFixed(2)} · ${baseRuns}`);
    if (t.errorMessage) lines.push(`               ${t.errorMessage.replace(/\s+/g, ' ').slice(0, 200)}`);
  }
  if (gate.verdict === 'block') {
    lines.push('', gate.strictness === 'any' ? 'Blocked: tests failed that are not quarantined.' : 'Blocked: failures that are not known to be flaky. Fix them, or quarantine a test if it is flaky after all.');
  }
  return `${lines.join('\n')}\n`;
}

// What `flakehouse summary` / `comment` post on a pull request and what `gate` prints, from the
// server's summary and gate answers (docs/contract.md §6). Pure.
//
// The comment is rendered here rather than taken from the server's `markdown` so it can merge the
// summary with the gate's classification (new failure versus known flake, from the base branch's
// history) and link to the dashboard, whose URL only the CI side knows.
import type { z } from 'zod';
import { BASE_WINDOW_DAYS, FLAKEMETRY_SUMMARY_MARKER, KNOWN_FLAKE_SCORE, SUMMARY_MARKER, type gateResponseSchema, type summaryResponseSchema } from '../api/routes/pr.js';
import { cell } from '../domain/markdown.js';

export type SummaryBody = z.infer<typeof summaryResponseSchema>['summary'];
export type GateBody = Extract<z.infer<typeof gateResponseSchema>, { found: true }>['gate'];
type SummaryTest = SummaryBody['tests'][number];
type Classification = GateBody['tests'][number]['classification'];

/** The hidden first line that makes the comment findable again (sticky), as the server's. */
export const COMMENT_MARKER = SUMMARY_MARKER;

/**
 * Whether a PR comment is the sticky one to update: ours, or the one Flakemetry's pr-comment action
 * left (a team moving over keeps its comment). Ours carries both markers, so Flakemetry's action,
 * if it still runs, finds it too.
 */
export function isStickyComment(body: string | null | undefined): boolean {
  return !!body && (body.includes(COMMENT_MARKER) || body.includes(FLAKEMETRY_SUMMARY_MARKER));
}
/** Rows of tests shown before "and N more" (GitHub refuses comments over 65,536 characters). */
export const MAX_ROWS = 50;
const MAX_BODY = 60_000;

export interface CommentInput {
  summary: SummaryBody;
  /** The gate's answer for the same commit, when it could be had: its classification is better informed. */
  gate: GateBody | null;
  /** The project's page in the dashboard (`SERVICE_DASHBOARD_URL/projects/<slug>`): tests and the commit become links. */
  dashboardProjectUrl?: string;
}

interface Row {
  test: SummaryTest;
  classification: Classification;
  baseFailRate: number | null;
  baseSampleSize: number | null;
}

/** The gate's rule (src/api/routes/pr.ts `classify`) without the base branch's history. */
function classifyLocally(t: SummaryTest): Classification {
  if (t.quarantined) return 'quarantined';
  if (t.score >= KNOWN_FLAKE_SCORE || t.status === 'flaky') return 'known_flake';
  return 'new_failure';
}

function rowsOf(input: CommentInput): Row[] {
  const byId = new Map((input.gate?.tests ?? []).map((t) => [t.testIdentityId, t]));
  return input.summary.tests.map((test) => {
    const g = byId.get(test.testIdentityId);
    return g
      ? { test, classification: g.classification, baseFailRate: g.baseFailRate, baseSampleSize: g.baseSampleSize }
      : { test, classification: classifyLocally(test), baseFailRate: null, baseSampleSize: null };
  });
}

/** Inline code that survives backticks in the text. */
function code(text: string, max = 120): string {
  const c = cell(text, max).replace(/`/g, 'ˋ');
  return c === '' ? '—' : `\`${c}\``;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function base(url: string | undefined): string | undefined {
  return url ? url.replace(/\/+$/, '') : undefined;
}

function testCell(t: SummaryTest, dash: string | undefined): string {
  const name = cell(t.suite ? `${t.suite} › ${t.title}` : t.title, 140).replace(/[[\]]/g, (c) => `\\${c}`);
  return dash ? `[${name}](${dash}/tests/${encodeURIComponent(t.testIdentityId)})` : name;
}

function baseCell(r: Row, baseBranch: string): string {
  if (r.baseSampleSize === null || r.baseFailRate === null) return '—';
  if (r.baseSampleSize === 0) return `no runs on \`${cell(baseBranch, 60)}\``;
  const bad = Math.round(r.baseFailRate * r.baseSampleSize);
  return `${bad} of ${plural(r.baseSampleSize, 'run')} failed`;
}

function outcome(t: SummaryTest): string {
  return t.status === 'fail' ? 'failed' : 'flaky (passed on retry or rerun)';
}

function why(t: SummaryTest): string {
  if (t.topReason && t.topReasonCode !== 'STABLE') return cell(t.topReason, 100);
  return t.status === 'flaky' ? 'passed on a retry here' : '—';
}

export function commentMarkdown(input: CommentInput): string {
  const { summary, gate } = input;
  const dash = base(input.dashboardProjectUrl);
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
    for (const r of take(fresh)) lines.push(`| ${testCell(r.test, dash)} | ${code(r.test.filePath)} | ${code(r.test.errorMessage ?? '')} |`);
  }
  if (known.length > 0) {
    lines.push('', `#### 🔁 Known flaky (${known.length})`, '', `These failed here but are known to flake, so they are probably not this change's fault.`, '');
    lines.push(`| Test | Outcome | Score | Why | On ${gate ? `\`${cell(gate.baseBranch, 80)}\`` : 'base'} (${BASE_WINDOW_DAYS} d) | Error |`, '|---|---|---|---|---|---|');
    for (const r of take(known)) {
      lines.push(`| ${testCell(r.test, dash)} | ${outcome(r.test)} | ${r.test.score.toFixed(2)} | ${why(r.test)} | ${baseCell(r, baseBranch)} | ${code(r.test.errorMessage ?? '')} |`);
    }
  }
  if (quarantined.length > 0) {
    lines.push('', `<details><summary>🔒 ${plural(quarantined.length, 'quarantined test')} failed (never blocks)</summary>`, '');
    const shown = take(quarantined);
    if (shown.length > 0) {
      lines.push('| Test | Outcome | Score | Error |', '|---|---|---|---|');
      for (const r of shown) lines.push(`| ${testCell(r.test, dash)} | ${outcome(r.test)} | ${r.test.score.toFixed(2)} | ${code(r.test.errorMessage ?? '')} |`);
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

const LABEL: Record<Classification, string> = { new_failure: 'NEW FAILURE', known_flake: 'known flake', quarantined: 'quarantined' };

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
    lines.push(`  ${LABEL[t.classification].padEnd(11)}  ${name}  (${t.filePath})  ${t.status} · score ${t.score.toFixed(2)} · ${baseRuns}`);
    if (t.errorMessage) lines.push(`               ${t.errorMessage.replace(/\s+/g, ' ').slice(0, 200)}`);
  }
  if (gate.verdict === 'block') {
    lines.push('', gate.strictness === 'any' ? 'Blocked: tests failed that are not quarantined.' : 'Blocked: failures that are not known to be flaky. Fix them, or quarantine a test if it is flaky after all.');
  }
  return `${lines.join('\n')}\n`;
}

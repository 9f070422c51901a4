// Tracker issues for persistent flakes, pure: what the tracker remembers of a test (folded from
// domain events), what to do about its issue at a given time, and the issue's text. The GitHub
// calls and the durable mapping live in exporters/tracker.
//   open    a test flaky (a candidate) for `afterDays` since its current spell began, no issue yet;
//   reopen  the same, and its issue was closed: one issue per test, a recurring flake stays in one place;
//   update  the issue is open and the score moved by ≥ SCORE_STEP since the issue last showed it;
//   close   the issue is open and the test has been neither a candidate nor broken for `recoveryDays`
//           (a flaky test that broke is failing, not recovering: its issue stays open).
import type { DomainEvent } from './events.js';

const DAY_MS = 86_400_000;
/** A score change worth rewriting the issue for (smaller moves would edit it on every run). */
export const SCORE_STEP = 0.05;
/** Hidden in every issue body: finds the issue again if its number was never recorded (a crash right after creating it). */
export function issueMarker(testId: string): string {
  return `<!-- flakehouse:test:${testId} -->`;
}
export const ISSUE_LABEL = 'flaky-test';

export interface TrackedIssue {
  repository: string;
  number: number;
  url: string | null;
  open: boolean;
  /** The score the issue body shows. */
  score: number;
}

export interface TrackedTest {
  projectId: string;
  testId: string;
  filePath: string | null;
  suite: string | null;
  title: string | null;
  candidate: boolean;
  /** In state `broken` (failing on its mainline); absent in states stored before test states. */
  broken?: boolean;
  score: number;
  reasons: string[];
  /** Start of the current flaky spell (when it became a candidate); null while not a candidate. */
  flakySince: number | null;
  /** When it stopped being a candidate and was not broken; null while it is either. */
  stableSince: number | null;
  /** Time (the events' clock) of the latest event folded in. */
  lastEventAt: number;
  /** Wall-clock time that event arrived: the sweep leaves tests alone while events still stream in. */
  receivedAt: number;
  issue: TrackedIssue | null;
  /** Set just before creating an issue, cleared once its number is stored. */
  opening: { repository: string; at: number } | null;
}

export interface TrackerPolicy {
  afterDays: number;
  recoveryDays: number;
}

export type TrackerAction = 'open' | 'reopen' | 'update' | 'close';

function asString(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function asNumber(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function reasonCodes(v: unknown): string[] | null {
  if (!Array.isArray(v)) return null;
  return v.map((r: unknown) => (typeof r === 'string' ? r : r && typeof r === 'object' && 'code' in r ? String(r.code) : '')).filter((s) => s !== '');
}

/** The events the tracker folds in. */
export const TRACKER_EVENT_TYPES: ReadonlySet<string> = new Set(['flaky.detected', 'score.updated', 'identity.moved']);

/**
 * The test's state after `event` (the same object when nothing changed). Tests that never were a
 * candidate are not tracked: score.updated of a healthy test returns null.
 */
export function observe(prev: TrackedTest | null, event: DomainEvent, receivedAt: number): TrackedTest | null {
  const d = event.data;
  const testId = asString(d.testIdentityId);
  if (!testId) return prev;
  if (event.type === 'identity.moved') {
    if (!prev) return null;
    return { ...prev, filePath: asString(d.toFilePath) ?? prev.filePath, title: asString(d.toTitle) ?? prev.title };
  }
  let candidate: boolean;
  if (event.type === 'flaky.detected') candidate = true;
  else if (event.type === 'score.updated' && typeof d.candidate === 'boolean') candidate = d.candidate;
  else return prev;
  if (!prev && !candidate) return null;
  const state = asString(d.state);
  const broken = state !== null ? state === 'broken' : (prev?.broken ?? false);
  const at = event.occurredAt;
  const base: TrackedTest = prev ?? {
    projectId: event.projectId,
    testId,
    filePath: null,
    suite: null,
    title: null,
    candidate: false,
    score: 0,
    reasons: [],
    flakySince: null,
    stableSince: null,
    lastEventAt: at,
    receivedAt,
    issue: null,
    opening: null,
  };
  const next: TrackedTest = {
    ...base,
    filePath: asString(d.filePath) ?? base.filePath,
    suite: asString(d.suite) ?? base.suite,
    title: asString(d.title) ?? base.title,
    score: asNumber(d.score) ?? base.score,
    reasons: reasonCodes(d.reasons) ?? reasonCodes(d.reasonCodes) ?? base.reasons,
    candidate,
    broken,
    lastEventAt: Math.max(base.lastEventAt, at),
    receivedAt,
  };
  if (candidate && !base.candidate) {
    next.flakySince = at;
    next.stableSince = null;
  } else if (!candidate && broken) {
    // Failing for real: not a recovery, whatever the score says.
    next.stableSince = null;
    next.flakySince = null;
  } else if (!candidate && (base.candidate || base.broken === true)) {
    next.stableSince = at;
    next.flakySince = null;
  }
  return next;
}

/** What to do about the test's issue at time `now` (null: nothing). */
export function planIssue(t: TrackedTest, policy: TrackerPolicy, now: number): TrackerAction | null {
  if (t.issue?.open) {
    if (!t.candidate && t.stableSince !== null && now - t.stableSince >= policy.recoveryDays * DAY_MS) return 'close';
    if (Math.abs(t.score - t.issue.score) >= SCORE_STEP) return 'update';
    return null;
  }
  if (t.candidate && t.flakySince !== null && now - t.flakySince >= policy.afterDays * DAY_MS) return t.issue ? 'reopen' : 'open';
  return null;
}

export interface IssueContext {
  projectSlug: string;
  /** Deep link to the test in the dashboard, when SERVICE_DASHBOARD_URL is set. */
  testUrl: string | null;
  policy: TrackerPolicy;
}

function displayName(t: TrackedTest): string {
  const title = t.title ?? t.testId;
  return t.suite ? `${t.suite} › ${title}` : title;
}

export function issueTitle(t: TrackedTest): string {
  const title = `Flaky test: ${displayName(t)}`;
  return title.length <= 240 ? title : `${title.slice(0, 239)}…`;
}

/** Markdown body: the evidence itself, so whoever picks the issue up needs no dashboard account. */
export function issueBody(t: TrackedTest, ctx: IssueContext): string {
  const since = t.flakySince !== null ? new Date(t.flakySince).toISOString().slice(0, 10) : null;
  const lines = [
    `**${displayName(t)}** has been flaky${since ? ` since ${since}` : ''} in project \`${ctx.projectSlug}\`.`,
    '',
    '| | |',
    '|---|---|',
    `| File | \`${t.filePath ?? 'unknown'}\` |`,
    `| Flakiness score | **${t.score.toFixed(2)}**${t.candidate ? '' : ' (no longer flagged)'} |`,
    `| Reasons | ${t.reasons.length > 0 ? t.reasons.map((r) => `\`${r}\``).join(', ') : '–'} |`,
    `| Test id | \`${t.testId}\` |`,
    '',
    ...(ctx.testUrl ? [`[Open the test in Flakehouse](${ctx.testUrl})`, ''] : []),
    `_Opened by Flakehouse after ${ctx.policy.afterDays} day(s) flaky; it keeps this issue up to date and closes it after ${ctx.policy.recoveryDays} day(s) stable. If the test flakes again, this issue is reopened._`,
    '',
    issueMarker(t.testId),
  ];
  return lines.join('\n');
}

export function closeComment(t: TrackedTest, policy: TrackerPolicy): string {
  return `Stable for ${policy.recoveryDays} day(s) (score ${t.score.toFixed(2)}): closing. Flakehouse reopens this issue if the test flakes again.`;
}

export function reopenComment(t: TrackedTest): string {
  return `Flaky again (score ${t.score.toFixed(2)}): reopening.`;
}

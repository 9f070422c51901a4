// `flakehouse run`'s verdict (docs/contract.md §7 "Quarantine in CI"), pure: given the command's
// exit code, the executions it produced and the project's quarantine list, which failures are
// muted and which exit code the wrapper returns. A failing command is turned green only when it
// produced results, at least one test failed, and every failing test is quarantined.
import type { AttributeValue, ExecutionInput } from './batch.js';
import { canonicalText, fingerprint } from './identity.js';

/** The execution attribute that marks a failure muted by quarantine (stored with the execution). */
export const QUARANTINED_ATTRIBUTE = 'flakehouse.quarantined';

/** What the wrapper and the reporters match on, per quarantined test (GET /v1/quarantine items). */
export interface QuarantineEntry {
  testIdentityId: string;
  /** The identity's fingerprint first, then the fingerprints of its aliases (moved, renamed). */
  fingerprints: string[];
  filePath: string;
  suite: string;
  title: string;
  params: Record<string, unknown> | null;
  reason: string;
}

/** One failing test of the run: its last attempt failed. */
export interface FailingTest {
  filePath: string;
  suite: string;
  title: string;
  params?: Record<string, unknown>;
  fingerprint: string;
  /** Indices (in the run's executions) of its failed attempts. */
  failedIndices: number[];
}

export interface MutedFailure extends FailingTest {
  quarantine: QuarantineEntry;
}

export type MuteVerdict =
  /** The command passed: its 0 stands, whatever the results say. */
  | { kind: 'passed'; exitCode: 0; muted: MutedFailure[]; unmuted: FailingTest[] }
  /** The command failed and left no results to judge: never turned green. */
  | { kind: 'no_results'; exitCode: number; muted: []; unmuted: [] }
  /** The command failed but no test did (a crash, a compile error, a failing hook): its code. */
  | { kind: 'no_failing_test'; exitCode: number; muted: []; unmuted: [] }
  /** The quarantine list could not be had from the server (unreachable, refused): its code. */
  | { kind: 'no_quarantine_list'; exitCode: number; muted: MutedFailure[]; unmuted: FailingTest[] }
  /** Some failing test is not quarantined: its code. */
  | { kind: 'real_failures'; exitCode: number; muted: MutedFailure[]; unmuted: FailingTest[] }
  /** Every failing test is quarantined: 0. */
  | { kind: 'all_muted'; exitCode: 0; muted: MutedFailure[]; unmuted: [] };

/** Mirrors the server's clean-up before identity (normalize.ts, storable.ts), so keys match. */
const MAX_TITLE = 2000;

/** The fingerprint the server computes for this execution (src/domain/records.ts IdentityCache). */
export function executionFingerprint(e: Pick<ExecutionInput, 'filePath' | 'suite' | 'title' | 'params'>): string {
  const filePath = canonicalText(e.filePath).trim().replace(/\\/g, '/').replace(/^(\.\/)+/, '');
  const title = canonicalText(e.title).trim().slice(0, MAX_TITLE);
  return fingerprint({ filePath, suite: canonicalText(e.suite).trim(), title, params: e.params });
}

/**
 * The tests whose last attempt failed. Attempts of one test share its key; the highest attempt
 * (the latest, on a tie) decides, as the server counts a run (src/domain/records.ts).
 */
export function failingTests(executions: readonly ExecutionInput[]): FailingTest[] {
  const byKey = new Map<string, { last: number; failed: number[] }>();
  executions.forEach((e, i) => {
    const fp = executionFingerprint(e);
    let t = byKey.get(fp);
    if (!t) {
      t = { last: i, failed: [] };
      byKey.set(fp, t);
    } else if (e.attempt >= executions[t.last]!.attempt) t.last = i;
    if (e.status === 'fail') t.failed.push(i);
  });
  const out: FailingTest[] = [];
  for (const [fp, t] of byKey) {
    const last = executions[t.last]!;
    if (last.status !== 'fail') continue;
    const f: FailingTest = { filePath: last.filePath, suite: last.suite, title: last.title, fingerprint: fp, failedIndices: t.failed };
    if (last.params && Object.keys(last.params).length > 0) f.params = last.params;
    out.push(f);
  }
  return out;
}

/** Fingerprint → quarantine entry, aliases included. */
export function quarantineIndex(entries: readonly QuarantineEntry[]): Map<string, QuarantineEntry> {
  const index = new Map<string, QuarantineEntry>();
  for (const q of entries) for (const fp of q.fingerprints) if (!index.has(fp)) index.set(fp, q);
  return index;
}

/** Splits failures into quarantined (muted) and the rest. */
export function matchFailures(failing: readonly FailingTest[], entries: readonly QuarantineEntry[]): { muted: MutedFailure[]; unmuted: FailingTest[] } {
  const index = quarantineIndex(entries);
  const muted: MutedFailure[] = [];
  const unmuted: FailingTest[] = [];
  for (const f of failing) {
    const q = index.get(f.fingerprint);
    if (q) muted.push({ ...f, quarantine: q });
    else unmuted.push(f);
  }
  return { muted, unmuted };
}

export interface MuteInput {
  /** The wrapped command's exit code. */
  commandExitCode: number;
  /** Undefined when the command left no results (no reporter hand-off, no fresh JUnit file). */
  executions: readonly ExecutionInput[] | undefined;
  /** The project's quarantine list as the server answered it now; undefined when it did not. */
  quarantine: readonly QuarantineEntry[] | undefined;
}

export function decideMute(input: MuteInput): MuteVerdict {
  const code = input.commandExitCode;
  const failing = input.executions ? failingTests(input.executions) : [];
  const matched = matchFailures(failing, input.quarantine ?? []);
  if (code === 0) return { kind: 'passed', exitCode: 0, ...matched };
  if (!input.executions || input.executions.length === 0) return { kind: 'no_results', exitCode: code, muted: [], unmuted: [] };
  if (failing.length === 0) return { kind: 'no_failing_test', exitCode: code, muted: [], unmuted: [] };
  if (input.quarantine === undefined) return { kind: 'no_quarantine_list', exitCode: code, ...matched };
  if (matched.unmuted.length > 0) return { kind: 'real_failures', exitCode: code, ...matched };
  return { kind: 'all_muted', exitCode: 0, muted: matched.muted, unmuted: [] };
}

/**
 * The executions with every failed attempt of a muted test marked `flakehouse.quarantined: true`
 * (copies; the input is left alone). Only a verdict that muted them marks them: a quarantined
 * test's failure in a run that failed anyway was not muted.
 */
export function markMuted(executions: readonly ExecutionInput[], verdict: MuteVerdict): ExecutionInput[] {
  if (verdict.kind !== 'all_muted') return [...executions];
  const marked = new Set(verdict.muted.flatMap((m) => m.failedIndices));
  return executions.map((e, i) => {
    if (!marked.has(i)) return e;
    const attributes: Record<string, AttributeValue> = { ...e.attributes, [QUARANTINED_ATTRIBUTE]: true };
    return { ...e, attributes };
  });
}

/** `file > suite > title [params]`, for the lines the wrapper and reporters print. */
export function describeTest(t: { filePath: string; suite: string; title: string; params?: Record<string, unknown> | null }): string {
  const parts = [t.filePath, t.suite, t.title].filter((p) => p !== '');
  const params = t.params && Object.keys(t.params).length > 0 ? ` ${JSON.stringify(t.params)}` : '';
  return `${parts.join(' > ')}${params}`;
}

// The reasons a score shows, in words. Every number in a message is computed over the window the
// message names: "its last N runs" are the graded runs since the evidence began (a proven fix
// starts them over), "the last N runs" the ring of recent runs.
import { INSTABILITY_REASON_SHARE, ISOLATION_L, REASON_MIN_EVIDENCE, STRONG_L } from './constants.js';
import type { BranchTrack } from './lineage.js';

export const REASON_CODES = ['SAME_SHA_VARIANCE', 'PASS_ON_RERUN', 'HIGH_FLIP_RATE', 'RECENT_INSTABILITY', 'MIXED_OUTCOMES', 'FAIL_ISOLATION', 'STABLE'] as const;
export type ReasonCode = (typeof REASON_CODES)[number];
export interface Reason {
  code: ReasonCode;
  message: string;
}

/** Decayed evidence and the counts behind it, since the evidence began. */
export interface EvidenceCounts {
  rerun: number;
  sameSha: number;
  isolation: number;
  events: { rerun: number; sameSha: number; isolation: number; runs: number };
}

export const shortSha = (sha: string): string => (sha === '' ? 'an unknown commit' : sha.slice(0, 7));
const times = (n: number): string => (n === 1 ? 'once' : `${n} times`);
const runsWord = (n: number): string => (n === 1 ? '1 run' : `${n} runs`);

/** The flaky evidence terms of L, strongest first, with their messages. */
export function evidenceTerms(e: EvidenceCounts): { code: ReasonCode; l: number; message: string }[] {
  const window = `in its last ${runsWord(e.events.runs)}`;
  const terms: { code: ReasonCode; l: number; message: string }[] = [];
  if (e.sameSha >= REASON_MIN_EVIDENCE) {
    terms.push({ code: 'SAME_SHA_VARIANCE', l: STRONG_L * e.sameSha, message: `passed in one run and failed in another of the same commit, ${times(e.events.sameSha)} ${window}` });
  }
  if (e.rerun >= REASON_MIN_EVIDENCE) {
    terms.push({ code: 'PASS_ON_RERUN', l: STRONG_L * e.rerun, message: `failed, then passed on a retry of the same code, ${times(e.events.rerun)} ${window}` });
  }
  if (e.isolation >= REASON_MIN_EVIDENCE) {
    terms.push({ code: 'FAIL_ISOLATION', l: ISOLATION_L * e.isolation, message: `failed on one commit and passed on the next of the same branch, ${times(e.events.isolation)} ${window}` });
  }
  return terms.sort((a, b) => b.l - a.l);
}

export function brokenReason(t: BranchTrack): Reason {
  const attempts = t.streakAttempts > t.streak ? `, ${t.streakAttempts} attempts` : '';
  return {
    code: 'RECENT_INSTABILITY',
    message: `failing on ${t.branch} since ${shortSha(t.since?.sha ?? '')} (${runsWord(t.streak)} in a row${attempts}, every attempt failed): broken, not flaky`,
  };
}

/** First-attempt failures over the ring's runs (outage runs left out). */
export function instabilityReason(ring: string): Reason | null {
  let n = 0;
  let red = 0;
  let retried = 0;
  for (const c of ring) {
    if (c === 'O') continue;
    n++;
    if (c === 'R' || c === 'F') red++;
    if (c === 'R') retried++;
  }
  if (red < 2 || red / n < INSTABILITY_REASON_SHARE) return null;
  const onRetry = retried > 0 ? ` (${retried} of them passed on a retry)` : '';
  return { code: 'RECENT_INSTABILITY', message: `failed its first attempt in ${red} of the last ${runsWord(n)}${onRetry}` };
}

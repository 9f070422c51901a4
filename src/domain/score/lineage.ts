// A test's history per branch: evidence across commits only counts along one branch's own history.
// A pass on a PR branch forked before a break says nothing about the break; a failure streak on a
// branch is a break, and a failure on one commit that the next commit of the same branch does not
// repeat is an isolated failure (weak evidence of flakiness, strong only when it recurs).
import { BRANCH_MEMORY } from './constants.js';

export interface BranchTrack {
  branch: string;
  /** Mainline: main/master/develop/trunk, or a branch pull requests merge into, when no PR runs on it. */
  mainline: boolean;
  /** A pull request's run was on this branch. */
  pr: boolean;
  /** Time of the last run on it (ms). */
  at: number;
  /** Its last commit's first 12 hex digits ('' when the CI sent none), and when that commit was first seen. */
  sha: string;
  headAt: number;
  /** A green run came before the current streak: only then can a failure episode be "isolated". */
  green: boolean;
  /** Runs of the current failure streak (failed every attempt, outside outages); 0 = passing. */
  streak: number;
  /** Distinct commits of the streak. */
  streakCommits: number;
  /** Failed attempts of the streak. */
  streakAttempts: number;
  /** First failing commit of the streak and its time. */
  since: { sha: string; at: number } | null;
  /** The streak began while a mainline branch was failing too: inherited from there, not its own. */
  inherited: boolean;
  /** The first passing commit after the last streak (the fix), while no new streak began. */
  fixed: { sha: string; at: number } | null;
}

/** How a green run ended a failure streak. */
export interface ClosedEpisode {
  /** Distinct commits the test failed on. */
  commits: number;
  runs: number;
  inherited: boolean;
  /** A green before the streak on this branch: the episode sat between passes. */
  isolated: boolean;
  /** The green ran a commit of the streak (a re-run): same-code evidence, not a fix. */
  sameCode: boolean;
}

function newTrack(branch: string, mainline: boolean, pr: boolean, at: number): BranchTrack {
  return { branch, mainline, pr, at, sha: '', headAt: 0, green: false, streak: 0, streakCommits: 0, streakAttempts: 0, since: null, inherited: false, fixed: null };
}

/**
 * The track of `branch` in `tracks` (copied, so the caller's state is not changed), created when
 * missing; the least recently run non-mainline track goes first when there are too many.
 */
export function trackOf(tracks: BranchTrack[], branch: string, mainline: boolean, pr: boolean, at: number): BranchTrack {
  const i = tracks.findIndex((t) => t.branch === branch);
  if (i >= 0) {
    const old = tracks[i]!;
    // Every field written out: one shape for every copy (a spread is slower), as score.ts's ownCopy.
    const t: Required<BranchTrack> = {
      branch: old.branch,
      mainline: old.mainline,
      pr: old.pr,
      at: old.at,
      sha: old.sha,
      headAt: old.headAt,
      green: old.green,
      streak: old.streak,
      streakCommits: old.streakCommits,
      streakAttempts: old.streakAttempts,
      since: old.since && { sha: old.since.sha, at: old.since.at },
      inherited: old.inherited,
      fixed: old.fixed && { sha: old.fixed.sha, at: old.fixed.at },
    };
    t.mainline = mainline;
    t.pr = t.pr || pr;
    tracks[i] = t;
    return t;
  }
  const t = newTrack(branch, mainline, pr, at);
  tracks.push(t);
  // Forget first a side branch, then the one run least recently (never the one just created).
  const keepFirst = (c: BranchTrack): [number, number] => [c.mainline ? 1 : 0, c.at];
  while (tracks.length > BRANCH_MEMORY) {
    let drop = -1;
    for (let k = 0; k < tracks.length; k++) {
      if (tracks[k] === t) continue;
      if (drop < 0) drop = k;
      else {
        const [m, a] = keepFirst(tracks[k]!);
        const [dm, da] = keepFirst(tracks[drop]!);
        if (m < dm || (m === dm && a < da)) drop = k;
      }
    }
    tracks.splice(drop, 1);
  }
  return t;
}

/**
 * How the state remembers a commit: its first 12 hex digits (48 bits: no two of a test's last 16
 * commits collide) keep the state small. A 7-character sha and its full form are the same commit.
 *
 * A run's commit is asked for by every test of the run, and a slice this short is a new string
 * each time, kept by each test's state: two 12-character copies per test (~6 MB for 100,000 tests
 * held in memory). So the keys of recent commits are remembered and given back as the same string.
 */
export function commitKey(sha: string): string {
  if (sha.length <= 12) return sha;
  let key = recentKeys.get(sha);
  if (key === undefined) {
    if (recentKeys.size >= RECENT_KEYS) recentKeys.clear();
    key = sha.slice(0, 12);
    recentKeys.set(sha, key);
  }
  return key;
}
const RECENT_KEYS = 256;
const recentKeys = new Map<string, string>();

/**
 * Code older than the branch's head: a commit first seen before the head was (a re-run of an older
 * commit). It says nothing about the code the branch runs now.
 */
export function olderThanHead(t: BranchTrack, sha: string, firstSeenAt: number): boolean {
  const key = commitKey(sha);
  return key !== '' && t.sha !== '' && key !== t.sha && firstSeenAt < t.headAt;
}

function moveHead(t: BranchTrack, sha: string, firstSeenAt: number): void {
  const key = commitKey(sha);
  if (key !== t.sha || key === '') t.headAt = firstSeenAt;
  t.sha = key;
}

/** A run that failed every attempt (outside an outage) on `sha`, first seen at `firstSeenAt`. */
export function recordFailure(t: BranchTrack, sha: string, at: number, firstSeenAt: number, failedAttempts: number, inherited: boolean): void {
  if (t.streak === 0) {
    t.since = { sha, at };
    t.streakCommits = 1;
    t.streakAttempts = 0;
    t.inherited = inherited;
    t.fixed = null;
  } else if (sha === '' || commitKey(sha) !== t.sha) t.streakCommits++;
  t.streak++;
  t.streakAttempts += failedAttempts;
  moveHead(t, sha, firstSeenAt);
  t.at = Math.max(t.at, at);
}

/** A run that passed (on the first attempt or a retry) on `sha`; returns the episode it closed. */
export function recordGreen(t: BranchTrack, sha: string, at: number, firstSeenAt: number): ClosedEpisode | null {
  let closed: ClosedEpisode | null = null;
  if (t.streak > 0) {
    const sameCode = sha !== '' && (commitKey(sha) === t.sha || commitKey(sha) === commitKey(t.since?.sha ?? ''));
    closed = { commits: t.streakCommits, runs: t.streak, inherited: t.inherited, isolated: t.green, sameCode };
    // A re-run of a failing commit that passes is a flake of that commit, not a fix.
    t.fixed = sameCode ? null : { sha, at };
    t.streak = 0;
    t.streakCommits = 0;
    t.streakAttempts = 0;
    t.since = null;
    t.inherited = false;
  }
  t.green = true;
  moveHead(t, sha, firstSeenAt);
  t.at = Math.max(t.at, at);
  return closed;
}

/**
 * The branches whose own history decides whether the test is broken: its mainline branches, or,
 * for a test never run on one, its branches that no pull request ran on.
 */
export function referenceTracks(tracks: readonly BranchTrack[]): BranchTrack[] {
  const mainline = tracks.filter((t) => t.mainline);
  return mainline.length > 0 ? mainline : tracks.filter((t) => !t.pr);
}

/** A mainline branch is failing right now: a streak that began meanwhile elsewhere is inherited from it. */
export function mainlineFailing(tracks: readonly BranchTrack[]): boolean {
  return tracks.some((t) => t.mainline && t.streak > 0 && !t.inherited);
}

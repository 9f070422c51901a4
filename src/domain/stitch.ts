// Identity resolution beyond the exact fingerprint (docs/architecture.md "Identity, scoring, clustering").
// Pure: the caller looks up the exact fingerprint/alias and the candidates, this decides.
//
// First match wins:
// 1. exact   — `exactId` (fingerprint or alias hit); also a candidate whose whole key (path,
//              suffix-trimmed suite and title, params hash) equals the incoming one.
// 2. moved   — a candidate with the same suite, title and params hash in ANOTHER file, not itself
//              present (a test that still runs was copied, not moved). Several: the
//              one whose path shares the longest suffix of path segments with the new path
//              (`a/cart.test.ts` → `b/cart.test.ts` beats `c/other.test.ts`), then the lowest id
//              (lexical) so the answer is deterministic. There are no timestamps to prefer "the
//              most recent" with.
// 3. renamed — candidates in the same file with the same suite and params hash: the title-token
//              Jaccard of each (set-based, see titleTokens); the best must be >= 0.5 and at least
//              0.2 ahead of the runner-up (a lone candidate's runner-up is 0), and must not itself
//              be present. Present candidates still compete for best/runner-up: if
//              the closest title still runs, the incoming test is new, not a rename.
// 4. new.
// Parameterised variants (different params hash) never stitch to each other.
// "Present" means more than "in this batch": two tests seen in the same run or on the same commit
// are two tests, never a move or rename of each other (the shards of one commit arrive as separate
// batches). The caller builds the present set per incoming test: the lease's identities plus those
// with stored executions in the test's runs or on their commits (PresenceIndex, presentIn). The
// converse order — the new name stitched first, the old one running on the same commit later — is
// undone by the caller with contradictedAliases.
// resolveIdentity works test by test; if two incoming tests resolve to the same old identity in
// one batch, the caller decides (e.g. keep the higher confidence, make the other new).
import { normalizeTestPath } from '../../client/src/contract/identity.js';

export interface KnownIdentity {
  id: string;
  /** Normalised (normalizeTestPath). */
  filePath: string;
  suite: string;
  title: string;
  paramsHash: string;
}

export interface IncomingTest {
  filePath: string;
  suite: string;
  title: string;
  paramsHash: string;
}

export type Resolution =
  | { kind: 'exact'; id: string }
  /** Same suite+title+params, other file → alias, stitch L2. */
  | { kind: 'moved'; id: string; from: KnownIdentity }
  /** Same file+suite+params, similar title → stitch L3 with confidence (the Jaccard). */
  | { kind: 'renamed'; id: string; from: KnownIdentity; confidence: number }
  | { kind: 'new' };

export const RENAME_MIN_JACCARD = 0.5;
export const RENAME_MIN_MARGIN = 0.2;
/** Float slack so that e.g. 0.7 - 0.5 counts as a 0.2 margin. */
const EPSILON = 1e-9;

/**
 * Lowercase word tokens of a test title: camelCase / PascalCase humps (`parseHTTPResponse` →
 * parse, http, response), snake_case, kebab-case, punctuation and blanks all separate words;
 * letters and digits stay together (`utf8`, `v2`). Unicode letters count as letters. Order and
 * duplicates are kept; tokenJaccard compares sets.
 */
export function titleTokens(title: string): string[] {
  return title
    .replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t !== '');
}

/** |A ∩ B| / |A ∪ B| over the token sets; 0 when both are empty (no evidence of similarity). */
export function tokenJaccard(a: readonly string[], b: readonly string[]): number {
  const sa = new Set(a);
  const sb = new Set(b);
  if (sa.size === 0 && sb.size === 0) return 0;
  let inter = 0;
  for (const t of sa) if (sb.has(t)) inter++;
  return inter / (sa.size + sb.size - inter);
}

/** Number of trailing path segments two paths have in common. */
function commonSuffixSegments(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  let n = 0;
  while (n < sa.length && n < sb.length && sa[sa.length - 1 - n] === sb[sb.length - 1 - n]) n++;
  return n;
}

/** Ids that count as present for one incoming test: only membership is asked. */
export type PresentIds = Pick<ReadonlySet<string>, 'has'>;

/** Where a test ran: its run and the run's commit. */
export interface RunRef {
  runId: string;
  commitSha: string;
}

/** All-zero shas are the placeholder of runs reported without a commit (PLACEHOLDER_COMMIT). */
const PLACEHOLDER_SHA = /^0+$/;

/**
 * Whether a sha names a commit: not empty and not the all-zero placeholder, which every run
 * without a commit shares and so says nothing about two tests running together.
 */
export function isKnownCommit(sha: string): boolean {
  return sha !== '' && !PLACEHOLDER_SHA.test(sha);
}

/**
 * Which identities ran in which run and on which (known) commit: two tests found together here
 * are two tests, so neither can be the origin of a move or rename of the other.
 */
export class PresenceIndex {
  private readonly byRun = new Map<string, Set<string>>();
  private readonly byCommit = new Map<string, Set<string>>();

  add(testId: string, where: RunRef): void {
    addTo(this.byRun, where.runId, testId);
    if (isKnownCommit(where.commitSha)) addTo(this.byCommit, where.commitSha, testId);
  }

  /** Whether `testId` ran in the run `where` names, or on its commit when that is known. */
  has(testId: string, where: RunRef): boolean {
    if (this.byRun.get(where.runId)?.has(testId)) return true;
    return isKnownCommit(where.commitSha) && this.byCommit.get(where.commitSha)?.has(testId) === true;
  }

  get isEmpty(): boolean {
    return this.byRun.size === 0;
  }
}

function addTo(m: Map<string, Set<string>>, key: string, id: string): void {
  const set = m.get(key);
  if (set) set.add(id);
  else m.set(key, new Set([id]));
}

/**
 * The present ids for an incoming test that ran at `where` (each of its runs in the lease):
 * `inLease` (identities resolved in the lease; the caller may add to it as it resolves) and every
 * identity `ranAt` records in one of those runs or on one of their commits.
 */
export function presentIn(inLease: ReadonlySet<string>, ranAt: PresenceIndex, where: readonly RunRef[]): PresentIds {
  return { has: (id) => inLease.has(id) || where.some((w) => ranAt.has(id, w)) };
}

/** A run of an alias fingerprint: `fingerprint` ran as the identity `testId` at `where`. */
export interface AliasRun {
  fingerprint: string;
  testId: string;
  where: RunRef;
}

/**
 * Aliases that contradict the rule after the fact: the alias fingerprint ran in the same run or on
 * the same commit as its identity's own fingerprint (`own`: where each identity ran under its own
 * fingerprint). Two tests ran together, so the stitch that made the alias was wrong — typically
 * the new test's shard of a commit was processed before the old test's. Returns fingerprint →
 * the identity it wrongly resolves to.
 */
export function contradictedAliases(own: PresenceIndex, aliasRuns: readonly AliasRun[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of aliasRuns) if (own.has(r.testId, r.where)) out.set(r.fingerprint, r.testId);
  return out;
}

/**
 * Indexes a lease's stitch candidates so each incoming test sees only the few that can match it
 * (same suite and params, and same title or same file) instead of the whole list: with thousands of
 * new tests in a lease, scanning every candidate for each was quadratic. The subset keeps the list's
 * order, so `resolveIdentity` breaks ties exactly as it would over the full list.
 */
export function candidateIndex(candidates: readonly KnownIdentity[]): (incoming: IncomingTest) => KnownIdentity[] {
  const byTitle = new Map<string, number[]>();
  const byFile = new Map<string, number[]>();
  const push = (m: Map<string, number[]>, k: string, i: number): void => {
    const list = m.get(k);
    if (list) list.push(i);
    else m.set(k, [i]);
  };
  candidates.forEach((c, i) => {
    const suite = c.suite.trim();
    push(byTitle, `${suite}\u0000${c.title.trim()}\u0000${c.paramsHash}`, i);
    push(byFile, `${normalizeTestPath(c.filePath)}\u0000${suite}\u0000${c.paramsHash}`, i);
  });
  return (incoming) => {
    const suite = incoming.suite.trim();
    const a = byTitle.get(`${suite}\u0000${incoming.title.trim()}\u0000${incoming.paramsHash}`) ?? [];
    const b = byFile.get(`${normalizeTestPath(incoming.filePath)}\u0000${suite}\u0000${incoming.paramsHash}`) ?? [];
    if (b.length === 0) return a.map((i) => candidates[i]!);
    if (a.length === 0) return b.map((i) => candidates[i]!);
    return [...new Set([...a, ...b])].sort((x, y) => x - y).map((i) => candidates[i]!);
  };
}

/**
 * Resolve an incoming test against what the project already knows.
 * @param exactId the identity found by exact fingerprint or alias, or null.
 * @param candidates identities of the project sharing (suite, title, paramsHash) or
 *   (filePath, suite, paramsHash) with the incoming test — the caller's two indexed lookups.
 *   Others are ignored.
 * @param presentIds ids of identities seen together with the incoming test: in the same lease,
 *   run or commit (presentIn). None of them can be the origin of a move or rename.
 */
export function resolveIdentity(
  incoming: IncomingTest,
  exactId: string | null,
  candidates: readonly KnownIdentity[],
  presentIds: PresentIds,
): Resolution {
  if (exactId !== null && exactId !== '') return { kind: 'exact', id: exactId };

  const filePath = normalizeTestPath(incoming.filePath);
  const suite = incoming.suite.trim();
  const title = incoming.title.trim();
  const params = incoming.paramsHash;

  const sameFile: { c: KnownIdentity; title: string }[] = [];
  const movedFrom: { c: KnownIdentity; path: string }[] = [];
  for (const c of candidates) {
    if (c.paramsHash !== params || c.suite.trim() !== suite) continue;
    const cPath = normalizeTestPath(c.filePath);
    const cTitle = c.title.trim();
    if (cPath === filePath) {
      if (cTitle === title) return { kind: 'exact', id: c.id };
      sameFile.push({ c, title: cTitle });
    } else if (cTitle === title && !presentIds.has(c.id)) {
      movedFrom.push({ c, path: cPath });
    }
  }

  if (movedFrom.length > 0) {
    let best = movedFrom[0]!;
    let bestScore = commonSuffixSegments(best.path, filePath);
    for (const m of movedFrom.slice(1)) {
      const score = commonSuffixSegments(m.path, filePath);
      if (score > bestScore || (score === bestScore && m.c.id < best.c.id)) {
        best = m;
        bestScore = score;
      }
    }
    return { kind: 'moved', id: best.c.id, from: best.c };
  }

  if (sameFile.length > 0) {
    const tokens = titleTokens(title);
    let best: KnownIdentity | null = null;
    let bestScore = -1;
    let second = 0;
    for (const { c, title: cTitle } of sameFile) {
      const score = tokenJaccard(tokens, titleTokens(cTitle));
      if (score > bestScore) {
        if (best !== null) second = Math.max(second, bestScore);
        best = c;
        bestScore = score;
      } else {
        second = Math.max(second, score);
      }
    }
    if (
      best !== null &&
      bestScore >= RENAME_MIN_JACCARD - EPSILON &&
      bestScore - second >= RENAME_MIN_MARGIN - EPSILON &&
      !presentIds.has(best.id)
    ) {
      return { kind: 'renamed', id: best.id, from: best, confidence: bestScore };
    }
  }

  return { kind: 'new' };
}

// A commit as a pull request sees it (docs/contract.md §6): its runs merged over shards, jobs and
// re-runs, its failing tests classified by the gate against a base branch, and the one tally every
// surface shows. GET /v1/runs/summary, GET /v1/runs/gate, the `pr.summary`/`pr.gate` procedures and
// the PR page all call these two functions. How runs merge is client/src/contract/pr-summary.ts, the gate's
// rules client/src/contract/gate.ts, the markdown client/src/contract/pr-markdown.ts, the SQL src/store/pr-summary.ts.
import { compareGateTests, flakeProof, gateTestOf, round4, verdictOf, BASE_WINDOW_DAYS, NO_BASE_HISTORY, type BaseHistory, type Strictness } from '../../client/src/contract/gate.js';
import { gateMarkdown, summaryMarkdown, type OwnedSummaryTest } from '../../client/src/contract/pr-markdown.js';
import { BASE_BRANCH_RE, COMMIT_SHA_RE, gateQuerySchema, type FixVerificationBody, type GateResponse, type SummaryResponse, type SummaryTestBody } from '../../client/src/contract/pr-schemas.js';
import { compareTests, countsText, mergeCommitRuns, mergedStatus, prTally, type MergedCommit } from '../../client/src/contract/pr-summary.js';
import { effectiveQuarantine } from '../domain/quarantine.js';
import { DEFAULT_SCORE_PARAMS, flakeEvidenceOf } from '../domain/score.js';
import { toIso } from '../../client/src/contract/time.js';
import type { CodeownersRepo } from '../store/codeowners.js';
import type { PrSummaryRepo } from '../store/pr-summary.js';
import type { TestRepo } from '../store/tests.js';
import { errors } from '../errors/catalogue.js';

export interface PrCommitDeps {
  prSummary: PrSummaryRepo;
  tests: TestRepo;
  codeowners: CodeownersRepo;
  /** The project's `flaky.minSamples` (an established flake flaked over at least that many runs); default 5. */
  minSamples?: (projectId: string) => Promise<number>;
}

/** A commit's merged runs and its failing tests, in the summary's order. */
interface CommitView extends MergedCommit {
  /** Distinct tests that ran in the commit's runs (markdown headline). */
  totalTests: number;
  tests: OwnedSummaryTest[];
  /** Fixes `flakehouse run --verify-fix` re-ran in the commit's runs. */
  fixes: FixVerificationBody[];
}

function commitShaOf(raw: string | undefined): string {
  const sha = raw?.trim() ?? '';
  if (!COMMIT_SHA_RE.test(sha)) throw errors.invalidCommitSha();
  return sha.toLowerCase();
}

async function loadCommit(d: PrCommitDeps, repo: PrSummaryRepo, projectId: string, sha: string): Promise<CommitView | null> {
  const commit = mergeCommitRuns(await repo.commitRuns(projectId, sha));
  if (!commit) return null;
  const [failing, totalTests, fixRows] = await Promise.all([repo.failingTests(projectId, commit.runIds), repo.testedCount(projectId, commit.runIds), repo.fixVerifications(projectId, commit.runIds)]);
  const fixes = fixRows.map((f) => ({ testIdentityId: f.testId, filePath: f.filePath, suite: f.suite, title: f.title, runs: f.runs, failed: f.failed, verified: f.runs > 0 && f.failed === 0 }));
  const ids = failing.map((r) => r.testId);
  const [states, overrides, owners, minSamples] = await Promise.all([
    d.tests.states(projectId, ids),
    d.tests.overrides(projectId, ids),
    d.codeowners.resolver(projectId),
    d.minSamples ? d.minSamples(projectId) : Promise.resolve(DEFAULT_SCORE_PARAMS.minSamples),
  ]);
  const tests: OwnedSummaryTest[] = [];
  for (const r of failing) {
    const status = mergedStatus(r.fails, r.passes, r.flakies);
    if (status === null) continue;
    const state = states.get(r.testId) ?? null;
    const top = state?.reasons[0] ?? null;
    const testState = state?.state ?? 'new';
    const since = state?.stateSince ?? null;
    const newTest = r.newRuns > 0 ? { runs: r.newRuns, failed: r.newFailed } : null;
    // The one rule for a known flake (client/src/contract/gate.ts flakeProof).
    const proof = flakeProof({
      state: testState,
      flakySince: testState === 'flaky' ? since : null,
      commit: { branch: commit.branch, firstRunAt: commit.firstRunAt },
      failedAttempts: r.fails + r.flakies,
      attempts: r.fails + r.flakies + r.passes,
      passedHere: r.passes > 0 || r.flakies > 0,
      evidence: state ? flakeEvidenceOf(state.model) : null,
      minSamples,
    });
    // A new test that failed its proof is never a known flake (client/src/contract/gate.ts newTestFailed).
    const provenFlake = proof !== null && proof.kind !== 'unproven' && !(newTest && newTest.failed > 0);
    tests.push({
      testIdentityId: r.testId,
      filePath: r.filePath,
      suite: r.suite,
      title: r.title,
      status,
      errorMessage: r.errorMessage === '' ? null : r.errorMessage,
      score: round4(state?.score ?? 0),
      quarantined: effectiveQuarantine(state?.auto ?? null, overrides.get(r.testId) ?? null).quarantined,
      topReason: top?.message ?? null,
      topReasonCode: top?.code ?? null,
      state: testState,
      stateSince: since === null ? null : { commitSha: since.commitSha, branch: since.branch, at: toIso(since.at) },
      flakeRate: round4(state?.flakeRate ?? 0),
      knownFlake: provenFlake,
      flakeProof: proof?.kind ?? null,
      proofHint: proof?.hint ?? null,
      newTest,
      owners: owners(r.filePath),
    });
  }
  tests.sort(compareTests);
  return { ...commit, totalTests, tests, fixes };
}

/**
 * The commit judged by the gate against `baseBranch`: its failing tests classified (the gate's
 * order), the verdict, and the one summary every surface shows (client/src/contract/pr-summary.ts prTally).
 * The summary answer is this at strictness `new` against the commit's own base branch.
 */
async function judge(repo: PrSummaryRepo, projectId: string, view: CommitView, baseBranch: string, strictness: Strictness) {
  const [history, forkedAt] = await Promise.all([
    repo.baseHistory(projectId, baseBranch, view.tests.map((t) => t.testIdentityId), view.runIds, view.firstRunAt, BASE_WINDOW_DAYS),
    view.mergeBase === null ? Promise.resolve(null) : repo.forkedAt(projectId, baseBranch, view.mergeBase),
  ]);
  const baseOf = (testId: string): BaseHistory => {
    const h = history.get(testId);
    if (!h) return NO_BASE_HISTORY;
    // Forked before the break's first failing run: the commit does not contain it.
    const containsBreak = h.brokenSince === null || forkedAt === null ? null : forkedAt >= h.brokenSince.at;
    return { ...h, containsBreak };
  };
  const tests = view.tests.map((t) => gateTestOf(t, baseOf(t.testIdentityId))).sort(compareGateTests);
  const verdict = verdictOf(strictness, tests);
  return { tests, verdict, tally: prTally({ tests, verdict, runStatus: view.runStatus, complete: view.complete }) };
}

/** The base branch the gate judges against: asked for, else the one the commit's runs sent, else main. */
function baseBranchOf(view: CommitView, asked: string | undefined): string {
  return asked ?? (view.baseBranch !== null && BASE_BRANCH_RE.test(view.baseBranch) ? view.baseBranch : 'main');
}

/** GET /v1/runs/summary: the commit's failing and flaky tests merged over its runs, with its PR comment. */
export async function commitSummary(d: PrCommitDeps, projectId: string, commitSha: string | undefined): Promise<SummaryResponse> {
  const repo = d.prSummary;
  const sha = commitShaOf(commitSha);
  const view = await loadCommit(d, repo, projectId, sha);
  if (!view) throw errors.notFound(`no run of commit ${sha} was ingested`);
  const baseBranch = baseBranchOf(view, undefined);
  const judged = await judge(repo, projectId, view, baseBranch, 'new');
  const classification = new Map(judged.tests.map((t) => [t.testIdentityId, t.classification]));
  const { tally } = judged;
  return {
    found: true as const,
    summary: {
      commitSha: view.commitSha,
      branch: view.branch,
      prNumber: view.prNumber,
      runStatus: view.runStatus,
      complete: view.complete,
      failed: tally.failed,
      flaky: tally.flaky,
      status: tally.status,
      jobs: view.jobs,
      newFailures: tally.newFailures,
      brokenOnBase: tally.brokenOnBase,
      knownFlakes: tally.knownFlakes,
      quarantined: tally.quarantined,
      countsText: countsText(tally),
      verdict: judged.verdict,
      baseBranch,
      totalTests: view.totalTests,
      tests: view.tests.map(publicTest),
      fixes: view.fixes,
    },
    markdown: summaryMarkdown({ ...view, baseBranch, tests: view.tests.map((t) => ({ ...t, classification: classification.get(t.testIdentityId) ?? 'new_failure' })) }, view.runIds.length),
  };
}

/** GET /v1/runs/gate: the merge gate's verdict on the commit against `baseBranch` at `strictness`. */
export async function commitGate(d: PrCommitDeps, projectId: string, query: { commitSha?: string; baseBranch?: string; strictness: Strictness }): Promise<GateResponse> {
  const repo = d.prSummary;
  const sha = commitShaOf(query.commitSha);
  if (query.baseBranch !== undefined && !BASE_BRANCH_RE.test(query.baseBranch)) throw errors.invalidBaseBranch();
  const view = await loadCommit(d, repo, projectId, sha);
  if (!view) return { found: false as const };
  const baseBranch = baseBranchOf(view, query.baseBranch);
  const { tests, verdict, tally } = await judge(repo, projectId, view, baseBranch, query.strictness);
  const gate = {
    commitSha: view.commitSha,
    branch: view.branch,
    baseBranch,
    prNumber: view.prNumber,
    runStatus: view.runStatus,
    complete: view.complete,
    status: tally.status,
    jobs: view.jobs,
    failed: tally.failed,
    flaky: tally.flaky,
    newFailures: tally.newFailures,
    knownFlakes: tally.knownFlakes,
    quarantined: tally.quarantined,
    countsText: countsText(tally),
    brokenOnBase: tally.brokenOnBase,
    strictness: query.strictness,
    verdict,
    tests: tests.map((t) => ({
      ...publicTest(t),
      classification: t.classification,
      baseFailRate: t.baseFailRate,
      baseSampleSize: t.baseSampleSize,
      brokenSince: t.brokenSince === null ? null : { commitSha: t.brokenSince.commitSha, at: toIso(t.brokenSince.at) },
    })),
  };
  return { found: true as const, gate, markdown: gateMarkdown(gate, view.runIds.length) };
}

/** Commits of one PR the PR page lists with their verdicts (each is one gate computation). */
export const PR_COMMITS_MAX = 20;

/** What the PR page asks of the gate; an unknown or absent strictness is `new`, as GET /v1/runs/gate reads it. */
export interface PrPageOptions {
  baseBranch?: string;
  strictness?: string;
}

function gateOf(d: PrCommitDeps, projectId: string, commitSha: string, o: PrPageOptions): Promise<GateResponse> {
  return commitGate(d, projectId, gateQuerySchema.parse({ commitSha, baseBranch: o.baseBranch, strictness: o.strictness }));
}

/** The PR page's commit list: each commit of the PR, newest first, with the gate's verdict and tally. */
export async function prCommits(d: PrCommitDeps, projectId: string, prNumber: number, o: PrPageOptions) {
  const rows = await d.prSummary.prCommits(projectId, prNumber, PR_COMMITS_MAX + 1);
  const shown = rows.slice(0, PR_COMMITS_MAX);
  const commits = await mapLimit(shown, 4, async (c) => {
    const g = await gateOf(d, projectId, c.commitSha, o);
    const gt = g.found ? g.gate : null;
    // The gate's one summary (client/src/contract/pr-summary.ts prTally): the same status and counts as the commit's page and its comments.
    return {
      commitSha: c.commitSha,
      runs: c.runs,
      firstRunAt: toIso(c.firstRunAt),
      lastRunAt: toIso(c.lastRunAt),
      runStatus: gt?.runStatus ?? null,
      complete: gt?.complete ?? false,
      status: gt?.status ?? null,
      failed: gt?.failed ?? 0,
      flaky: gt?.flaky ?? 0,
      gate: gt
        ? {
            verdict: gt.verdict,
            baseBranch: gt.baseBranch,
            strictness: gt.strictness,
            newFailures: gt.newFailures,
            knownFlakes: gt.knownFlakes,
            quarantined: gt.quarantined ?? 0,
            countsText: gt.countsText ?? '',
            brokenOnBase: gt.brokenOnBase,
          }
        : null,
    };
  });
  return { prNumber, commits, more: rows.length > PR_COMMITS_MAX };
}

/** The PR page: a commit (or a PR's newest commit) with its summary and gate, each with its comment. */
export async function prPage(d: PrCommitDeps, projectId: string, which: { commitSha: string } | { prNumber: number }, o: PrPageOptions) {
  let commitSha: string;
  if ('prNumber' in which) {
    const latest = (await d.prSummary.prCommits(projectId, which.prNumber, 1))[0];
    if (!latest) throw errors.notFound(`no run of PR #${which.prNumber} was ingested`);
    commitSha = latest.commitSha;
  } else commitSha = which.commitSha;
  // The very functions of GET /v1/runs/summary and /v1/runs/gate: the page shows what the PR comments say.
  const [s, g] = await Promise.all([commitSummary(d, projectId, commitSha), gateOf(d, projectId, commitSha, o)]);
  return { commitSha, prNumber: s.summary.prNumber, summary: s.summary, summaryMarkdown: s.markdown, gate: g.found ? g.gate : null, gateMarkdown: g.found ? g.markdown : null };
}

/** `f` over `items` with at most `n` calls in flight; the answers in the items' order. */
async function mapLimit<T, R>(items: readonly T[], n: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]!);
      }
    }),
  );
  return out;
}

/** A test as the answers carry it: without its owners (the markdown shows them). */
function publicTest(t: SummaryTestBody): SummaryTestBody {
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
    state: t.state,
    stateSince: t.stateSince,
    flakeRate: t.flakeRate,
    knownFlake: t.knownFlake,
    flakeProof: t.flakeProof ?? null,
    proofHint: t.proofHint ?? null,
    newTest: t.newTest ?? null,
  };
}

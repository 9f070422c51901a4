// Requests and answers of the routes the CI commands call (docs/contract.md §6): GET
// /v1/runs/summary, /v1/runs/gate and /v1/badges. The routes validate with them and the CLI parses
// the answers with them, so both sides agree by construction; being in the client's contract,
// importing them pulls in no server code (the CLI runs on CI machines).
import { z } from 'zod';
import { BADGE_VARIANTS } from './badge.js';
import { CLASSIFICATIONS, FLAKE_PROOFS, STRICTNESS, VERDICTS } from './gate.js';
import { PR_STATUSES } from './pr-summary.js';
import { TEST_STATES } from './test-states.js';

/** A commit sha as the summary and the gate accept it: 7 to 40 hex characters (an abbreviation matches). */
export const COMMIT_SHA_RE = /^[0-9a-f]{7,40}$/i;
/** A base branch name the gate accepts. */
export const BASE_BRANCH_RE = /^[\w./-]{1,255}$/;

export const summaryQuerySchema = z.object({ commitSha: z.string().optional() });

export const gateQuerySchema = z.object({
  commitSha: z.string().optional(),
  baseBranch: z.string().optional(),
  // An unknown value means `new`, as in Flakemetry: its gate action reads any non-2xx as "not
  // processed yet" and skips the gate, so a 400 here would let a PR through that should block.
  strictness: z.enum(STRICTNESS).catch('new'),
});

export const summaryTestSchema = z.object({
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
  /** The test's state: new | healthy | flaky | broken | fixed. */
  state: z.enum(TEST_STATES),
  /** Where the state began (broken: its first failing commit on its mainline; fixed: the first passing one). */
  stateSince: z.object({ commitSha: z.string(), branch: z.string(), at: z.string() }).nullable(),
  /** Share of its runs in which the test flakes. */
  flakeRate: z.number(),
  /** A known flake here: flaky before this commit, and its failure here proven a flake (flakeProof). */
  knownFlake: z.boolean(),
  /**
   * For a test flaky before this commit: how its failure here was judged — `same_code` (this commit
   * also passed it), `established` (fits the low end of an established flake's rate) or `unproven`
   * (not let through: classified `new_failure`). Null for other tests; absent from older servers.
   */
  flakeProof: z.enum(FLAKE_PROOFS).nullable().optional(),
  /** Unproven: what is missing and how to prove it ("failed 1 of 1 attempts; … — re-run the test on this commit"). */
  proofHint: z.string().nullable().optional(),
  /**
   * A new test proven by `flakehouse run --verify-new`: its attempts in the commit's runs and how
   * many failed. Any failure makes it a new failure (never a known flake). Absent from older servers.
   */
  newTest: z.object({ runs: z.number(), failed: z.number() }).nullable().optional(),
});

/** A test `flakehouse run --verify-fix` re-ran for a `Fixes-flaky:` trailer: verified when every re-run passed. */
export const fixVerificationSchema = z.object({
  testIdentityId: z.string(),
  filePath: z.string(),
  suite: z.string(),
  title: z.string(),
  runs: z.number(),
  failed: z.number(),
  verified: z.boolean(),
});

/**
 * The one summary of a commit (client/src/contract/pr-summary.ts prTally), in the summary's and the gate's
 * answers alike; docs/pull-requests.md, "What a pull request shows". Optional: absent from older
 * servers (the CLI then computes it from the tests with the same function).
 */
const tallyFields = {
  /** blocked | running | canceled | passed: the gate's verdict over every job of the commit (each job's latest run). */
  status: z.enum(PR_STATUSES).optional(),
  /** Jobs of the commit (source, CI run, shard); a job's re-run replaces its run before. */
  jobs: z.number().optional(),
  /** How many of the known flakes are quarantined (a part of knownFlakes). */
  quarantined: z.number().optional(),
  /** The counts in words, as every text says them (`1 new failure, 2 known flakes (1 quarantined)`): what a page shows. */
  countsText: z.string().optional(),
};

export const summaryResponseSchema = z.object({
  found: z.literal(true),
  summary: z.object({
    commitSha: z.string(),
    branch: z.string(),
    prNumber: z.number().nullable(),
    /** Every job's latest run, the worst of them (failed > running > canceled > passed). */
    runStatus: z.string(),
    /** False while a run of the commit is still arriving (an OTLP trace whose run span is not in yet). */
    complete: z.boolean(),
    /** Failing tests that failed every attempt here. */
    failed: z.number(),
    /** Failing tests that also passed here (a retry, another run). */
    flaky: z.number(),
    ...tallyFields,
    /** The gate's classification at strictness `new` against the commit's base branch, as GET /v1/runs/gate counts it. */
    newFailures: z.number().optional(),
    brokenOnBase: z.number().optional(),
    knownFlakes: z.number().optional(),
    verdict: z.enum(VERDICTS).optional(),
    baseBranch: z.string().optional(),
    /** Distinct tests that ran (not only skipped) in the commit's runs. */
    totalTests: z.number(),
    tests: z.array(summaryTestSchema),
    /** Fixes proven (or not) by `flakehouse run --verify-fix` in the commit's runs. Absent from older servers. */
    fixes: z.array(fixVerificationSchema).optional(),
  }),
  markdown: z.string(),
});

export const gateTestSchema = summaryTestSchema.extend({
  classification: z.enum(CLASSIFICATIONS),
  baseFailRate: z.number(),
  baseSampleSize: z.number(),
  /** broken_on_base: the base branch's first failing run of the break (every run since failed). */
  brokenSince: z.object({ commitSha: z.string(), at: z.string() }).nullable(),
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
      /** Every job's latest run, the worst of them (failed > running > canceled > passed). */
      runStatus: z.string(),
      /** False while a run of the commit is still arriving: a verdict on part of a run. */
      complete: z.boolean(),
      newFailures: z.number(),
      /** Known flakes: quarantined, or known flaky (score, or failed/flaked on the base branch); `quarantined` says how many are quarantined. */
      knownFlakes: z.number(),
      /** Failures already broken on the base branch: not this change's doing, never flakes. */
      brokenOnBase: z.number(),
      ...tallyFields,
      /** Failing tests that failed every attempt here, and those that also passed here. */
      failed: z.number().optional(),
      flaky: z.number().optional(),
      strictness: z.enum(STRICTNESS),
      verdict: z.enum(VERDICTS),
      tests: z.array(gateTestSchema),
    }),
    markdown: z.string(),
  }),
]);

export const badgesResponseSchema = z.object({
  project: z.string(),
  badgeToken: z.string(),
  publicApiUrl: z.string().nullable(),
  badges: z.array(z.object({ variant: z.enum(BADGE_VARIANTS), label: z.string(), svg: z.string(), json: z.string() })),
});

export type SummaryTestBody = z.infer<typeof summaryTestSchema>;
export type SummaryBody = z.infer<typeof summaryResponseSchema>['summary'];
export type GateTestBody = z.infer<typeof gateTestSchema>;
export type FixVerificationBody = z.infer<typeof fixVerificationSchema>;
export type GateBody = Extract<z.infer<typeof gateResponseSchema>, { found: true }>['gate'];
export type SummaryResponse = z.infer<typeof summaryResponseSchema>;
export type GateResponse = z.infer<typeof gateResponseSchema>;
export type BadgesResponse = z.infer<typeof badgesResponseSchema>;

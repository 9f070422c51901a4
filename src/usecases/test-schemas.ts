// What the flaky board and the test page answer (GET /v1/flaky, GET /v1/tests/:id and the
// `flaky.board`/`test.get` procedures): their inputs and answers, as zod schemas both doors validate with.
import { z } from 'zod';
import { artifactViewSchema } from '../artifacts/links.js';
import { REASON_CODES, TEST_STATES, type StateSince } from '../domain/score.js';
import { toIso } from '../../client/src/contract/time.js';
import { BOARD_SORTS } from '../store/board.js';

/** A query flag: true, false, 1 or 0. */
export const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1');
const reasonSchema = z.object({ code: z.enum(REASON_CODES), message: z.string() });
/** Where a test's state began: broken since its first failing commit, fixed since its first passing one. */
export const stateSinceSchema = z.object({ commitSha: z.string(), branch: z.string(), at: z.string() }).nullable();
/** What the smoothed flake rate was estimated from, unsmoothed: `failed / runs` is the raw rate. */
export const recentRunsSchema = z.object({
  /** Its last graded runs (up to 32; runs in an outage left out). */
  runs: z.number(),
  /** Those with a failed attempt: failed, or failed then passed on a retry. */
  failed: z.number(),
});
const testStateFields = {
  /** new | healthy | flaky | broken | fixed: only `flaky` is a quarantine candidate. */
  state: z.enum(TEST_STATES),
  stateSince: stateSinceSchema,
  /**
   * Estimated share of its runs in which the test flakes: decayed (half-life 30 days) and shrunk
   * towards a prior of 10% (docs/data-model.md), so it differs from the raw share in `recentRuns`.
   */
  flakeRate: z.number(),
  recentRuns: recentRunsSchema,
};

export function stateSinceBody(since: StateSince | null): z.infer<typeof stateSinceSchema> {
  return since === null ? null : { commitSha: since.commitSha, branch: since.branch, at: toIso(since.at) };
}

/** What a test cost over the window (docs/dashboard.md "Board"). */
export const impactSchema = z.object({
  /** Runs whose failure it caused: its final attempt failed. */
  failuresCaused: z.number(),
  /** Distinct pull requests among those runs. */
  prsBlocked: z.number(),
  /** Its retried attempts, plus its share of the whole-job re-runs of the runs it failed. */
  minutesLost: z.number(),
  /** minutesLost × cost.ciMinute, in `currency`. */
  cost: z.number(),
  currency: z.string(),
});

/** The impact window when the board has no `days` filter. */
export const IMPACT_DEFAULT_DAYS = 30;

export const flakyQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  // Flakemetry's defaults, which its CLI relies on (`flakemetry flaky --quarantined` filters this list):
  // every scored test, stable ones (score 0) at the bottom, quarantined ones included.
  minScore: z.coerce.number().min(0).max(1).default(0),
  includeQuarantined: bool.default(true),
  owner: z.string().min(1).optional(),
  // The dashboard's filters, sort and paging (docs/dashboard.md); absent, the board is as before.
  /** Case-insensitive part of the suite / of the file path. */
  suite: z.string().min(1).max(500).optional(),
  file: z.string().min(1).max(1000).optional(),
  /** true: only quarantined tests; false: none of them. */
  quarantined: bool.optional(),
  /** Only tests in this state (new, healthy, flaky, broken, fixed). */
  state: z.enum(TEST_STATES).optional(),
  /** true: only tests that need attention (flaky, broken or quarantined); the dashboard's default. */
  attention: bool.optional(),
  /** Only tests run on this branch; `defaultBranch=true`: on the project's default branch (the one PRs target). */
  branch: z.string().min(1).max(255).optional(),
  defaultBranch: bool.optional(),
  /** Only tests run in the last this many days (also the impact window: 30 days when absent). */
  days: z.coerce.number().int().min(1).max(120).optional(),
  /** `impact`: CI minutes lost over the window, most first (each item then carries `impact`). */
  sort: z.enum(BOARD_SORTS).default('score'),
  /** Rows to skip; `cursor` (the previous page's nextCursor) is the same, opaque. */
  offset: z.coerce.number().int().min(0).max(1_000_000).optional(),
  cursor: z.string().max(100).optional(),
});

export const flakyItemSchema = z.object({
  testIdentityId: z.string(),
  filePath: z.string(),
  suite: z.string(),
  title: z.string(),
  score: z.number(),
  flipRate: z.number(),
  passOnRerunRate: z.number(),
  trend: z.enum(['rising', 'falling', 'stable']),
  lastFlakedAt: z.string().nullable(),
  quarantineCandidate: z.boolean(),
  quarantined: z.boolean(),
  owners: z.array(z.string()),
  ...testStateFields,
  /** Over the board's window (`days`, else 30): on the dashboard's board, and on GET /v1/flaky with sort=impact. */
  impact: impactSchema.optional(),
}).meta({ id: 'FlakyTest' });

export const testDetailSchema = z.object({
  id: z.string(),
  fingerprint: z.string(),
  filePath: z.string(),
  suite: z.string(),
  title: z.string(),
  owners: z.array(z.string()),
  quarantined: z.boolean(),
  quarantineReason: z.string().nullable(),
  quarantineOverride: z.enum(['quarantined', 'released']).nullable(),
  quarantineOverrideAt: z.string().nullable(),
  score: z.number(),
  reasonCodes: z.array(reasonSchema),
  ...testStateFields,
  aliases: z.array(z.string()),
  stitches: z.array(
    z.object({
      level: z.enum(['L2', 'L3', 'manual']),
      fromFilePath: z.string(),
      fromTitle: z.string(),
      toFilePath: z.string(),
      toTitle: z.string(),
      confidence: z.number(),
      createdAt: z.string(),
    }),
  ),
  history: z.array(
    z.object({
      executionId: z.string(),
      runId: z.string(),
      commitSha: z.string(),
      branch: z.string(),
      startedAt: z.string(),
      status: z.string(),
      attempt: z.number(),
      durationMs: z.number(),
      errorMessage: z.string().nullable(),
      hasRca: z.boolean(),
      artifacts: z.array(artifactViewSchema),
    }),
  ),
}).meta({ id: 'TestDetail' });

export const testQuerySchema = z.object({ historyLimit: z.coerce.number().int().min(1).max(200).default(50) });
export const flakyBoardSchema = z.object({
  items: z.array(flakyItemSchema),
  /** Present when more rows match: pass it as `cursor` for the next page. */
  nextCursor: z.string().optional(),
});

/** A test without graded runs yet. */
export const NO_RECENT_RUNS = { runs: 0, failed: 0 } as const;

/** Rates and scores as the answers carry them: four decimals. */
export function round4(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

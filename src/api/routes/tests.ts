// Tests: GET /v1/tests/:id, GET /v1/flaky, POST /v1/tests/:id/quarantine, PUT /v1/codeowners
// (docs/contract.md §6, §7).
import { z } from 'zod';
import { UUID_RE } from '../../domain/ids.js';
import { ownerMatches } from '../../domain/codeowners.js';
import { effectiveQuarantine } from '../../domain/quarantine.js';
import { REASON_CODES, TEST_STATES, type StateSince } from '../../domain/score.js';
import { toIso } from '../../domain/time.js';
import type { Outbox } from '../../queue/types.js';
import type { CodeownersRepo } from '../../store/codeowners.js';
import type { BoardEntry, TestRepo } from '../../store/tests.js';
import { BOARD_SORTS, type BoardRow } from '../../store/board.js';
import type { BoardImpact } from '../../store/board-impact.js';
import type { IdentityRepo } from '../../store/identities.js';
import { artifactViewSchema, withArtifactLinks } from '../../artifacts/links.js';
import type { ArtifactSigner } from '../../artifacts/s3.js';
import { errors } from '../../errors.js';
import { quarantineTest } from '../../usecases/quarantine-decision.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1');
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

const testParams = z.object({ testIdentityId: z.string().regex(UUID_RE) });
export const testQuerySchema = z.object({ historyLimit: z.coerce.number().int().min(1).max(200).default(50) });
export const flakyBoardSchema = z.object({
  items: z.array(flakyItemSchema),
  /** Present when more rows match: pass it as `cursor` for the next page. */
  nextCursor: z.string().optional(),
});

function boardCursor(offset: number): string {
  return Buffer.from(`o:${offset}`).toString('base64url');
}

function boardOffset(query: { offset?: number; cursor?: string }): number {
  if (query.cursor === undefined) return query.offset ?? 0;
  const m = /^o:(\d{1,7})$/.exec(Buffer.from(query.cursor, 'base64url').toString('utf8'));
  if (!m) throw errors.invalidQuery([{ path: 'cursor', message: 'malformed cursor' }]);
  return Number(m[1]);
}

export interface TestRouteDeps {
  tests: TestRepo;
  identities: IdentityRepo;
  codeowners: CodeownersRepo;
  outbox: Pick<Outbox, 'append'>;
  /** Signs artifact download URLs on the test page; null or absent: refs are listed without URLs. */
  artifacts?: ArtifactSigner | null;
  /** The project's CI-minute rate and currency (its `cost` policy); absent: 0 USD. */
  cost?: (projectId: string) => Promise<{ ciMinute: number; currency: string }>;
}

/** Beyond this many file paths an owner owns, the owner filter runs on the rows read, not as a
 * SQL IN list (which travels in the query's URL to a ClickHouse server). */
export const OWNER_PATHS_IN_SQL = 5_000;

// Shared by the REST routes and the procedures (src/api/trpc.ts), so both answer alike.
export async function flakyBoard(
  d: Pick<TestRouteDeps, 'tests' | 'codeowners' | 'cost'>,
  projectId: string,
  query: z.output<typeof flakyQuerySchema>,
  /** impact: add each item's impact (the dashboard; REST only with sort=impact). */
  opts: { ownerPathsInSql?: number; impact?: boolean } = {},
): Promise<z.output<typeof flakyBoardSchema>> {
  const page = await flakyBoardRows(d, projectId, query, opts);
  if (!(opts.impact || query.sort === 'impact') || page.rows.length === 0) return page.body;
  // Impact of the page's tests only (read with the rows when sorted by it).
  const sinceMs = Date.now() - (query.days ?? IMPACT_DEFAULT_DAYS) * 86_400_000;
  const missing = page.rows.filter((r) => !r.impact).map((r) => r.testId);
  const [read, rates] = await Promise.all([
    missing.length > 0 ? d.tests.boardImpact(projectId, missing, sinceMs) : new Map<string, BoardImpact>(),
    d.cost ? d.cost(projectId) : { ciMinute: 0, currency: 'USD' },
  ]);
  return {
    ...page.body,
    items: page.body.items.map((item, n) => {
      const x = page.rows[n]!.impact ?? read.get(item.testIdentityId) ?? { failuresCaused: 0, prsBlocked: 0, lostMs: 0 };
      const minutesLost = x.lostMs / 60_000;
      return {
        ...item,
        impact: {
          failuresCaused: x.failuresCaused,
          prsBlocked: x.prsBlocked,
          minutesLost: Math.round(minutesLost * 100) / 100,
          cost: Math.round(minutesLost * rates.ciMinute * 100) / 100,
          currency: rates.currency,
        },
      };
    }),
  };
}

async function flakyBoardRows(
  d: Pick<TestRouteDeps, 'tests' | 'codeowners'>,
  projectId: string,
  query: z.output<typeof flakyQuerySchema>,
  opts: { ownerPathsInSql?: number },
): Promise<{ body: z.output<typeof flakyBoardSchema>; rows: BoardRow[] }> {
  const offset = boardOffset(query);
  const onlyQuarantined = query.quarantined === true;
  const noQuarantined = query.quarantined === false || !query.includeQuarantined;
  if (onlyQuarantined && noQuarantined) return { body: { items: [] }, rows: [] };
  const quarantined = onlyQuarantined ? true : noQuarantined ? false : undefined;
  const [owners, paths, defaultBranch] = await Promise.all([
    d.codeowners.resolver(projectId),
    query.owner === undefined ? undefined : d.tests.boardFilePaths(projectId),
    query.defaultBranch === true && query.branch === undefined ? d.tests.boardDefaultBranch(projectId) : undefined,
  ]);
  // No run yet: no default branch, so no test ran on it.
  if (defaultBranch === null) return { body: { items: [] }, rows: [] };
  const branch = query.branch ?? defaultBranch;
  const sinceMs = query.days === undefined ? undefined : Date.now() - query.days * 86_400_000;
  // The owner filter as the files the owner owns: CODEOWNERS is matched here, once per file.
  const owned = paths?.filter((p) => owners(p).some((x) => ownerMatches([x], query.owner!)));
  if (owned?.length === 0) return { body: { items: [] }, rows: [] };
  // Every filter in SQL pages there; an owner of very many files is filtered after a whole read.
  const inSql = owned === undefined || owned.length <= (opts.ownerPathsInSql ?? OWNER_PATHS_IN_SQL);
  const impactSinceMs = Date.now() - (query.days ?? IMPACT_DEFAULT_DAYS) * 86_400_000;
  const sql = { minScore: query.minScore, suite: query.suite, file: query.file, quarantined, state: query.state, attention: query.attention, branch, sinceMs, sort: query.sort, impactSinceMs, ...(inSql && owned ? { filePaths: owned } : {}) };
  const [{ rows }, overrides] = await Promise.all([
    d.tests.boardPage(projectId, inSql ? { ...sql, offset, limit: query.limit + 1 } : { ...sql, offset: 0, limit: null }),
    d.tests.overrides(projectId, null),
  ]);
  const items: z.infer<typeof flakyItemSchema>[] = [];
  const shown: BoardRow[] = [];
  let skip = inSql ? 0 : offset;
  for (const s of rows) {
    // Checked again on the rows read, as shown (SQL already applied both when inSql).
    const isQuarantined = effectiveQuarantine(s.auto, overrides.get(s.testId) ?? null).quarantined;
    if ((isQuarantined && noQuarantined) || (!isQuarantined && onlyQuarantined)) continue;
    const o = owners(s.filePath);
    if (query.owner !== undefined && !o.some((x) => ownerMatches([x], query.owner!))) continue;
    if (skip > 0) {
      skip--;
      continue;
    }
    items.push(flakyItem(s, isQuarantined, o));
    shown.push(s);
    if (items.length > query.limit) break;
  }
  const more = items.length > query.limit;
  const page = items.slice(0, query.limit);
  // The raw counts behind each shown test's flake rate (one bounded read of the page's models).
  const recent = await d.tests.recentRuns(projectId, page.map((i) => i.testIdentityId));
  for (const item of page) item.recentRuns = recent.get(item.testIdentityId) ?? NO_RECENT_RUNS;
  if (!more) return { body: { items: page }, rows: shown };
  return { body: { items: page, nextCursor: boardCursor(offset + query.limit) }, rows: shown.slice(0, query.limit) };
}

/** The test page; a malformed id is as unknown as another project's: 404. */
export async function testPage(
  d: Pick<TestRouteDeps, 'tests' | 'identities' | 'codeowners' | 'artifacts'>,
  projectId: string,
  testIdentityId: string,
  historyLimit: number,
): Promise<z.output<typeof testDetailSchema>> {
  if (!UUID_RE.test(testIdentityId)) throw errors.notFound('test not found');
  const testId = testIdentityId.toLowerCase();
  const identity = await d.identities.get(projectId, testId);
  if (!identity) throw errors.notFound('test not found');
  const [state, overrides, owners, aliases, stitches, history, recent] = await Promise.all([
    d.tests.pageState(projectId, testId),
    d.tests.overrides(projectId, [testId]),
    d.codeowners.resolver(projectId),
    // Only a moved or renamed identity has aliases and stitches: skip two reads for the rest.
    identity.stitched ? d.identities.aliases(projectId, testId) : Promise.resolve([]),
    identity.stitched ? d.identities.stitches(projectId, testId) : Promise.resolve([]),
    d.tests.history(projectId, testId, historyLimit),
    d.tests.recentRuns(projectId, [testId]),
  ]);
  const override = overrides.get(testId) ?? null;
  const eff = effectiveQuarantine(state?.auto ?? null, override);
  return {
    id: identity.id,
    fingerprint: identity.fingerprint,
    filePath: identity.filePath,
    suite: identity.suite,
    title: identity.title,
    owners: owners(identity.filePath),
    quarantined: eff.quarantined,
    quarantineReason: eff.reason,
    quarantineOverride: override?.override ?? null,
    quarantineOverrideAt: override?.override ? toIso(override.decidedAt) : null,
    score: state?.score ?? 0,
    reasonCodes: state?.reasons ?? [{ code: 'STABLE' as const, message: 'no executions scored yet' }],
    state: state?.state ?? 'new',
    stateSince: stateSinceBody(state?.stateSince ?? null),
    flakeRate: round(state?.flakeRate ?? 0),
    recentRuns: recent.get(testId) ?? NO_RECENT_RUNS,
    aliases,
    stitches,
    history: await withArtifactLinks(projectId, history, d.artifacts ?? null),
  };
}

export function testRoutes(d: TestRouteDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/flaky',
      summary: 'Scored tests, worst first',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['read'] },
      query: flakyQuerySchema,
      response: flakyBoardSchema,
      async handler({ query, principal }) {
        return flakyBoard(d, principal!.projectId, query);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/tests/:testIdentityId',
      summary: 'A test with its score, reason codes, stitch history and recent executions',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['read'] },
      params: testParams,
      paramsNotFound: true,
      query: testQuerySchema,
      response: testDetailSchema,
      async handler({ params, query, principal }) {
        return testPage(d, principal!.projectId, params.testIdentityId, query.historyLimit);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/tests/:testIdentityId/quarantine',
      summary: 'Quarantine, release, or hand a test back to the scorer',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['quarantine'] },
      params: testParams,
      paramsNotFound: true,
      body: z.object({ decision: z.enum(['quarantined', 'released', 'auto']), reason: z.string().max(200).optional() }),
      response: z.object({ quarantined: z.boolean(), override: z.enum(['quarantined', 'released']).nullable(), changed: z.boolean() }),
      handler: ({ params, body, principal }) => quarantineTest(d, principal!.projectId, params.testIdentityId, body.decision, body.reason),
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/codeowners',
      summary: 'Upload the CODEOWNERS file that attributes tests to owners',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['ingest'] },
      query: z.object({ allowEmpty: bool.default(false) }),
      body: z.object({ content: z.string().max(200_000) }),
      response: z.object({ ok: z.literal(true) }),
      async handler({ query, body, principal }) {
        const content = body.content.trim();
        if (content.length > 200_000) throw errors.invalidBody('content exceeds 200,000 characters');
        // An empty upload is far more often a failed read on the client (a missing file piped
        // through jq) than a wish to drop every owner, so clearing has to be asked for by name.
        if (content.length === 0 && !query.allowEmpty) {
          throw errors.invalidPayload(
            [{ path: 'content', message: 'is empty' }],
            "content is empty: storing it would remove every owner from this project's tests; to clear the owners on purpose, send it with ?allowEmpty=true",
          );
        }
        await d.codeowners.put(principal!.projectId, content);
        return { ok: true as const };
      },
    }),
  ];
}

function flakyItem(s: BoardEntry, quarantined: boolean, owners: string[]): z.infer<typeof flakyItemSchema> {
  return {
    testIdentityId: s.testId,
    filePath: s.filePath,
    suite: s.suite,
    title: s.title,
    score: round(s.score),
    flipRate: round(s.flipRate),
    passOnRerunRate: round(s.passOnRerunRate),
    trend: s.trend,
    lastFlakedAt: s.lastFlakedAt === null ? null : toIso(s.lastFlakedAt),
    quarantineCandidate: s.candidate,
    quarantined,
    owners,
    state: s.state,
    stateSince: stateSinceBody(s.stateSince),
    flakeRate: round(s.flakeRate),
    recentRuns: NO_RECENT_RUNS,
  };
}

const NO_RECENT_RUNS = { runs: 0, failed: 0 } as const;

function round(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}

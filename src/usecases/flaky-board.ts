// The flaky board (GET /v1/flaky, the `flaky.board` procedure): a page of scored tests with their
// filters, quarantine state, owners and raw run counts, and their impact when asked for.
import type { z } from 'zod';
import { ownerMatches } from '../domain/codeowners.js';
import { effectiveQuarantine } from '../domain/quarantine.js';
import { toIso } from '../../client/src/contract/time.js';
import type { CodeownersRepo } from '../store/codeowners.js';
import { recentRunsOf, type BoardEntry, type TestRepo } from '../store/tests.js';
import type { BoardRow } from '../store/board.js';
import type { BoardImpact } from '../store/board-impact.js';
import { errors } from '../errors/catalogue.js';
import { IMPACT_DEFAULT_DAYS, NO_RECENT_RUNS, round4, stateSinceBody, type flakyBoardSchema, type flakyItemSchema, type flakyQuerySchema } from './test-schemas.js';

export interface FlakyBoardDeps {
  tests: TestRepo;
  codeowners: CodeownersRepo;
  /** The project's CI-minute rate and currency (its `cost` policy); absent: 0 USD. */
  cost?: (projectId: string) => Promise<{ ciMinute: number; currency: string }>;
}

function boardCursor(offset: number): string {
  return Buffer.from(`o:${offset}`).toString('base64url');
}

function boardOffset(query: { offset?: number; cursor?: string }): number {
  if (query.cursor === undefined) return query.offset ?? 0;
  const m = /^o:(\d{1,7})$/.exec(Buffer.from(query.cursor, 'base64url').toString('utf8'));
  if (!m) throw errors.invalidQuery([{ path: 'cursor', message: 'malformed cursor' }]);
  return Number(m[1]);
}

/** Beyond this many file paths an owner owns, the owner filter runs on the rows read, not as a
 * SQL IN list (which travels in the query's URL to a ClickHouse server). */
export const OWNER_PATHS_IN_SQL = 5_000;

export async function flakyBoard(
  d: FlakyBoardDeps,
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
  d: Omit<FlakyBoardDeps, 'cost'>,
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
  // The raw counts behind each shown test's flake rate: from the rings read with a page's rows, else
  // one bounded read of the page's models.
  const shownPage = shown.slice(0, query.limit);
  if (shownPage.every((s) => s.ring !== undefined)) {
    page.forEach((item, n) => (item.recentRuns = recentRunsOf(shownPage[n]!.ring!)));
  } else {
    const recent = await d.tests.recentRuns(projectId, page.map((i) => i.testIdentityId));
    for (const item of page) item.recentRuns = recent.get(item.testIdentityId) ?? NO_RECENT_RUNS;
  }
  if (!more) return { body: { items: page }, rows: shown };
  return { body: { items: page, nextCursor: boardCursor(offset + query.limit) }, rows: shown.slice(0, query.limit) };
}

function flakyItem(s: BoardEntry, quarantined: boolean, owners: string[]): z.infer<typeof flakyItemSchema> {
  return {
    testIdentityId: s.testId,
    filePath: s.filePath,
    suite: s.suite,
    title: s.title,
    score: round4(s.score),
    flipRate: round4(s.flipRate),
    passOnRerunRate: round4(s.passOnRerunRate),
    trend: s.trend,
    lastFlakedAt: s.lastFlakedAt === null ? null : toIso(s.lastFlakedAt),
    quarantineCandidate: s.candidate,
    quarantined,
    owners,
    state: s.state,
    stateSince: stateSinceBody(s.stateSince),
    flakeRate: round4(s.flakeRate),
    recentRuns: NO_RECENT_RUNS,
  };
}

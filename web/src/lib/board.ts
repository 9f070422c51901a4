// The flaky board's URL ↔ procedure input and its CSV, pure: tested in test/unit/dashboard-web.test.ts.
import type { Inputs, Outputs } from '../api.js';

type BoardInput = Exclude<Inputs['flaky']['board'], void | undefined>;
export type BoardRow = Outputs['flaky']['board']['items'][number];

export const PAGE_SIZE = 50;
export const SORTS = [
  ['score', 'Score'],
  ['flipRate', 'Flip rate'],
  ['passOnRerunRate', 'Pass on rerun'],
  ['lastSeen', 'Last seen'],
  ['title', 'Title'],
  ['impact', 'Impact (CI minutes lost)'],
] as const;
type Sort = (typeof SORTS)[number][0];
/** The board's state filter: value and label. */
export const STATE_FILTERS = [
  ['flaky', 'Flaky'],
  ['broken', 'Broken'],
  ['fixed', 'Fixed'],
  ['new', 'New'],
  ['healthy', 'Healthy'],
] as const;

/** `state=all` in the URL: every test; no `state`: only those that need attention (the default view). */
export const ALL_STATES = 'all';
/** `branch=@default` in the URL: the project's default branch (the one its PRs target). */
export const DEFAULT_BRANCH = '@default';
/** The board's time ranges: the URL's `range` and the days it covers. */
export const RANGES = [
  ['7d', 7, 'Last 7 days'],
  ['14d', 14, 'Last 14 days'],
  ['30d', 30, 'Last 30 days'],
] as const;

/** The board's filters as the URL carries them. */
export function boardInput(q: URLSearchParams, page: number, limit = PAGE_SIZE): BoardInput {
  const input: BoardInput = { limit, offset: page * limit };
  const text = (k: 'owner' | 'suite' | 'file') => {
    const v = q.get(k)?.trim();
    if (v) input[k] = v;
  };
  text('owner');
  text('suite');
  text('file');
  const min = q.get('minScore');
  if (min !== null && min !== '' && Number.isFinite(Number(min))) input.minScore = Number(min);
  const quarantined = q.get('quarantined');
  if (quarantined === 'true' || quarantined === 'false') input.quarantined = quarantined === 'true';
  const sort = q.get('sort');
  if (sort && SORTS.some(([s]) => s === sort)) input.sort = sort as Sort;
  const state = q.get('state');
  const known = STATE_FILTERS.find(([s]) => s === state);
  if (known) input.state = known[0];
  // The default view: what needs attention (flaky, broken or quarantined); `state=all` shows every test.
  else if (state !== ALL_STATES) input.attention = true;
  const branch = q.get('branch')?.trim();
  if (branch === DEFAULT_BRANCH) input.defaultBranch = true;
  else if (branch) input.branch = branch;
  const range = RANGES.find(([r]) => r === q.get('range'));
  if (range) input.days = range[1];
  return input;
}

/** The CSV's columns: the row's own fields, then its state's (stateSince flattened into three), then its impact's. */
type CsvColumn = [name: string, cell: (r: BoardRow) => unknown];
const FIELDS = ['testIdentityId', 'title', 'suite', 'filePath', 'score', 'trend', 'passOnRerunRate', 'flipRate', 'owners', 'lastFlakedAt', 'quarantined', 'quarantineCandidate', 'state'] as const;
const CSV_COLUMNS: readonly CsvColumn[] = [
  ...FIELDS.map((k): CsvColumn => [k, (r) => r[k]]),
  ['stateSinceCommit', (r) => r.stateSince?.commitSha],
  ['stateSinceBranch', (r) => r.stateSince?.branch],
  ['stateSinceAt', (r) => r.stateSince?.at],
  ['flakeRate', (r) => r.flakeRate],
  ['failuresCaused', (r) => r.impact?.failuresCaused],
  ['prsBlocked', (r) => r.impact?.prsBlocked],
  ['ciMinutesLost', (r) => r.impact?.minutesLost],
  ['cost', (r) => r.impact?.cost],
  ['currency', (r) => r.impact?.currency],
  // The raw counts behind flakeRate (its last graded runs, those with a failed attempt).
  ['recentRuns', (r) => r.recentRuns.runs],
  ['recentRunsFailed', (r) => r.recentRuns.failed],
];

function csvCell(v: unknown): string {
  const s = Array.isArray(v) ? v.join(' ') : typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
  // Quote always; a leading = + - @ would be a formula in a spreadsheet, except owner handles
  // (`@team @user`), which no spreadsheet evaluates and people want to read as they are.
  const handles = /^@[\w./-]+( @[\w./-]+)*$/.test(s);
  const safe = /^[=+\-@\t\r]/.test(s) && !handles ? `'${s}` : s;
  return `"${safe.replace(/"/g, '""')}"`;
}

export function boardCsv(rows: BoardRow[]): string {
  const lines = [CSV_COLUMNS.map(([name]) => name).join(',')];
  for (const r of rows) lines.push(CSV_COLUMNS.map(([, cell]) => csvCell(cell(r))).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

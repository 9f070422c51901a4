// `flakehouse flaky [--state S] [--limit N] [--sort S] [--json]`: the board in the terminal, read
// from GET /v1/flaky (what the dashboard's board reads) with SERVICE_TOKEN (read scope) at
// SERVICE_ENDPOINT. Also the board client `flakehouse quarantine` resolves test names through.
// Only what a CI client carries is imported here: no server module (src/api, src/store).
import { parseArgs } from 'node:util';
import { loadReporterSettings } from '../reporter/settings.js';
import type { CliIo } from './io.js';
import { INSUFFICIENT_SCOPE, scopeNamedIn } from '../contract/error-codes.js';
import { readRefusal } from './refusal.js';
import { UsageError } from './usage-error.js';

export const FLAKY_USAGE =
  'usage: flakehouse flaky [--state flaky|broken|quarantined|new|fixed|healthy|all] [--limit N] [--sort score|flipRate|passOnRerunRate|lastSeen|title] [--file TEXT] [--owner OWNER] [--json]';

/** The server's test states (src/domain/score.ts TEST_STATES), plus the two the CLI adds. */
const STATES = ['flaky', 'broken', 'quarantined', 'new', 'fixed', 'healthy', 'all'] as const;
type StateFilter = (typeof STATES)[number];
/** The board's sorts (src/store/board.ts BOARD_SORTS); `score` is the dashboard's default. */
const SORTS = ['score', 'flipRate', 'passOnRerunRate', 'lastSeen', 'title'] as const;
/** GET /v1/flaky answers at most this many rows a page. */
const PAGE_MAX = 500;
const REQUEST_TIMEOUT_MS = 30_000;

/** One row of GET /v1/flaky (the FlakyTest schema in src/api/routes/tests.ts), the fields used here. */
export interface BoardItem {
  testIdentityId: string;
  filePath: string;
  suite: string;
  title: string;
  score: number;
  flakeRate: number;
  flipRate: number;
  passOnRerunRate: number;
  lastFlakedAt: string | null;
  quarantined: boolean;
  quarantineCandidate: boolean;
  state: string;
  owners: string[];
}

/** The server refused a call: its catalogue code and message, as one line (main prints it, exit 1). */
export class ServiceRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A project-token call to the server: the endpoint and token of the reporter's settings. */
export class ServiceApi {
  constructor(
    readonly endpoint: string,
    private readonly token: string,
    /** The command, for messages: `flaky: …`. */
    private readonly command: string,
    /** The scope the command needs, named when the server refuses the token for lacking it. */
    private readonly scope: string,
  ) {}

  static fromEnv(env: NodeJS.ProcessEnv, cwd: string, command: string, scope: string): ServiceApi {
    const settings = loadReporterSettings({ env, cwd });
    if (!settings.token) throw new UsageError(`${command}: set SERVICE_TOKEN to a project token with the ${scope} scope (\`flakehouse token create --project SLUG --scopes ${scope}\`)`);
    return new ServiceApi(settings.endpoint, settings.token, command, scope);
  }

  /** The JSON answer of a 2xx; anything else is thrown as the server's catalogue error, one line. */
  async call(method: 'GET' | 'POST', urlPath: string, body?: unknown): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${this.endpoint}${urlPath}`, {
        method,
        headers: { authorization: `Bearer ${this.token}`, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new Error(`${this.command}: cannot reach Flakehouse at ${this.endpoint}: ${causeOf(err)}. Is \`flakehouse serve\` running, and SERVICE_ENDPOINT right?`);
    }
    if (!res.ok) {
      const r = await readRefusal(res);
      // Something else at that address (a proxy) may echo the Authorization header back.
      const message = r.message.split(this.token).join('[token]').slice(0, 300);
      const detail = `${r.status} ${r.code}${message ? `: ${message}` : ''}`;
      if (r.status === 401) throw new ServiceRefusal(r.status, r.code, `${this.command}: the server refused SERVICE_TOKEN (${detail})`);
      if (r.status === 403 && r.code === INSUFFICIENT_SCOPE) {
        // The server names the scope it wanted (`this token lacks the "read" scope`).
        const scope = scopeNamedIn(r.message) ?? this.scope;
        throw new ServiceRefusal(r.status, r.code, `${this.command}: SERVICE_TOKEN lacks the ${scope} scope (${detail}); create one with \`flakehouse token create --project SLUG --scopes ${scope}\``);
      }
      throw new ServiceRefusal(r.status, r.code, `${this.command}: Flakehouse answered ${method} ${urlPath.split('?')[0]} with ${detail}`);
    }
    const text = await res.text();
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new Error(`${this.command}: Flakehouse sent a non-JSON answer to ${method} ${urlPath.split('?')[0]} (is SERVICE_ENDPOINT a Flakehouse server?)`);
    }
  }

  /** One page of the board. */
  async board(query: Record<string, string | undefined>): Promise<{ items: BoardItem[]; nextCursor?: string }> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, v);
    const json = await this.call('GET', `/v1/flaky?${q.toString()}`);
    const page = json as { items?: unknown; nextCursor?: unknown };
    if (!page || !Array.isArray(page.items) || !page.items.every(isBoardItem)) {
      throw new Error(`${this.command}: Flakehouse sent an unexpected answer to GET /v1/flaky (is the server older than this CLI?)`);
    }
    return { items: page.items, ...(typeof page.nextCursor === 'string' ? { nextCursor: page.nextCursor } : {}) };
  }
}

function isBoardItem(v: unknown): v is BoardItem {
  const o = v as Record<string, unknown>;
  return (
    o !== null &&
    typeof o === 'object' &&
    typeof o.testIdentityId === 'string' &&
    typeof o.filePath === 'string' &&
    typeof o.suite === 'string' &&
    typeof o.title === 'string' &&
    typeof o.score === 'number' &&
    typeof o.quarantined === 'boolean' &&
    typeof o.state === 'string'
  );
}

export function causeOf(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return cause ?? (err instanceof Error ? err.message : String(err));
}

/** The board query for a --state filter: `quarantined` and `all` are not server states. */
export function stateQuery(state: StateFilter): Record<string, string | undefined> {
  if (state === 'all') return {};
  if (state === 'quarantined') return { quarantined: 'true' };
  return { state };
}

export async function flakyCommand(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  let values: { state?: string; limit?: string; sort?: string; file?: string; owner?: string; json?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { state: { type: 'string' }, limit: { type: 'string', short: 'n' }, sort: { type: 'string' }, file: { type: 'string' }, owner: { type: 'string' }, json: { type: 'boolean' } },
      strict: true,
    }));
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${FLAKY_USAGE}`);
  }
  const state = (values.state ?? 'flaky') as StateFilter;
  if (!STATES.includes(state)) throw new UsageError(`flaky: --state: expected one of ${STATES.join(', ')}, got "${values.state}"`);
  const sort = values.sort ?? 'score';
  if (!(SORTS as readonly string[]).includes(sort)) throw new UsageError(`flaky: --sort: expected one of ${SORTS.join(', ')}, got "${sort}"`);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!/^\d+$/.test(values.limit ?? '50') || limit < 1 || limit > 5000) throw new UsageError(`flaky: --limit: expected a whole number from 1 to 5000, got "${values.limit}"`);

  const api = ServiceApi.fromEnv(env, cwd, 'flaky', 'read');
  const items: BoardItem[] = [];
  let cursor: string | undefined;
  let more = false;
  do {
    const page = await api.board({ ...stateQuery(state), sort, file: values.file, owner: values.owner, limit: String(Math.min(PAGE_MAX, limit - items.length)), cursor });
    items.push(...page.items);
    cursor = page.nextCursor;
    more = cursor !== undefined;
  } while (more && items.length < limit);

  if (values.json) {
    io.stdout.write(`${JSON.stringify({ state, sort, items, more }, null, 2)}\n`);
    return 0;
  }
  if (items.length === 0) {
    io.stdout.write(`${emptyLine(state, values.file !== undefined || values.owner !== undefined)}\n`);
    return 0;
  }
  const width = terminalWidth(io, env);
  io.stdout.write(boardTable(items, width, Date.now()));
  const shown = `${items.length} ${items.length === 1 ? 'test' : 'tests'}`;
  io.stdout.write(more ? `${shown} shown; more match (--limit ${Math.min(limit * 2, 5000)} shows more)\n` : `${shown}\n`);
  return 0;
}

function emptyLine(state: StateFilter, filtered: boolean): string {
  const also = filtered ? ' matching these filters' : '';
  switch (state) {
    case 'all':
      return `No scored tests in this project${also} yet: nothing has been reported (flakehouse report) or processed.`;
    case 'quarantined':
      return `No quarantined tests in this project${also}.`;
    default:
      return `No ${state} tests in this project${also}.`;
  }
}

/** The terminal's width when stdout is one (or $COLUMNS); undefined (no truncation) when piped. */
function terminalWidth(io: CliIo, env: NodeJS.ProcessEnv): number | undefined {
  const out = io.stdout as { isTTY?: boolean; columns?: number };
  if (out.isTTY && typeof out.columns === 'number' && out.columns > 0) return out.columns;
  const cols = Number(env.COLUMNS);
  return Number.isInteger(cols) && cols > 0 ? cols : undefined;
}

const HEADERS = ['TEST', 'STATE', 'SCORE', 'FLAKE RATE', 'LAST FLAKED', 'QUARANTINED'] as const;
/** The test column never shrinks below this, however narrow the terminal. */
const MIN_TEST_WIDTH = 24;

/**
 * The board as an aligned table, in the server's order (the dashboard's). The test column
 * (`file › title`) takes what the others leave of `width`, cut in the middle with `…` so both
 * the file and the end of the title stay readable; no width: nothing is cut.
 */
export function boardTable(items: BoardItem[], width: number | undefined, now: number): string {
  const rows = items.map((i) => [
    testName(i),
    i.state,
    i.score.toFixed(2),
    percent(i.flakeRate),
    i.lastFlakedAt ? ago(Date.parse(i.lastFlakedAt), now) : '-',
    i.quarantined ? 'yes' : i.quarantineCandidate ? 'candidate' : 'no',
  ]);
  const widths = HEADERS.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  if (width !== undefined) {
    const others = widths.slice(1).reduce((a, w) => a + w + 2, 0);
    widths[0] = Math.min(widths[0]!, Math.max(MIN_TEST_WIDTH, width - others));
  }
  const numeric = new Set([2, 3]);
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, c) => {
        const text = c === 0 ? cutMiddle(cell, widths[0]!) : cell;
        return numeric.has(c) ? text.padStart(widths[c]!) : text.padEnd(widths[c]!);
      })
      .join('  ')
      .trimEnd();
  return `${[line(HEADERS), ...rows.map(line)].join('\n')}\n`;
}

export function testName(i: Pick<BoardItem, 'filePath' | 'title'>): string {
  return `${i.filePath} › ${i.title}`;
}

function cutMiddle(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  const head = Math.ceil((width - 1) / 2);
  const tail = width - 1 - head;
  return `${chars.slice(0, head).join('')}…${tail > 0 ? chars.slice(-tail).join('') : ''}`;
}

function percent(rate: number): string {
  const p = rate * 100;
  return `${p === 0 || p >= 10 ? p.toFixed(0) : p.toFixed(1)}%`;
}

/** `5m ago`, `3h ago`, `2d ago`; a date in the future (clock skew) is `just now`. */
function ago(at: number, now: number): string {
  if (!Number.isFinite(at)) return '-';
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  if (s < 60 * 86_400) return `${Math.floor(s / 86_400)}d ago`;
  return new Date(at).toISOString().slice(0, 10);
}

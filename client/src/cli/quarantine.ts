// `flakehouse quarantine <test> --reason "…" | --release | --auto`: a person's quarantine decision,
// through POST /v1/tests/:id/quarantine (SERVICE_TOKEN with the quarantine scope). `<test>` is a
// test id, a title, or `file::title`; names are looked up on the board (GET /v1/flaky, read scope).
// A name that fits several tests quarantines none: the candidates are listed and the exit is 2.
import { parseArgs } from 'node:util';
import type { CliIo } from './io.js';
import { ServiceApi, ServiceRefusal, testName, type BoardItem } from './flaky.js';
import { UsageError } from './usage-error.js';

export const QUARANTINE_USAGE = 'usage: flakehouse quarantine <test id | title | file::title> --reason "…" | --release | --auto [--json]';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Board pages read while looking a name up (500 tests each): past that, ask for the id. */
const MAX_LOOKUP_PAGES = 40;
const PAGE = 500;
/** Candidates listed for an ambiguous name. */
const MAX_CANDIDATES = 20;

type Decision = 'quarantined' | 'released' | 'auto';

interface Found {
  id: string;
  filePath: string;
  title: string;
}

/** The name fits several tests (or none): nothing was changed. Exit 2, like a usage error. */
class NotOneTest extends Error {}

export async function quarantineCommand(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: { reason: { type: 'string' }, release: { type: 'boolean' }, auto: { type: 'boolean' }, json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${QUARANTINE_USAGE}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1 || positionals[0]!.trim() === '') {
    throw new UsageError(`quarantine: name one test (its id, its title, or file::title; quote a title with spaces)\n${QUARANTINE_USAGE}`);
  }
  const target = positionals[0]!.trim();
  const reason = values.reason?.trim();
  if (values.release && values.auto) throw new UsageError(`quarantine: --release and --auto are two different decisions: pass one\n${QUARANTINE_USAGE}`);
  if (values.auto && values.reason !== undefined) throw new UsageError('quarantine: --auto hands the test back to the scorer, which keeps its own reason: drop --reason');
  const decision: Decision = values.release ? 'released' : values.auto ? 'auto' : 'quarantined';
  if (decision === 'quarantined' && !reason) {
    throw new UsageError(`quarantine: say why with --reason "…" (shown on the board and in notifications), or pass --release or --auto\n${QUARANTINE_USAGE}`);
  }
  if (reason !== undefined && reason.length > 200) throw new UsageError(`quarantine: --reason is ${reason.length} characters; at most 200`);

  const api = ServiceApi.fromEnv(env, cwd, 'quarantine', 'quarantine');
  let test: Found;
  try {
    test = await resolveTest(api, target);
  } catch (err) {
    if (err instanceof NotOneTest) {
      io.stderr.write(`flakehouse: quarantine: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const res = (await api.call('POST', `/v1/tests/${encodeURIComponent(test.id)}/quarantine`, { decision, ...(reason ? { reason } : {}) })) as {
    quarantined?: unknown;
    override?: unknown;
    changed?: unknown;
  };
  if (typeof res?.quarantined !== 'boolean') throw new Error('quarantine: Flakehouse sent an unexpected answer (is the server older than this CLI?)');
  const result = { testIdentityId: test.id, filePath: test.filePath, title: test.title, decision, quarantined: res.quarantined, override: res.override ?? null, changed: res.changed === true };
  if (values.json) {
    io.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  }
  const name = testName(test);
  const now = result.quarantined ? 'quarantined' : 'not quarantined';
  const unchanged = result.changed ? '' : ' (unchanged: it was already so)';
  if (decision === 'quarantined') io.stdout.write(`${name}: quarantined by hand, reason "${reason}"${unchanged}\n`);
  else if (decision === 'released') io.stdout.write(`${name}: released by hand; not quarantined, and automatic quarantine leaves it alone until \`flakehouse quarantine … --auto\`${unchanged}\n`);
  else io.stdout.write(`${name}: handed back to automatic quarantine; ${now} for now, until the scorer decides on its next run${unchanged}\n`);
  io.stdout.write(`  id ${test.id}\n`);
  return 0;
}

/** The one test `target` names: an id as given (checked), else the board's tests of that name. */
async function resolveTest(api: ServiceApi, target: string): Promise<Found> {
  if (UUID_RE.test(target)) {
    // An id is taken as it is; the test page gives its name (404: no such test in this project).
    const id = target.toLowerCase();
    let page: { filePath?: unknown; title?: unknown };
    try {
      page = (await api.call('GET', `/v1/tests/${id}?historyLimit=1`)) as typeof page;
    } catch (err) {
      if (err instanceof ServiceRefusal && err.status === 404) throw new NotOneTest(`no test with id ${id} in this project`);
      throw err;
    }
    return { id, filePath: typeof page.filePath === 'string' ? page.filePath : '', title: typeof page.title === 'string' ? page.title : '' };
  }
  const sep = target.indexOf('::');
  const file = sep >= 0 ? target.slice(0, sep).trim() : undefined;
  const title = sep >= 0 ? target.slice(sep + 2).trim() : target;
  if (file === '' || title === '') throw new NotOneTest(`"${target}": expected file::title with both parts`);

  const all = await boardTests(api, file);
  const inFile = file === undefined ? all : all.filter((t) => t.filePath === file || t.filePath.endsWith(`/${file}`));
  // Exact title first; a unique part of a title (any case) only when no title is exactly it.
  let matches = inFile.filter((t) => t.title === title);
  if (matches.length === 0) {
    const lower = title.toLowerCase();
    matches = inFile.filter((t) => t.title.toLowerCase().includes(lower));
  }
  if (matches.length === 1) return { id: matches[0]!.testIdentityId, filePath: matches[0]!.filePath, title: matches[0]!.title };
  if (matches.length === 0) {
    throw new NotOneTest(`no test in this project is named "${target}" (looked at ${all.length} scored tests${file !== undefined ? ` in files matching "${file}"` : ''}; \`flakehouse flaky --state all\` lists them)`);
  }
  const listed = matches.slice(0, MAX_CANDIDATES).map((t) => `  ${t.testIdentityId}  ${testName(t)}${t.suite ? `  (suite ${t.suite})` : ''}  ${t.state}${t.quarantined ? ', quarantined' : ''}`);
  const rest = matches.length > MAX_CANDIDATES ? `\n  … and ${matches.length - MAX_CANDIDATES} more` : '';
  throw new NotOneTest(`"${target}" names ${matches.length} tests; nothing was changed. Pass the id, or file::title:\n${listed.join('\n')}${rest}`);
}

/** Every test on the board (all states, quarantined or not), narrowed by file when one is given. */
async function boardTests(api: ServiceApi, file: string | undefined): Promise<BoardItem[]> {
  const items: BoardItem[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LOOKUP_PAGES; page++) {
    const res = await api.board({ minScore: '0', includeQuarantined: 'true', sort: 'title', limit: String(PAGE), file, cursor });
    items.push(...res.items);
    cursor = res.nextCursor;
    if (cursor === undefined) return items;
  }
  throw new NotOneTest(`the project has over ${MAX_LOOKUP_PAGES * PAGE} scored tests${file !== undefined ? ` in files matching "${file}"` : ''}: name the test by its id (the dashboard's test page, or \`flakehouse flaky --json\`)`);
}

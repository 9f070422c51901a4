// The flaky board's owner and quarantine filters run in SQL (store/board.ts): every kind of
// quarantine decision and a CODEOWNERS file with an owner-less rule, and each filtered answer (and
// its pages) must be exactly the unfiltered board's rows that show that owner / that state. The
// same answers when an owner's files are too many for SQL and the filter runs on the rows read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flakyBoard } from '../../src/usecases/flaky-board.js';
import { flakyQuerySchema } from '../../src/usecases/test-schemas.js';
import { ownerMatches } from '../../src/domain/codeowners.js';
import { CodeownersRepo } from '../../src/store/codeowners.js';
import { TestRepo } from '../../src/store/tests.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const T0 = Date.parse('2026-11-12T08:00:00Z');
/** Title → file; `flaky` ones fail and pass on a retry in every run (auto-quarantined). */
const TESTS: [string, string][] = [
  ['card flaky', 'src/pay/card.test.ts'],
  ['card ok', 'src/pay/card.test.ts'],
  ['refund flaky', 'src/pay/refund.test.ts'],
  ['refund ok', 'src/pay/refund.test.ts'],
  ['query flaky', 'src/search/query.test.ts'],
  ['query ok', 'src/search/query.test.ts'],
  ['readme ok', 'docs/readme.test.ts'],
  ['util flaky', 'lib/util.test.ts'],
  ['util ok', 'lib/util.test.ts'],
];
/** Stable tests beside them, so that a run is mostly green (a run where many fail is an outage, no evidence). */
const FILLERS = 24;
const CODEOWNERS = '*.test.ts @org/qa\n/src/pay/ @org/payments @Alice\n/src/search/ @bob\n/docs/\n';

function run(r: number): Record<string, unknown> {
  const at = T0 + r * 3_600_000;
  const executions: Record<string, unknown>[] = [];
  TESTS.forEach(([title, filePath], k) => {
    const base = { filePath, suite: filePath.split('/')[1], title, startedAt: at + k * 10, durationMs: 7 };
    if (title.endsWith('flaky')) {
      executions.push({ ...base, status: 'fail', error: { message: `${title}: expected 1 to be 2` } });
      executions.push({ ...base, status: 'pass', attempt: 2, retryOfIndex: executions.length - 1, startedAt: at + k * 10 + 1 });
    } else executions.push({ ...base, status: 'pass' });
  });
  for (let k = 0; k < FILLERS; k++) executions.push({ filePath: 'lib/filler.test.ts', suite: 'lib', title: `filler ${k}`, status: 'pass', startedAt: at + 500 + k, durationMs: 3 });
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `board-filters-${r}`,
    resource: { ciProvider: 'local', commitSha: `${'b'.repeat(33)}${String(r).padStart(7, '0')}`, branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: at },
    executions,
  };
}

interface Item {
  testIdentityId: string;
  title: string;
  quarantined: boolean;
  owners: string[];
}

describe('flaky board filters in SQL', () => {
  let td: TestDaemon;
  let projectId: string;
  const ids = new Map<string, string>();

  const board = async (query: string): Promise<{ items: Item[]; nextCursor?: string }> => {
    const res = await td.request('GET', `/v1/flaky?${query}`);
    expect(res.status).toBe(200);
    return res.json;
  };
  const decide = async (title: string, ...decisions: ('quarantined' | 'released' | 'auto')[]): Promise<void> => {
    for (const decision of decisions) {
      expect((await td.request('POST', `/v1/tests/${ids.get(title)}/quarantine`, { body: { decision, reason: 'filters test' } })).status).toBe(200);
    }
  };

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_QUARANTINE_ENABLED: 'true', SERVICE_FLAKY_MIN_SAMPLES: '3' } });
    expect((await td.request('PUT', '/v1/codeowners', { body: { content: CODEOWNERS } })).status).toBe(200);
    await td.ingest(...Array.from({ length: 6 }, (_, i) => run(i + 1)));
    for (const item of (await board('limit=500')).items) ids.set(item.title, item.testIdentityId);
    projectId = (await td.daemon.store.query<{ id: string }>(`SELECT id FROM ${td.daemon.store.table('projects')} WHERE slug = 'default'`))[0]!.id;
    // Decisions the scorer has seen since (run 7): `auto` after a quarantine / a release.
    await decide('card ok', 'quarantined', 'auto');
    await decide('util ok', 'released', 'auto');
    await td.ingest(run(7));
    // Decisions newer than the last scoring.
    await decide('card flaky', 'released');
    await decide('refund ok', 'quarantined');
    await decide('refund flaky', 'quarantined', 'auto');
    await decide('query ok', 'quarantined', 'auto');
    await decide('query flaky', 'released', 'auto');
  }, 120_000);

  afterAll(async () => td?.close());

  it('the decisions give the quarantine states the domain rules say', async () => {
    const all = (await board('limit=500')).items;
    expect(all).toHaveLength(TESTS.length + FILLERS);
    const quarantined = all.filter((i) => i.quarantined).map((i) => i.title).sort();
    expect(quarantined).toEqual(['card ok', 'query ok', 'refund flaky', 'refund ok', 'util flaky']);
    const owners = Object.fromEntries(all.map((i) => [i.title, i.owners]));
    expect(owners).toMatchObject({ 'card ok': ['@org/payments', '@Alice'], 'query ok': ['@bob'], 'readme ok': [], 'util ok': ['@org/qa'] });
  });

  it('every owner × quarantine × sort filter answers exactly the matching rows of the whole board, page by page too', async () => {
    const owners = [undefined, '@org/payments', 'alice', '@BOB', 'org/qa', '@nobody'];
    const states = [undefined, 'true', 'false'];
    const tests = new TestRepo(td.daemon.store);
    const codeowners = new CodeownersRepo(td.daemon.store);
    let nonEmpty = 0;
    for (const sort of ['score', 'title']) {
      const all = (await board(`limit=500&sort=${sort}`)).items;
      for (const owner of owners) {
        for (const quarantined of states) {
          const search = new URLSearchParams({ sort });
          if (owner) search.set('owner', owner);
          if (quarantined) search.set('quarantined', quarantined);
          const params = search.toString();
          const expected = all.filter((i) => (owner === undefined || ownerMatches(i.owners, owner)) && (quarantined === undefined || String(i.quarantined) === quarantined));
          if (expected.length > 0) nonEmpty++;
          const whole = await board(`${params}&limit=500`);
          expect(whole.items, params).toEqual(expected);
          // Pages of 4 by cursor: every row once, in the same order.
          const paged: Item[] = [];
          let cursor: string | undefined;
          for (let i = 0; i < 20; i++) {
            const page = await board(`${params}&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
            paged.push(...page.items);
            cursor = page.nextCursor;
            if (!cursor) break;
          }
          expect(paged, `${params} paged`).toEqual(expected);
          // An owner of more files than go into SQL: filtered on the rows read, the same answer.
          if (owner !== undefined) {
            const query = flakyQuerySchema.parse({ ...Object.fromEntries(search), limit: 2, offset: 1 });
            expect(await flakyBoard({ tests, codeowners }, projectId, query, { ownerPathsInSql: 0 }), `${params} after read`).toEqual(
              await board(`${params}&limit=2&offset=1`),
            );
          }
        }
      }
    }
    expect(nonEmpty).toBeGreaterThan(20);
    // Some 200 board reads, each sort=score one ranking ties by impact: 9 s on a quiet machine, 30 s
    // with the other core busy (a generous ceiling, not a time the test measures).
  }, 120_000);

  it('includeQuarantined=false leaves out what quarantined=true shows', async () => {
    const without = (await board('limit=500&includeQuarantined=false')).items.map((i) => i.title).sort();
    expect(without.filter((t) => !t.startsWith('filler'))).toEqual(['card flaky', 'query flaky', 'readme ok', 'util ok']);
    expect(without).toHaveLength(4 + FILLERS);
    expect((await board('includeQuarantined=false&quarantined=true')).items).toEqual([]);
  });

  it('state=… keeps the tests in that state: the same rows as filtering the whole board by its state column, in REST and the procedure', async () => {
    const whole = (await td.request('GET', '/v1/flaky?limit=500')).json.items as (Item & { state: string })[];
    const flakyTitles = whole.filter((i) => i.state === 'flaky').map((i) => i.title).sort();
    expect(flakyTitles).toEqual(['card flaky', 'query flaky', 'refund flaky', 'util flaky']);
    const viaRest = (await td.request('GET', '/v1/flaky?limit=500&state=flaky')).json.items as Item[];
    expect(viaRest.map((i) => i.title).sort()).toEqual(flakyTitles);
    const viaProcedure = await td.request('GET', `/trpc/flaky.board?input=${encodeURIComponent(JSON.stringify({ state: 'flaky', limit: 500 }))}`);
    expect((viaProcedure.json.result.data.items as Item[]).map((i) => i.title).sort()).toEqual(flakyTitles);
    expect((await td.request('GET', '/v1/flaky?limit=500&state=healthy')).json.items).toHaveLength(whole.length - flakyTitles.length);
    expect((await td.request('GET', '/v1/flaky?state=broken')).json.items).toEqual([]);
    const bad = await td.request('GET', '/v1/flaky?state=sideways');
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ error: 'invalid_query', issues: [{ path: 'state' }] });
  });
});

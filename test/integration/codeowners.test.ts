// PUT /v1/codeowners attributes tests to owners: shown on the board and the test page, filterable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

describe('CODEOWNERS', () => {
  let td: TestDaemon;
  const ids = new Map<string, string>();

  beforeAll(async () => {
    td = await startTestDaemon();
    // Two flaky tests (fail then pass on retry, every run) in files owned by different teams.
    for (let r = 0; r < 8; r++) {
      const at = Date.parse('2026-11-10T10:00:00Z') + r * 3_600_000;
      const executions = ['src/payments/card.test.ts', 'src/search/query.test.ts'].flatMap((filePath, k) => [
        { filePath, suite: 's', title: 't', status: 'fail', startedAt: at + k * 10, durationMs: 5, error: { message: 'flaky' } },
        { filePath, suite: 's', title: 't', status: 'pass', attempt: 2, retryOfIndex: k * 2, startedAt: at + k * 10 + 1, durationMs: 5 },
      ]);
      const body = { contractVersion: '0.1.0', idempotencyKey: `owners-run-${r}`, resource: { ciProvider: 'local', commitSha: `abc${r}def`, branch: 'main', trigger: 'push' }, run: { status: 'passed', startedAt: at }, executions };
      expect((await td.request('POST', '/v1/ingest', { body })).status).toBe(202);
    }
    await td.waitFor(async () => td.daemon.queue.depth() === 0 && (await td.request('GET', '/v1/runs?limit=100')).json.items.length === 8);
    const run = (await td.request('GET', '/v1/runs?limit=1')).json.items[0];
    for (const e of (await td.request('GET', `/v1/runs/${run.id}`)).json.executions) ids.set(e.filePath, e.testIdentityId);
  }, 60_000);
  afterAll(async () => td?.close());

  it('stores the file and shows owners on the board and the test page; last matching rule wins', async () => {
    const content = '# owners\n*.test.ts @org/qa\n/src/payments/ @org/payments\n/src/search/ @alice @bob\n';
    const put = await td.request('PUT', '/v1/codeowners', { body: { content: `\n  ${content}  \n` } });
    expect(put.status).toBe(200);
    expect(put.json).toEqual({ ok: true });
    const board = await td.request('GET', '/v1/flaky');
    const owners = Object.fromEntries(board.json.items.map((i: { filePath: string; owners: string[] }) => [i.filePath, i.owners]));
    expect(owners).toEqual({ 'src/payments/card.test.ts': ['@org/payments'], 'src/search/query.test.ts': ['@alice', '@bob'] });
    const test = await td.request('GET', `/v1/tests/${ids.get('src/payments/card.test.ts')}`);
    expect(test.json.owners).toEqual(['@org/payments']);
  });

  it('filters the board by owner, with or without @, case-insensitively', async () => {
    const byTeam = await td.request('GET', '/v1/flaky?owner=org/PAYMENTS');
    expect(byTeam.json.items.map((i: { filePath: string }) => i.filePath)).toEqual(['src/payments/card.test.ts']);
    const byPerson = await td.request('GET', '/v1/flaky?owner=@bob');
    expect(byPerson.json.items.map((i: { filePath: string }) => i.filePath)).toEqual(['src/search/query.test.ts']);
    expect((await td.request('GET', '/v1/flaky?owner=@nobody')).json.items).toEqual([]);
  });

  it('empty content is refused unless ?allowEmpty=true, so a failed file read cannot wipe the owners', async () => {
    for (const content of ['', '  \n ']) {
      const refused = await td.request('PUT', '/v1/codeowners', { body: { content } });
      expect(refused.status).toBe(400);
      expect(refused.json.error).toBe('invalid_payload');
      expect(refused.json.message).toContain('?allowEmpty=true');
      expect(refused.json.issues).toEqual([{ path: 'content', message: expect.stringContaining('empty') }]);
    }
    // The owners are still there.
    expect((await td.request('GET', '/v1/flaky?owner=@bob')).json.items).toHaveLength(1);
    expect((await td.request('PUT', '/v1/codeowners?allowEmpty=false', { body: { content: '' } })).status).toBe(400);
  });

  it('an empty file with ?allowEmpty=true clears ownership; over 200,000 characters is refused; the ingest scope is required', async () => {
    const cleared = await td.request('PUT', '/v1/codeowners?allowEmpty=true', { body: { content: '   ' } });
    expect(cleared.status).toBe(200);
    expect(cleared.json).toEqual({ ok: true });
    const board = await td.request('GET', '/v1/flaky');
    expect(board.json.items.length).toBeGreaterThan(0);
    expect(board.json.items.every((i: { owners: string[] }) => i.owners.length === 0)).toBe(true);
    const big = await td.request('PUT', '/v1/codeowners', { body: { content: 'x'.repeat(200_001) } });
    expect(big.status).toBe(400);
    expect(big.json.error).toBe('invalid_payload');
    const readOnly = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    expect((await td.request('PUT', '/v1/codeowners', { token: readOnly.json.token, body: { content: '* @x' } })).status).toBe(403);
  });
});

// `flakehouse flaky`, `flakehouse quarantine` and `flakehouse --version` against a real daemon: a
// short history makes one test flaky (it fails its first attempt every other run and passes on the
// retry), one broken, and gives two files a test of the same title. The board and the version run
// as real processes (bin/flakehouse.js); the quarantine decisions in this process (same main()).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { REPO_ROOT, runCli, runCliProcess, type CliResult } from '../helpers/process.js';

const HOUR = 3_600_000;
const FLAKY = { filePath: 'src/checkout.test.ts', title: 'applies the coupon' };
const BROKEN = { filePath: 'src/config.test.ts', title: 'loads the config' };
const TWINS = ['src/cart/a.test.ts', 'src/cart/b.test.ts'];
const TWIN_TITLE = 'renders the cart';

type Exec = { filePath: string; suite: string; title: string; status: 'pass' | 'fail'; startedAt: number; durationMs: number; attempt?: number; retryOfIndex?: number; error?: { message: string } };

function run(r: number, at: number, flake: boolean): Record<string, unknown> {
  const e = (t: { filePath: string; title: string }, status: 'pass' | 'fail', i: number, extra: Partial<Exec> = {}): Exec => ({
    filePath: t.filePath,
    suite: 'shop',
    title: t.title,
    status,
    startedAt: at + i,
    durationMs: 15,
    ...(status === 'fail' ? { error: { message: `${t.title}: expected 1 to be 2` } } : {}),
    ...extra,
  });
  const executions: Exec[] = [
    e({ filePath: 'src/math.test.ts', title: 'adds numbers' }, 'pass', 0),
    ...TWINS.map((filePath, i) => e({ filePath, title: TWIN_TITLE }, 'pass', 1 + i)),
    e(BROKEN, r >= 6 ? 'fail' : 'pass', 3),
  ];
  if (flake) executions.push(e(FLAKY, 'fail', 4), e(FLAKY, 'pass', 5, { attempt: 2, retryOfIndex: executions.length }));
  else executions.push(e(FLAKY, 'pass', 4));
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `cli-flaky-${r}`,
    resource: { ciProvider: 'github_actions', commitSha: (0xc0ffee0 + r).toString(16), branch: 'main', trigger: 'push' },
    run: { status: r >= 6 ? 'failed' : 'passed', startedAt: at },
    executions,
  };
}

describe('flakehouse flaky, quarantine, --version', () => {
  let td: TestDaemon;
  const ids = new Map<string, string>();
  const T0 = Date.now() - 24 * HOUR;

  const env = (extra: Record<string, string> = {}): Record<string, string> => ({ SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token, ...extra });
  const cli = (args: string[], extra: Record<string, string> = {}): Promise<CliResult> => runCli(args, { cwd: td.dataDir, env: env(extra) });
  const test = async (id: string): Promise<{ quarantined: boolean; quarantineOverride: string | null; quarantineReason: string | null }> => {
    const res = await td.request('GET', `/v1/tests/${id}?historyLimit=1`);
    expect(res.status).toBe(200);
    return res.json;
  };

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_QUARANTINE_ENABLED: 'true' } });
    await td.ingest(...Array.from({ length: 12 }, (_, r) => run(r, T0 + r * HOUR, r % 2 === 1)));
    const board = await td.request('GET', '/v1/flaky?limit=50&sort=title');
    for (const i of board.json.items) ids.set(`${i.filePath}::${i.title}`, i.testIdentityId);
    expect(ids.size).toBe(5);
  }, 60_000);

  afterAll(async () => td?.close());

  it('lists the flaky test as a table sized to the terminal, in a real process; --state and --json filter like the board', async () => {
    const out = await runCliProcess(['flaky'], { cwd: td.dataDir, env: env({ COLUMNS: '100' }) });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const lines = out.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TEST\s+STATE\s+SCORE\s+FLAKE RATE\s+LAST FLAKED\s+QUARANTINED$/);
    // Only the flaky test: not the broken one, not the stable ones.
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^src\/checkout\.test\.ts › applies the coupon\s+flaky\s+[01]\.\d\d\s+\d+(\.\d)?%\s+\S+ ago\s+yes$/);
    expect(lines[2]).toBe('1 test');
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(100);

    // A narrow terminal cuts the test column in the middle, never the other columns.
    const narrow = await cli(['flaky'], { COLUMNS: '70' });
    const row = narrow.stdout.split('\n')[1]!;
    expect(row.length).toBeLessThanOrEqual(70);
    expect(row).toMatch(/^src\/checkout… the coupon +flaky /);
    expect(row).toMatch(/\byes$/);

    const broken = await cli(['flaky', '--state', 'broken', '--json']);
    expect(broken.code).toBe(0);
    const json = JSON.parse(broken.stdout);
    expect(json.items.map((i: { title: string; state: string }) => [i.title, i.state])).toEqual([[BROKEN.title, 'broken']]);

    const all = await cli(['flaky', '--state', 'all', '--sort', 'title', '--limit', '2', '--json']);
    expect(JSON.parse(all.stdout)).toMatchObject({ more: true, items: [{ title: 'adds numbers' }, { title: 'applies the coupon' }] });
    const quarantined = await cli(['flaky', '--state', 'quarantined']);
    expect(quarantined.stdout).toContain('applies the coupon');
  });

  it('says so in one line when nothing matches, exit 0; bad flags exit 2; server refusals exit 1 with the catalogue message', async () => {
    const none = await cli(['flaky', '--state', 'fixed']);
    expect(none).toMatchObject({ code: 0, stdout: 'No fixed tests in this project.\n' });
    expect((await cli(['flaky', '--state', 'sideways'])).code).toBe(2);
    expect((await cli(['flaky', '--limit', '0'])).code).toBe(2);
    const noToken = await runCli(['flaky'], { cwd: td.dataDir, env: { SERVICE_ENDPOINT: td.url } });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('SERVICE_TOKEN');
    const refused = await cli(['flaky'], { SERVICE_TOKEN: `fh_${'0'.repeat(48)}` });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^flakehouse: flaky: the server refused SERVICE_TOKEN \(401 unauthorized/);
    // A token that may read the board but not decide quarantine: the server's insufficient_scope.
    const created = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    expect(created.status).toBe(201);
    const readOnly = await cli(['quarantine', FLAKY.title, '--reason', 'x'], { SERVICE_TOKEN: created.json.token });
    expect(readOnly.code).toBe(1);
    expect(readOnly.stderr).toContain('403 insufficient_scope');
    expect(readOnly.stderr).toContain('--scopes quarantine');
    expect((await test(ids.get(`${FLAKY.filePath}::${FLAKY.title}`)!)).quarantineOverride).toBeNull();
    const down = await cli(['flaky'], { SERVICE_ENDPOINT: 'http://127.0.0.1:9' });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach Flakehouse at http://127.0.0.1:9');
  });

  it('quarantines by title with a reason, releases, and hands back to automatic quarantine', async () => {
    const id = ids.get(`${FLAKY.filePath}::${FLAKY.title}`)!;
    // Automatic quarantine took it first (SERVICE_QUARANTINE_ENABLED).
    expect(await test(id)).toMatchObject({ quarantined: true, quarantineOverride: null, quarantineReason: expect.stringMatching(/^auto/) });

    const q = await cli(['quarantine', FLAKY.title, '--reason', 'payment sandbox is flaky, JIRA-12']);
    expect(q.stderr).toBe('');
    expect(q.code).toBe(0);
    expect(q.stdout).toContain('src/checkout.test.ts › applies the coupon: quarantined by hand, reason "payment sandbox is flaky, JIRA-12"');
    expect(q.stdout).toContain(id);
    expect(await test(id)).toMatchObject({ quarantined: true, quarantineOverride: 'quarantined', quarantineReason: 'payment sandbox is flaky, JIRA-12' });

    const rel = await cli(['quarantine', `${FLAKY.filePath}::${FLAKY.title}`, '--release', '--json']);
    expect(rel.code).toBe(0);
    expect(JSON.parse(rel.stdout)).toMatchObject({ testIdentityId: id, decision: 'released', quarantined: false, override: 'released', changed: true });
    expect(await test(id)).toMatchObject({ quarantined: false, quarantineOverride: 'released' });
    // The board says so too.
    expect((await cli(['flaky', '--json'])).stdout).toContain('"quarantined": false');

    // --auto by id: the released state holds until the scorer's next run, which quarantines it
    // again on new flaky evidence.
    const auto = await cli(['quarantine', id, '--auto']);
    expect(auto.code).toBe(0);
    expect(auto.stdout).toContain('handed back to automatic quarantine; not quarantined for now');
    expect(await test(id)).toMatchObject({ quarantined: false, quarantineOverride: null });
    await td.ingest(run(12, Date.now(), true));
    await td.waitFor(async () => (await test(id)).quarantined, 30_000);
    expect((await test(id)).quarantineReason).toMatch(/^auto/);
  });

  it('refuses an ambiguous title with the candidates and exit 2, changing nothing; file::title picks one', async () => {
    const amb = await cli(['quarantine', TWIN_TITLE, '--reason', 'slow renderer']);
    expect(amb.code).toBe(2);
    expect(amb.stdout).toBe('');
    expect(amb.stderr).toContain(`"${TWIN_TITLE}" names 2 tests; nothing was changed`);
    for (const file of TWINS) {
      expect(amb.stderr).toContain(ids.get(`${file}::${TWIN_TITLE}`)!);
      expect(amb.stderr).toContain(`${file} › ${TWIN_TITLE}`);
      expect((await test(ids.get(`${file}::${TWIN_TITLE}`)!)).quarantineOverride).toBeNull();
    }
    const one = await cli(['quarantine', `${TWINS[1]}::${TWIN_TITLE}`, '--reason', 'slow renderer']);
    expect(one.code).toBe(0);
    expect(await test(ids.get(`${TWINS[1]}::${TWIN_TITLE}`)!)).toMatchObject({ quarantined: true, quarantineOverride: 'quarantined' });
    expect((await test(ids.get(`${TWINS[0]}::${TWIN_TITLE}`)!)).quarantineOverride).toBeNull();

    const unknown = await cli(['quarantine', 'no such test', '--release']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no test in this project is named "no such test"');
    expect((await cli(['quarantine', FLAKY.title])).code).toBe(2); // no --reason
    expect((await cli(['quarantine', FLAKY.title, '--release', '--auto'])).code).toBe(2);
    const missing = await cli(['quarantine', '00000000-0000-4000-8000-000000000000', '--release']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no test with id 00000000-0000-4000-8000-000000000000');
  });

  it('--version and -v print the package version', async () => {
    const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(await runCliProcess(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    expect(await runCli(['-v'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

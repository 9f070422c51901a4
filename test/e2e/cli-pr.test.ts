// `flakehouse summary | comment | gate | badge` against a real daemon, with a local HTTP server
// playing GitHub's REST API (issue comments, paginated with Link headers). The commands run
// in-process (test/helpers/process.ts); the GitHub Action's steps run as written, through bash and npx.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseSvg } from '../helpers/svg.js';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { REPO_ROOT, runCli, type CliResult } from '../helpers/process.js';

const HOUR = 3_600_000;
const GH_TOKEN = 'ghs_test_token';
const sha = (): string => randomBytes(20).toString('hex');

interface Received {
  method: string;
  path: string;
  body: any;
}

/** GitHub's issue-comment endpoints, in memory; `acme/locked` answers 403 as a fork's token would. */
class GithubPeer {
  readonly received: Received[] = [];
  readonly comments = new Map<string, { id: number; body: string; html_url: string }[]>();
  private nextId = 1000;
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(({ status, json, headers }) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(json === undefined ? '' : JSON.stringify(json));
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    await new Promise((r) => this.server.close(r));
  }

  seed(repo: string, pr: number, n: number): void {
    const list = this.thread(repo, pr);
    for (let i = 0; i < n; i++) list.push({ id: this.nextId++, body: `unrelated comment ${i}`, html_url: `https://github.test/${repo}/pull/${pr}#c${i}` });
  }

  thread(repo: string, pr: number): { id: number; body: string; html_url: string }[] {
    const key = `${repo}#${pr}`;
    if (!this.comments.has(key)) this.comments.set(key, []);
    return this.comments.get(key)!;
  }

  writes(): Received[] {
    return this.received.filter((r) => r.method !== 'GET');
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; json?: unknown; headers?: Record<string, string> }> {
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    const url = new URL(req.url ?? '/', this.url);
    this.received.push({ method: req.method ?? '', path: url.pathname + url.search, body: raw ? JSON.parse(raw) : undefined });
    if (req.headers.authorization !== `Bearer ${GH_TOKEN}`) return { status: 401, json: { message: 'Bad credentials' } };
    if (req.headers.accept !== 'application/vnd.github+json') return { status: 415, json: { message: 'expected the GitHub media type' } };
    let m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(url.pathname);
    if (m?.[1] === 'acme/locked') return { status: 403, json: { message: 'Resource not accessible by integration' } };
    if (m && req.method === 'GET') {
      const list = this.thread(m[1]!, Number(m[2]));
      const perPage = Number(url.searchParams.get('per_page') ?? 30);
      const page = Number(url.searchParams.get('page') ?? 1);
      const items = list.slice((page - 1) * perPage, page * perPage);
      const headers: Record<string, string> = {};
      if (page * perPage < list.length) headers.link = `<${this.url}${url.pathname}?per_page=${perPage}&page=${page + 1}>; rel="next", <${this.url}${url.pathname}?per_page=${perPage}&page=${Math.ceil(list.length / perPage)}>; rel="last"`;
      return { status: 200, json: items, headers };
    }
    if (m && req.method === 'POST') {
      const c = { id: this.nextId++, body: String(JSON.parse(raw).body), html_url: `https://github.test/${m[1]}/pull/${m[2]}#new` };
      this.thread(m[1]!, Number(m[2])).push(c);
      return { status: 201, json: c };
    }
    m = /^\/repos\/([^/]+\/[^/]+)\/issues\/comments\/(\d+)$/.exec(url.pathname);
    if (m && req.method === 'PATCH') {
      const id = Number(m[2]);
      for (const list of this.comments.values()) {
        const c = list.find((x) => x.id === id);
        if (c) {
          c.body = String(JSON.parse(raw).body);
          return { status: 200, json: c };
        }
      }
      return { status: 404, json: { message: 'Not Found' } };
    }
    return { status: 404, json: { message: 'Not Found' } };
  }
}

describe('flakehouse summary, comment, gate, badge', () => {
  let td: TestDaemon;
  const gh = new GithubPeer();
  const work = mkdtempSync(path.join(tmpdir(), 'fh-e2e-pr-'));
  const eventFile = path.join(work, 'event.json');
  const stepSummary = path.join(work, 'step-summary.md');
  const prCommit = sha(); // `alpha` fails (new), `known` fails (flaky on main)
  const knownOnly = sha(); // only `known` fails

  /** The real CLI process; only PATH is inherited, so the outer CI's variables do not leak in. */
  function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
    return runCli(args, { cwd: work, env: { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token, ...env } });
  }

  /** What GitHub Actions gives a pull_request job (head commit only in the event payload). */
  function actionsEnv(extra: Record<string, string> = {}): Record<string, string> {
    return {
      GITHUB_ACTIONS: 'true',
      GITHUB_EVENT_NAME: 'pull_request',
      GITHUB_EVENT_PATH: eventFile,
      GITHUB_REPOSITORY: 'acme/shop',
      GITHUB_SHA: sha(), // the synthetic merge commit: not what was reported
      GITHUB_REF: 'refs/pull/7/merge',
      GITHUB_HEAD_REF: 'feature/x',
      GITHUB_BASE_REF: 'main',
      GITHUB_API_URL: gh.url,
      ...extra,
    };
  }

  function run(commitSha: string, at: number, spec: Record<string, 'pass' | 'fail'>, resource: object): Record<string, unknown> {
    const executions = Object.entries(spec).map(([title, status], i) => ({
      filePath: 'src/shop.test.ts',
      suite: 'shop',
      title,
      status,
      startedAt: at + i * 10,
      durationMs: 12,
      ...(status === 'fail' ? { error: { message: `${title}: expected 200, got 500` } } : {}),
    }));
    const failed = Object.values(spec).includes('fail');
    return nativeBatch({ resource: { commitSha, branch: 'main', trigger: 'push', ...resource }, run: { status: failed ? 'failed' : 'passed', startedAt: new Date(at).toISOString() }, executions });
  }

  const pr = { branch: 'feature/x', baseBranch: 'main', prNumber: 7, trigger: 'pull_request', repository: 'acme/shop' };

  beforeAll(async () => {
    td = await startTestDaemon();
    await gh.start();
    writeFileSync(eventFile, JSON.stringify({ pull_request: { number: 7, head: { sha: prCommit, ref: 'feature/x' }, base: { ref: 'main' } }, repository: { full_name: 'acme/shop' } }));
    // Main's last nine days: `known` failed four times, each between passes (an established flake:
    // two such failures would not prove one to the gate), `alpha` and `beta` always passed.
    const outcomes: ('pass' | 'fail')[] = ['pass', 'fail', 'pass', 'fail', 'pass', 'fail', 'pass', 'fail', 'pass'];
    await td.ingest(...outcomes.map((o, i) => run(sha(), Date.now() - (9 - i) * 24 * HOUR, { alpha: 'pass', beta: 'pass', known: o }, {})));
    // The second PR commit does not run `alpha`: a pass after its failure would already make it look flaky.
    await td.ingest(run(prCommit, Date.now() - 2 * HOUR, { alpha: 'fail', beta: 'pass', known: 'fail' }, pr), run(knownOnly, Date.now() - HOUR, { beta: 'pass', known: 'fail' }, pr));
  }, 120_000);

  afterAll(async () => {
    await gh.stop();
    await td?.close();
    rmSync(work, { recursive: true, force: true });
  });

  describe('gate', () => {
    it('exits 1 on a new failure, with the per-test classification, and writes the job summary', async () => {
      const r = await cli(['gate', '--base', 'main'], actionsEnv({ GITHUB_STEP_SUMMARY: stepSummary }));
      expect(r.code).toBe(1);
      expect(r.stdout).toContain('Flakehouse gate: BLOCKED — 1 new failure, 1 known flake');
      expect(r.stdout).toContain(`commit ${prCommit.slice(0, 12)}`);
      expect(r.stdout).toMatch(/NEW FAILURE\s+shop › alpha\s+\(src\/shop\.test\.ts\)\s+fail · score 0\.[0-4]\d · 0 of 9 runs failed on main/);
      expect(r.stdout).toMatch(/known flake\s+shop › known .* 4 of 9 runs failed on main/);
      expect(r.stdout).toContain('alpha: expected 200, got 500');
      expect(readFileSync(stepSummary, 'utf8')).toMatch(/^<!-- service:pr-gate -->\n<!-- flakemetry:pr-gate -->\n### 🚫 Flakehouse gate: blocked/);

      const json = await cli(['gate', '--json', '--commit', prCommit]);
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout)).toMatchObject({ verdict: 'block', newFailures: 1, knownFlakes: 1, baseBranch: 'main' });

      const off = await cli(['gate', '--strictness', 'off', '--commit', prCommit]);
      expect(off.code).toBe(0);
      expect(off.stdout).toContain('Flakehouse gate: passed');
    }, 180_000);

    it('exits 0 when the only failure is a known flake', async () => {
      const r = await cli(['gate', '--base', 'main', '--commit', knownOnly]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Flakehouse gate: passed — 1 known flake');
      expect(r.stdout).toMatch(/known flake\s+shop › known/);
      // strictness any blocks on any failure that is not quarantined.
      expect((await cli(['gate', '--strictness', 'any', '--commit', knownOnly])).code).toBe(1);
    }, 180_000);

    it('does not break CI when Flakehouse is down, unless --strict; bad flags exit 2', async () => {
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
      const down = `http://127.0.0.1:${(closed.address() as { port: number }).port}`;
      await new Promise((r) => closed.close(r));

      const r = await cli(['gate', '--commit', prCommit], { SERVICE_ENDPOINT: down });
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`cannot reach Flakehouse at ${down}`);
      expect(r.stderr).toContain('--strict');
      const inActions = await cli(['gate', '--commit', prCommit], { ...actionsEnv(), SERVICE_ENDPOINT: down });
      expect(inActions.code).toBe(0);
      expect(inActions.stderr).toMatch(/^::warning title=Flakehouse::the gate could not be checked/m);
      expect((await cli(['gate', '--strict', '--commit', prCommit], { SERVICE_ENDPOINT: down })).code).toBe(1);

      const noResults = await cli(['gate', '--commit', sha()]);
      expect(noResults.code).toBe(0);
      expect(noResults.stderr).toContain('no test results for commit');

      const bad = await cli(['gate', '--strictness', 'paranoid', '--commit', prCommit]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--strictness: expected one of off, new, any, got "paranoid"');
      expect((await cli(['gate', '--bogus'])).code).toBe(2);
    }, 180_000);
  });

  describe('summary', () => {
    it('prints the PR comment: totals, new failures apart from known flakes with scores, links to the dashboard', async () => {
      const r = await cli(['summary'], actionsEnv({ SERVICE_DASHBOARD_URL: 'https://flakes.example/' }));
      expect(r.code).toBe(0);
      const md = r.stdout;
      expect(md.startsWith('<!-- service:pr-comment -->\n<!-- flakemetry:pr-comment -->\n### ❌ Flakehouse: 1 new failure, 1 known flake of 3 tests\n')).toBe(true);
      expect(md).toContain(`Commit [\`${prCommit.slice(0, 12)}\`](https://flakes.example/projects/default/runs?commitSha=${prCommit}) on \`feature/x\` → \`main\``);
      expect(md).toContain('2 failed, 0 flaky');
      expect(md).toContain('gate 🚫 **blocks the merge** (strictness `new`)');

      const newSection = md.slice(md.indexOf('#### 🆕 New failures (1)'), md.indexOf('#### 🔁 Known flaky (1)'));
      expect(newSection).toMatch(/\| \[shop › alpha\]\(https:\/\/flakes\.example\/projects\/default\/tests\/[0-9a-f-]{36}\) \| `src\/shop\.test\.ts` \| `alpha: expected 200, got 500` \|/);
      expect(newSection).not.toContain('shop › known');
      const knownSection = md.slice(md.indexOf('#### 🔁 Known flaky (1)'));
      expect(knownSection).toMatch(/\| \[shop › known\]\([^)]+\) \| failed \| \d\.\d\d \| .* \| 4 of 9 runs failed \| `known: expected 200, got 500` \|/);
      expect(md).toContain('[Flaky board](https://flakes.example/projects/default/flaky)');

      // --json carries the same numbers.
      const json = JSON.parse((await cli(['summary', '--json', '--commit', prCommit])).stdout);
      expect(json.summary).toMatchObject({ commitSha: prCommit, failed: 2, flaky: 0, totalTests: 3 });
      expect(json.gate.verdict).toBe('block');
    }, 180_000);

    it('says so when the commit has no results, without failing', async () => {
      const r = await cli(['summary', '--commit', sha()]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('no test results for commit');
      expect((await cli(['summary', '--strict', '--commit', sha()])).code).toBe(1);
    }, 180_000);
  });

  describe('comment', () => {
    it('explains and exits 0 without a token or outside a pull request, touching nothing', async () => {
      const before = gh.received.length;
      const noToken = await cli(['comment'], actionsEnv());
      expect(noToken.code).toBe(0);
      expect(noToken.stdout).toContain('GITHUB_TOKEN is not set');
      const push = await cli(['comment'], actionsEnv({ GITHUB_TOKEN: GH_TOKEN, GITHUB_EVENT_NAME: 'push', GITHUB_EVENT_PATH: path.join(work, 'missing.json'), GITHUB_REF: 'refs/heads/main', GITHUB_HEAD_REF: '' }));
      expect(push.code).toBe(0);
      expect(push.stdout).toContain('not a pull request build');
      expect(gh.received.length).toBe(before);
    }, 180_000);

    it('creates one sticky comment, then updates that same comment (found past the first page)', async () => {
      gh.seed('acme/shop', 7, 120);
      const env = actionsEnv({ GITHUB_TOKEN: GH_TOKEN });

      const first = await cli(['comment'], env);
      expect(first.code).toBe(0);
      expect(first.stdout).toContain('created comment on acme/shop#7');
      const posts = gh.writes();
      expect(posts.map((w) => `${w.method} ${w.path}`)).toEqual(['POST /repos/acme/shop/issues/7/comments']);
      const firstBody: string = posts[0]!.body.body;
      // Exactly what `summary` prints for the same commit.
      expect(firstBody).toBe((await cli(['summary'], actionsEnv())).stdout);
      expect(firstBody).toContain('1 new failure, 1 known flake of 3 tests');
      const created = gh.thread('acme/shop', 7).at(-1)!;

      // A rerun of the PR commit: alpha passes this time. It is flaky now, but on this change's own
      // evidence (its first flake is this PR's re-run), which excuses nothing: still a new failure.
      await td.ingest(run(prCommit, Date.now() - HOUR / 2, { alpha: 'pass', beta: 'pass', known: 'fail' }, pr));
      const second = await cli(['comment'], env);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain('updated comment on acme/shop#7');
      const writes = gh.writes();
      expect(writes.map((w) => `${w.method} ${w.path}`)).toEqual(['POST /repos/acme/shop/issues/7/comments', `PATCH /repos/acme/shop/issues/comments/${created.id}`]);
      const secondBody: string = writes[1]!.body.body;
      expect(secondBody).toContain('<!-- service:pr-comment -->');
      expect(secondBody).toContain('❌ Flakehouse: 1 new failure, 1 known flake of 3 tests');
      const newSection = secondBody.slice(secondBody.indexOf('#### 🆕 New failures (1)'), secondBody.indexOf('#### 🔁 Known flaky (1)'));
      expect(newSection).toContain('| shop › alpha |');
      expect(secondBody).not.toBe(firstBody);
      // The marker comment sat on page 2 (121st): both pages were read.
      const lists = gh.received.filter((r) => r.method === 'GET').slice(-2).map((r) => r.path);
      expect(lists).toEqual(['/repos/acme/shop/issues/7/comments?per_page=100', '/repos/acme/shop/issues/7/comments?per_page=100&page=2']);
      expect(gh.thread('acme/shop', 7).filter((c) => c.body.includes('<!-- service:pr-comment -->'))).toHaveLength(1);
      expect(created.body).toBe(secondBody);

      // Nothing changed since: no write at all.
      const third = await cli(['comment'], env);
      expect(third.code).toBe(0);
      expect(third.stdout).toContain('comment already up to date');
      expect(gh.writes()).toHaveLength(2);
    }, 240_000);

    it('warns and exits 0 when GitHub refuses (fork tokens), 1 with --strict', async () => {
      const env = actionsEnv({ GITHUB_TOKEN: GH_TOKEN });
      const r = await cli(['comment', '--repo', 'acme/locked'], env);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('GitHub answered 403');
      expect(r.stderr).toContain('pull-requests: write');
      expect((await cli(['comment', '--repo', 'acme/locked', '--strict'], env)).code).toBe(1);
      const badToken = await cli(['comment', '--strict'], actionsEnv({ GITHUB_TOKEN: 'wrong' }));
      expect(badToken.code).toBe(1);
      expect(badToken.stderr).toContain('GitHub answered 401');
    }, 180_000);
  });

  describe('outside CI', () => {
    it('summary and gate use the commit the last `report` in this repository sent; without one, say what to pass', async () => {
      const bufferDir = path.join(work, 'local-buffer');
      const repo = path.join(work, 'local-repo');
      mkdirSync(path.join(repo, '.git'), { recursive: true });
      mkdirSync(path.join(repo, 'packages/web'), { recursive: true });
      const junit = path.join(repo, 'junit.xml');
      writeFileSync(junit, '<testsuite name="local"><testcase classname="local" name="works" file="src/local.test.ts" time="0.01"/></testsuite>');
      const local = { SERVICE_BUFFER_DIR: bufferDir };
      const inRepo = (args: string[], env: Record<string, string>, cwd = repo): Promise<CliResult> => runCli(args, { cwd, env: { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token, ...env } });

      const before = await inRepo(['summary'], local);
      expect(before.code).toBe(2);
      expect(before.stderr).toContain('no `flakehouse report` has run in this repository');
      expect(before.stderr).toContain('pass --commit SHA');
      expect(before.stderr).toContain('set SERVICE_COMMIT_SHA');

      // A report without a commit lands on the placeholder: summary refuses to guess from it.
      expect((await inRepo(['report', junit], local)).code).toBe(0);
      const placeholder = await inRepo(['gate'], local);
      expect(placeholder.code).toBe(2);
      expect(placeholder.stderr).toContain('placeholder 0000000');
      expect(placeholder.stderr).toContain('SERVICE_COMMIT_SHA');

      const commit = sha();
      const reported = await inRepo(['report', junit], { ...local, SERVICE_COMMIT_SHA: commit, SERVICE_BRANCH: 'feature/local' });
      expect(reported.code, reported.stderr).toBe(0);
      // From a subdirectory of the same repository, with no commit in the environment.
      const gated = await inRepo(['gate'], local, path.join(repo, 'packages/web'));
      expect(gated.code, gated.stderr).toBe(0);
      expect(gated.stderr).toContain(`commit ${commit.slice(0, 12)} on feature/local, from the last \`flakehouse report\` here`);
      expect(gated.stdout).toContain('Flakehouse gate: passed');
      expect(gated.stdout).toContain(`commit ${commit.slice(0, 12)}`);
      const summary = await inRepo(['summary', '--json'], local);
      expect(summary.code, summary.stderr).toBe(0);
      expect(JSON.parse(summary.stdout).summary).toMatchObject({ commitSha: commit, branch: 'feature/local' });

      // Another repository on the same machine does not inherit it.
      const other = path.join(work, 'other-repo');
      mkdirSync(path.join(other, '.git'), { recursive: true });
      expect((await inRepo(['summary'], local, other)).code).toBe(2);
    }, 180_000);
  });

  describe('badge', () => {
    it('prints README markdown whose URLs serve valid SVG badges', async () => {
      const r = await cli(['badge'], { SERVICE_PUBLIC_API_URL: td.url });
      expect(r.code).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines).toHaveLength(4);
      const labels = ['test health', 'flaky tests', 'quarantined tests', 'flakiest test'];
      for (const [i, line] of lines.entries()) {
        const m = /^!\[([^\]]+)\]\((http:\/\/[^)]+\/badge\/[0-9a-f]{32}\/(\w+)\.svg)\)$/.exec(line);
        expect(m, line).not.toBeNull();
        expect(m![1]).toBe(labels[i]);
        const res = await fetch(m![2]!);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
        const svg = parseSvg(await res.text());
        expect(svg.root).toBe('svg');
        expect(svg.text).toContain(`${labels[i]}: `);
        expect(svg.text).not.toContain('unknown');
      }

      const one = await cli(['badge', '--variant', 'flakes'], { SERVICE_PUBLIC_API_URL: 'https://flakes.example/api/', SERVICE_DASHBOARD_URL: 'https://flakes.example' });
      expect(one.stdout).toMatch(/^\[!\[flaky tests\]\(https:\/\/flakes\.example\/api\/badge\/[0-9a-f]{32}\/flakes\.svg\)\]\(https:\/\/flakes\.example\/projects\/default\/flaky\)\n$/);
      const noPublic = await cli(['badge', '--variant', 'flakes']);
      expect(noPublic.stdout).toContain(`${td.url}/badge/`);
      expect(noPublic.stderr).toContain('SERVICE_PUBLIC_API_URL is not set');
      expect((await cli(['badge', '--variant', 'coverage'])).code).toBe(2);

      // Another server at that address (an object store) echoes the Authorization header in its
      // error: the CLI quotes the error, never the token.
      const echo = createServer((req, res) => {
        res.writeHead(400, { 'content-type': 'application/xml' });
        res.end(`<Error><Code>InvalidArgument</Code><ArgumentValue>${req.headers.authorization}</ArgumentValue></Error>`);
      });
      await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
      try {
        const wrong = await cli(['badge'], { SERVICE_ENDPOINT: `http://127.0.0.1:${(echo.address() as { port: number }).port}` });
        expect(wrong.stderr).toContain('answered 400');
        expect(wrong.stderr).toContain('Bearer [token]');
        expect(wrong.stderr).not.toContain(td.token.slice(0, 10));
      } finally {
        await new Promise((r) => echo.close(r));
      }
    }, 180_000);
  });
  describe('the GitHub Action (.github/actions/flakehouse/action.yml)', () => {
    interface Step {
      name: string;
      if?: string;
      'continue-on-error'?: boolean;
      shell?: string;
      run?: string;
      env?: Record<string, string>;
      'working-directory'?: string;
    }
    const action = parseYaml(readFileSync(path.join(REPO_ROOT, '.github/actions/flakehouse/action.yml'), 'utf8')) as {
      inputs: Record<string, { required?: boolean; default?: string }>;
      runs: { using: string; steps: Step[] };
    };

    /** A step's environment as the runner would give it: `${{ inputs.x }}` replaced by the input's value. */
    function stepEnv(step: Step, inputs: Record<string, string>): Record<string, string> {
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(step.env ?? {})) {
        out[k] = v.replace(/\$\{\{\s*inputs\.([\w-]+)\s*\}\}/g, (_, name: string) => inputs[name] ?? action.inputs[name]?.default ?? '');
      }
      return out;
    }

    it('runs only commands and flags the CLI has, and declares exactly the inputs it uses', async () => {
      expect(action.runs.using).toBe('composite');
      const help = await cli(['help']);
      expect(help.code).toBe(0);
      const usage = help.stdout;
      const used = new Set<string>();
      const invocations: string[] = [];
      for (const step of action.runs.steps) {
        expect(step.shell, step.name).toBe('bash');
        const text = JSON.stringify(step);
        for (const m of text.matchAll(/\$\{\{[^}]*?inputs\.([\w-]+)/g)) used.add(m[1]!);
        // Inputs reach scripts through env only (no script injection through an input's value).
        expect(step.run ?? '', step.name).not.toContain('${{');
        for (const m of (step.run ?? '').matchAll(/npx --no -- flakehouse (\w+)([^\n]*)/g)) {
          const [, command, rest] = m;
          invocations.push(command!);
          // The command's block in USAGE: its line and the indented continuation lines.
          const block = new RegExp(`^  ${command} .*(?:\n {20,}.*)*`, 'm').exec(usage);
          expect(block, `flakehouse ${command} is not in the CLI's usage`).not.toBeNull();
          for (const flag of rest!.match(/--[a-z-]+/g) ?? []) expect(block![0], `${command} ${flag}`).toContain(`${flag}`);
        }
      }
      expect(invocations).toEqual(['report', 'comment', 'gate']);
      // Every step runs after failed tests; only the gate's verdict may fail the job (a crash or
      // a missing CLI in report or comment must not).
      expect(action.runs.steps.map((s) => [/!cancelled\(\)/.test(s.if ?? ''), s['continue-on-error'] === true])).toEqual([
        [true, true],
        [true, true],
        [true, false],
      ]);
      expect([...used].sort()).toEqual(Object.keys(action.inputs).sort());
      expect(action.inputs.endpoint!.required).toBe(true);
      expect(action.inputs.token!.required).toBe(true);
    }, 180_000);

    it('reports, comments once and blocks a new failure when its steps run as written', async () => {
      const actionCommit = sha();
      const event = path.join(work, 'event-8.json');
      writeFileSync(event, JSON.stringify({ pull_request: { number: 8, head: { sha: actionCommit, ref: 'feature/pay' }, base: { ref: 'main' } } }));
      const reports = path.join(work, 'reports');
      mkdirSync(reports);
      writeFileSync(
        path.join(reports, 'junit.xml'),
        `<?xml version="1.0"?><testsuites><testsuite name="checkout" tests="2" failures="1">
           <testcase classname="checkout" name="pays" file="src/checkout.test.ts" time="0.02"><failure message="expected paid, got declined">at pay (src/checkout.ts:3)</failure></testcase>
           <testcase classname="checkout" name="ships" file="src/checkout.test.ts" time="0.01"/>
         </testsuite></testsuites>`,
      );
      const inputs = { reports: `${reports}/*.xml`, endpoint: td.url, token: td.token, 'github-token': GH_TOKEN, 'working-directory': REPO_ROOT };
      const runner = actionsEnv({ GITHUB_EVENT_PATH: event, GITHUB_REF: 'refs/pull/8/merge', GITHUB_HEAD_REF: 'feature/pay', CI: 'true', HOME: process.env.HOME ?? work });
      const results: { code: number; stdout: string; stderr: string }[] = [];
      for (const step of action.runs.steps) {
        results.push(
          await new Promise((resolve) => {
            execFile('bash', ['-e', '-c', step.run!], { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...runner, ...stepEnv(step, inputs) } }, (err, stdout, stderr) =>
              resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
            );
          }),
        );
      }
      const [report, commented, gated] = results;
      expect(report!.code, report!.stderr).toBe(0);
      expect(report!.stderr).toContain('read 2 executions from 1 report(s)');
      expect(commented!.code, commented!.stderr).toBe(0);
      expect(commented!.stdout).toContain('created comment on acme/shop#8');
      const post = gh.writes().find((w) => w.path === '/repos/acme/shop/issues/8/comments');
      expect(post?.body.body).toContain('1 new failure of 2 tests');
      expect(post?.body.body).toContain('expected paid, got declined');
      expect(gated!.code).toBe(1);
      expect(gated!.stdout).toContain('Flakehouse gate: BLOCKED — 1 new failure');
      expect(gated!.stdout).toContain(`commit ${actionCommit.slice(0, 12)}`);
    }, 300_000);
  });
});

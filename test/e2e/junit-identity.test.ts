// One test, whichever way it is sent (issue 39, defect 2): the sample project of
// test/fixtures/runners/junit-sample/ run once by the real runner (installed from the npm registry,
// cached: test/helpers/runner-install.ts) with both the flakehouse reporter (over OTLP, its
// default transport) and the runner's JUnit output, and that JUnit file then posted to
// /v1/ingest/junit of the same real daemon. Each test of the sample must be one test identity with
// an execution from each of the two runs. Before, Vitest's JUnit made a second copy of every test
// (file `src/math/spec/ts`, suite `src/math.spec.ts`).
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { REPO_ROOT } from '../helpers/process.js';
import { installedRunner } from '../helpers/runner-install.js';

const SAMPLE = path.join(REPO_ROOT, 'test/fixtures/runners/junit-sample');

interface Case {
  name: string;
  kind: 'vitest' | 'jest' | 'playwright';
  packages: string[];
  command: (install: string) => string[];
  env: Record<string, string>;
}

const CASES: Case[] = [
  {
    name: 'Vitest 4.1.12, --reporter=junit',
    kind: 'vitest',
    packages: ['vitest@4.1.12'],
    command: (d) => [path.join(d, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.config.ts'],
    env: { FH_REPORTERS: 'default,flakehouse/vitest,junit' },
  },
  {
    name: 'Vitest 3.2.7, --reporter=junit',
    kind: 'vitest',
    packages: ['vitest@3.2.7'],
    command: (d) => [path.join(d, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.config.ts'],
    env: { FH_REPORTERS: 'default,flakehouse/vitest,junit' },
  },
  {
    name: 'Playwright 1.65.1, junit reporter (testDir the project root)',
    kind: 'playwright',
    packages: ['@playwright/test@1.65.1'],
    command: (d) => [path.join(d, 'node_modules/@playwright/test/cli.js'), 'test', '--config', 'playwright.config.ts'],
    env: { FH_REPORTERS: 'list,flakehouse/playwright,junit' },
  },
  {
    name: 'Jest 30.5.2 with jest-junit 17.0.0 configured as the README says',
    kind: 'jest',
    packages: ['jest@30.5.2', 'jest-junit@17.0.0'],
    command: (d) => [path.join(d, 'node_modules/jest/bin/jest.js'), '--ci', '--config', 'jest.config.cjs'],
    env: { FH_JUNIT: 'configured', FH_FLAKEHOUSE: 'on' },
  },
];

let td: TestDaemon;
let scratch: string;
const installs = new Map<string, string>();

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
  scratch = mkdtempSync(path.join(tmpdir(), 'fh-junit-identity-'));
  for (const c of CASES) installs.set(c.name, await installedRunner(c.packages));
}, 600_000);

afterAll(async () => {
  await td?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

function run(c: Case, project: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, c.command(installs.get(c.name)!), { cwd: project, env: { PATH: process.env.PATH ?? '', HOME: project, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

async function runOn(branch: string): Promise<{ id: string; executions: { testIdentityId: string; filePath: string; suite: string; title: string }[] }> {
  const items = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
    return res.status === 200 && res.json.items.length > 0 ? (res.json.items as { id: string }[]) : undefined;
  }, 30_000);
  expect(items).toHaveLength(1);
  return (await td.request('GET', `/v1/runs/${items[0]!.id}`)).json;
}

describe.each(CASES.map((c) => [c.name, c] as const))('%s and the flakehouse reporter', (name, c) => {
  it('name each test of the sample as one test', { timeout: 180_000 }, async () => {
    const project = mkdtempSync(path.join(scratch, `${c.kind}-`));
    cpSync(path.join(SAMPLE, c.kind), project, { recursive: true });
    writeFileSync(path.join(project, 'package.json'), JSON.stringify(c.kind === 'jest' ? { private: true } : { private: true, type: 'module' }));
    symlinkSync(path.join(installs.get(c.name)!, 'node_modules'), path.join(project, 'node_modules'), 'dir');
    const junitFile = path.join(project, 'junit.xml');
    const slug = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
    const reporterBranch = `reporter-${slug}`;
    const ran = await run(c, project, {
      ...c.env,
      FH_SAMPLE_TMP: project,
      FH_JUNIT_FILE: junitFile,
      JEST_JUNIT_OUTPUT_FILE: junitFile,
      SERVICE_ENDPOINT: td.url,
      SERVICE_TOKEN: td.token,
      SERVICE_COMMIT_SHA: 'abc1234',
      SERVICE_BRANCH: reporterBranch,
      SERVICE_BUFFER_DIR: path.join(project, 'buffer'),
    });
    // The sample has a failing test: the runner exits 1.
    expect(ran.code, ran.output).toBe(1);
    const viaReporter = await runOn(reporterBranch);

    const junitBranch = `junit-${slug}`;
    const posted = await td.request('POST', '/v1/ingest/junit', {
      body: { idempotencyKey: `junit-identity-${slug}`, xml: readFileSync(junitFile, 'utf8'), resource: { ciProvider: 'jenkins', commitSha: 'abc1234', branch: junitBranch, trigger: 'push' } },
    });
    expect(posted.status, posted.text).toBe(202);
    const viaJUnit = await runOn(junitBranch);

    const tests = (r: typeof viaReporter): Map<string, string> => new Map(r.executions.map((e) => [e.testIdentityId, `${e.filePath} | ${e.suite} | ${e.title}`]));
    const byReporter = tests(viaReporter);
    const byJUnit = tests(viaJUnit);
    expect(byReporter.size).toBe(7);
    // The same identities, named the same: one test each, not two copies.
    expect([...byJUnit.entries()].sort()).toEqual([...byReporter.entries()].sort());
  });
});

// Once per `npm run test:browser`: build web/dist, start a fake LLM and an S3 server (s3rver), one
// daemon with the dashboard on and a seeded history (helpers/seed.ts), and one Chromium; the test
// files get their addresses through vitest's provide/inject and share them.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startHttpSink, type HttpSink } from '../helpers/peers.js';
import { startTestS3, type TestS3 } from '../helpers/s3.js';
import { CHROMIUM_PATH, REPO_ROOT, launchChromiumServer } from './helpers/browser.js';
import { fakeAnthropic, rcaEnv, seedHistory, type SeededHistory } from './helpers/seed.js';

export interface BrowserWorld {
  url: string;
  /** The bootstrap token: every scope of the "default" project. */
  token: string;
  /** A token of the same project with the read scope only. */
  readToken: string;
  adminToken: string;
  projectSlug: string;
  wsEndpoint: string;
  seed: SeededHistory;
  /** The origin signed artifact downloads point at (SERVICE_S3_PUBLIC_ENDPOINT). */
  artifactOrigin: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    world: BrowserWorld;
  }
}

function buildWeb(): void {
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  if (!pkg.scripts['build:web']) throw new Error('package.json has no build:web script: the dashboard front end (web/) is not there yet');
  // The suite tests the front end as it is in the tree: always a fresh build, never a stale dist.
  execFileSync('npm', ['run', 'build:web'], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (!existsSync(path.join(REPO_ROOT, 'web/dist/index.html'))) throw new Error('npm run build:web wrote no web/dist/index.html');
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH}: apt-get install chromium (or set FLAKEHOUSE_CHROMIUM)`);
  buildWeb();
  let llm: HttpSink | undefined;
  let s3: TestS3 | undefined;
  let td: TestDaemon | undefined;
  let browser: Awaited<ReturnType<typeof launchChromiumServer>> | undefined;
  const teardown = async (): Promise<void> => {
    await browser?.close();
    await td?.close();
    await llm?.close();
    await s3?.close();
  };
  try {
    llm = await startHttpSink(fakeAnthropic);
    s3 = await startTestS3();
    td = await startTestDaemon({
      env: {
        ...rcaEnv(llm),
        ...s3.env,
        SERVICE_DASHBOARD_ENABLED: 'true',
        // The pages poll and fan out; the per-project limit is not what this suite is about.
        SERVICE_RATE_LIMIT_MAX: '0',
      },
    });
    const seed = await seedHistory(td);
    const created = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    if (created.status !== 201) throw new Error(`creating a read token: ${created.status} ${created.text}`);
    browser = await launchChromiumServer();
    project.provide('world', {
      url: td.url,
      token: td.token,
      readToken: String(created.json.token),
      adminToken: td.adminToken,
      projectSlug: 'default',
      wsEndpoint: browser.wsEndpoint(),
      seed,
      artifactOrigin: s3.publicEndpoint,
    });
  } catch (e) {
    await teardown();
    throw e;
  }
  return teardown;
}

// A project whose CI sends no commit: a re-run of the same CI run (its run id kept, as GitHub's
// GITHUB_RUN_ID across attempts) is same-code evidence; a failure and a pass in different CI runs
// is not. The real daemon and chDB, through the scoring processor. Issue 38.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const MIN = 60_000;

function run(title: string, at: number, status: 'pass' | 'fail', ciRunId: string): Record<string, unknown> {
  return nativeBatch({
    resource: { ciProvider: 'github_actions', ciRunId, commitSha: '0000000', branch: 'main', trigger: 'push' },
    run: { status: status === 'pass' ? 'passed' : 'failed', startedAt: new Date(at).toISOString() },
    executions: [
      { filePath: `src/${title}.test.ts`, suite: 'ci', title, status, startedAt: new Date(at).toISOString(), durationMs: 5, ...(status === 'fail' ? { error: { message: 'timeout' } } : {}) },
      { filePath: `src/${title}.test.ts`, suite: 'ci', title: `${title} steady`, status: 'pass', startedAt: new Date(at).toISOString(), durationMs: 5 },
    ],
  });
}

describe('same CI run without a commit', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon();
  });
  afterAll(async () => td?.close());

  async function stateOf(title: string): Promise<any> {
    const board = await td.request('GET', '/v1/flaky?minScore=0&limit=100');
    return board.json.items.find((i: any) => i.title === title);
  }

  it('a failed CI run whose re-run passes makes the test flaky; a pass in the next CI run does not', async () => {
    const start = Date.now() - 3 * 3_600_000;
    // Each test's history in one post (the scorer folds a test's runs in by start time, one lease
    // or many: the same state), then the runs after the failure, read against that stored state.
    await td.ingest(
      ...['rerun', 'nextpush'].flatMap((title) => [
        ...Array.from({ length: 6 }, (_, i) => run(title, start + i * MIN, 'pass', `${title}-${i}`)),
        run(title, start + 10 * MIN, 'fail', `${title}-10`),
      ]),
    );
    await td.ingest(
      run('rerun', start + 11 * MIN, 'pass', 'rerun-10'), // GitHub "re-run failed jobs": same run id
      run('nextpush', start + 11 * MIN, 'pass', 'nextpush-11'), // the next push's run
    );
    expect((await stateOf('rerun')).state).toBe('flaky');
    expect((await stateOf('nextpush')).state).not.toBe('flaky');
  });
});

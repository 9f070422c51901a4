// `flakehouse run --verify-new` with Playwright's adapter, for real: each new test of the runner
// fixture is re-run once with `playwright test <file> -g <its name>`, and the reporter hands every
// re-run (its retries among them) over. The counts are test/e2e/cli-verify.test.ts's.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runCliProcess } from '../helpers/process.js';
import { useVerifyBench } from '../helpers/verify-cli.js';

const bench = useVerifyBench('verify-pw');

describe('flakehouse run --verify-new, Playwright', () => {
  it('`playwright test <file> -g` re-runs each new test of the runner fixture', async () => {
    const sample = path.join(REPO_ROOT, 'test/fixtures/runners/playwright');
    const scratch = fs.mkdtempSync(path.join(bench.root, 'pw-'));
    // One retry, not the fixture's two: a failed attempt costs Playwright a fresh worker process, and
    // one retry shows the attempts counted as well as two (the re-run keeps the command's flags).
    const pw = [process.execPath, path.join(REPO_ROOT, 'node_modules/@playwright/test/cli.js'), 'test', '--config', 'playwright.config.ts', '--retries', '1'];
    const res = await runCliProcess(['run', '--verify-new', '1', '--base-branch', 'main', '--', ...pw], { cwd: sample, env: bench.env('pw-new', 'e000004', { FH_SAMPLE_TMP: scratch }), timeoutMs: 180_000 });
    const file = 'test/fixtures/runners/playwright/checkout.spec.ts';
    expect(res.stderr).toContain('verify: 3 new test(s) never seen on main: re-running each 1 time(s)');
    expect(res.stderr).toContain('checkout.spec.ts -g checkout payment authorizes the card');
    expect(res.stderr).not.toContain('reported nothing');
    expect(res.stderr).toContain(`verify: new test passed 2 of 2: ${file} > checkout > shows the total`);
    // Its first attempt fails in every run, the retry passes: 2 of 4.
    expect(res.stderr).toContain(`verify: new test failed 2 of 4: ${file} > checkout > payment > authorizes the card`);
    // Fails every attempt: 2 in the command's run, 2 in the re-run.
    expect(res.stderr).toContain(`verify: new test failed 4 of 4: ${file} > checkout > sends the receipt`);
    expect(res.code).toBe(1);
  }, 180_000);
});

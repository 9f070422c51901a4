// `flakehouse run --verify-new` with Vitest's adapter, for real: the runner fixture's new tests are
// each re-run once with `vitest run <file> -t <its name>`, and the reporter hands every re-run's
// attempts (its retries among them) back to the CLI. One re-run each: which test a re-run selects
// and what comes back is the same on the first as on the tenth; the counts are test/e2e/cli-verify.test.ts's.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runCliProcess } from '../helpers/process.js';
import { useVerifyBench } from '../helpers/verify-cli.js';

const bench = useVerifyBench('verify-vitest');

describe('flakehouse run --verify-new, Vitest', () => {
  it('re-runs each new test of the runner fixture with `vitest run <file> -t`', async () => {
    const sample = path.join(REPO_ROOT, 'test/fixtures/runners/vitest');
    const scratch = fs.mkdtempSync(path.join(bench.root, 'vitest-'));
    const vitest = [process.execPath, path.join(REPO_ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.config.ts'];
    const res = await runCliProcess(['run', '--verify-new', '1', '--verify-max-new', '10', '--base-branch', 'main', '--', ...vitest], {
      cwd: sample,
      env: bench.env('vitest-new', 'e000001', { FH_SAMPLE_TMP: scratch, SERVICE_TRANSPORT: 'json' }),
      timeoutMs: 180_000,
    });
    const file = 'test/fixtures/runners/vitest/cart.spec.ts';
    expect(res.stderr).toContain('verify: 4 new test(s) never seen on main: re-running each 1 time(s)');
    expect(res.stderr).toContain('vitest.config.ts cart.spec.ts -t ^cart adds an item$'); // the words as run
    // Each re-run selected exactly its test: nothing missing, the passing one passed every run.
    expect(res.stderr).not.toContain('reported nothing');
    expect(res.stderr).toContain(`verify: new test passed 2 of 2: ${file} > cart > adds an item`);
    // The flaky coupon test fails its first attempt in every run (its retry passes): 2 of 4.
    expect(res.stderr).toContain(`verify: new test failed 2 of 4: ${file} > cart > coupons > applies a coupon`);
    // Retried twice in each run, failing every attempt: 6 of 6.
    expect(res.stderr).toContain(`verify: new test failed 6 of 6: ${file} > cart > computes tax`);
    expect(res.code).toBe(1);
  }, 180_000);
});

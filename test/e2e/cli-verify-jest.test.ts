// `flakehouse run --verify-new` with Jest's adapter, for real: each new test of the Jest project
// (test/helpers/jest-sample.ts) is re-run once with `jest <file> -t <its name>`, and the reporter
// hands every re-run over. One re-run each: the counts are test/e2e/cli-verify.test.ts's.
import { describe, expect, it } from 'vitest';
import { jestSample } from '../helpers/jest-sample.js';
import { runCliProcess } from '../helpers/process.js';
import { useVerifyBench } from '../helpers/verify-cli.js';

const bench = useVerifyBench('verify-jest');

describe('flakehouse run --verify-new, Jest', () => {
  it('`jest <file> -t` re-runs each new test; the reporter hands every re-run over', async () => {
    const { dir: sample, command: jest } = jestSample(bench.root);
    const res = await runCliProcess(['run', '--verify-new', '1', '--base-branch', 'main', '--', ...jest], { cwd: sample, env: bench.env('jest-new', 'e000002'), timeoutMs: 180_000 });
    expect(res.stderr).toContain('verify: 3 new test(s) never seen on main: re-running each 1 time(s)');
    expect(res.stderr).toContain('cart.spec.cjs -t ^cart coupons applies a coupon$');
    expect(res.stderr).not.toContain('reported nothing');
    expect(res.stderr).toContain('verify: new test passed 2 of 2: cart.spec.cjs > cart > adds an item');
    expect(res.stderr).toContain('verify: new test failed 2 of 4: cart.spec.cjs > cart > coupons > applies a coupon');
    expect(res.stderr).toContain('verify: new test failed 6 of 6: cart.spec.cjs > cart > computes tax');
    expect(res.code).toBe(1);
  }, 180_000);
});

// `flakehouse run --verify-new` with pytest, for real (skipped where python3 has no pytest): a new
// test is re-run once as `python -m pytest <file>::<class>::<name>` in place of the test paths, its
// JUnit report read back. The counts are test/e2e/cli-verify.test.ts's.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliProcess } from '../helpers/process.js';
import { useVerifyBench } from '../helpers/verify-cli.js';

const bench = useVerifyBench('verify-pytest');

function hasPytest(): boolean {
  try {
    execFileSync('python3', ['-m', 'pytest', '--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('flakehouse run --verify-new, pytest', () => {
  it.skipIf(!hasPytest())('`python -m pytest <file>::<class>::<name>` in place of the test paths', async () => {
    const sample = path.join(bench.root, 'py-sample');
    fs.mkdirSync(path.join(sample, 'tests'), { recursive: true });
    fs.writeFileSync(
      path.join(sample, 'tests/test_cart.py'),
      [
        'import os, pathlib',
        'def test_add():',
        '    assert 1 + 1 == 2',
        'class TestCoupon:',
        '    def test_apply(self):',
        "        p = pathlib.Path(os.environ['COUNTERS']) / 'py_apply'",
        '        n = int(p.read_text()) + 1 if p.exists() else 1',
        '        p.write_text(str(n))',
        "        assert n != 2, 'coupon failed on run 2'",
        '',
      ].join('\n'),
    );
    const pytest = ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-o', 'junit_family=xunit1', '--junitxml=reports/py.xml', 'tests'];
    const res = await runCliProcess(['run', '--junit', 'reports/py.xml', '--verify-new', '1', '--base-branch', 'main', '--', ...pytest], { cwd: sample, env: bench.env('py-new', 'e000003'), timeoutMs: 180_000 });
    expect(res.stderr).toContain('verify: 2 new test(s) never seen on main: re-running each 1 time(s)');
    expect(res.stderr).toContain('--junitxml=reports/py.xml tests/test_cart.py::TestCoupon::test_apply');
    expect(res.stderr).not.toContain('reported nothing');
    expect(res.stderr).toContain('verify: new test passed 2 of 2: tests/test_cart.py > test_add');
    // The command's run is its first (passes), the re-run its second (fails).
    expect(res.stderr).toContain('verify: new test failed 1 of 2: tests/test_cart.py > TestCoupon > test_apply');
    expect(bench.counter('py_apply')).toBe(2);
    expect(res.code).toBe(1);
  }, 180_000);
});

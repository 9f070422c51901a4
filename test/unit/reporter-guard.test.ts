// The guard every runner reporter hook goes through (client/src/reporter/guard.ts): an error is said once
// per hook and swallowed, so a runner version the reporter does not know never fails the run;
// only the error `strict` asks for gets through.
import { describe, expect, it } from 'vitest';
import { HookGuard, callIfPresent } from '../../client/src/reporter/guard.js';
import { ReportDeliveryError } from '../../client/src/reporter/send.js';

describe('HookGuard', () => {
  it('swallows a hook error and warns once per hook, however many tests hit it', () => {
    const lines: string[] = [];
    const guard = new HookGuard('Vitest', (l) => lines.push(l));
    for (let i = 0; i < 3; i++) {
      expect(
        guard.run('a test result', () => {
          throw new TypeError('testCase.artifacts is not a function');
        }),
      ).toBeUndefined();
    }
    expect(guard.run('onInit', () => 7)).toBe(7);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('the Vitest reporter could not handle a test result (TypeError: testCase.artifacts is not a function)');
  });

  it('lets only the strict delivery error out of an async hook', async () => {
    const guard = new HookGuard('Jest', () => {});
    await expect(guard.runAsync('end', () => Promise.reject(new Error('boom')))).resolves.toBeUndefined();
    const strict = new ReportDeliveryError('not delivered', { delivered: false } as never);
    await expect(guard.runAsync('end', () => Promise.reject(strict))).rejects.toBe(strict);
  });

  it('a closed log does not turn a warning into an error', () => {
    const guard = new HookGuard('Jest', () => {
      throw new Error('EPIPE');
    });
    expect(() => guard.warn('x', new Error('y'))).not.toThrow();
  });
});

describe('callIfPresent', () => {
  it('calls the method when the runner has it, else gives the fallback', () => {
    const v4 = { artifacts(this: { own: number[] }) { return this.own; }, own: [1] };
    expect(callIfPresent(v4, 'artifacts', [])).toEqual([1]);
    expect(callIfPresent({}, 'artifacts', [])).toEqual([]);
    expect(callIfPresent({ artifacts: 'not a function' }, 'artifacts', [])).toEqual([]);
  });
});

// `flakehouse run`'s verdict (client/src/contract/mute.ts): which failures are muted and which exit code
// the wrapper returns, from the command's code, its executions and the quarantine list.
import { describe, expect, it } from 'vitest';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { fingerprint } from '../../client/src/contract/identity.js';
import { QUARANTINED_ATTRIBUTE, decideMute, executionFingerprint, failingTests, markMuted, type QuarantineEntry } from '../../client/src/contract/mute.js';

const e = (title: string, status: ExecutionInput['status'], extra: Partial<ExecutionInput> = {}): ExecutionInput => ({
  filePath: 'src/a.test.ts',
  suite: 'A',
  title,
  status,
  attempt: 1,
  startedAt: 1_800_000_000_000,
  durationMs: 5,
  ...extra,
});

const entry = (t: Pick<ExecutionInput, 'filePath' | 'suite' | 'title' | 'params'>, aliases: string[] = []): QuarantineEntry => ({
  testIdentityId: `id-${t.title}`,
  fingerprints: [fingerprint(t), ...aliases],
  filePath: t.filePath,
  suite: t.suite,
  title: t.title,
  params: t.params ?? null,
  reason: 'flaky on CI',
});

describe('failingTests', () => {
  it('counts a test by its last attempt: a pass on retry is not a failure, a fail after a pass is', () => {
    const execs = [e('retried', 'fail'), e('retried', 'flaky', { attempt: 2, retryOfIndex: 0 }), e('broke', 'pass'), e('broke', 'fail', { attempt: 2 }), e('plain', 'fail'), e('skipped', 'skip')];
    const failing = failingTests(execs);
    expect(failing.map((f) => [f.title, f.failedIndices])).toEqual([
      ['broke', [3]],
      ['plain', [4]],
    ]);
  });

  it('keys tests as the server does: path separators, a leading ./, blanks and case of the path do not matter; params do', () => {
    const base = { filePath: 'src/a.test.ts', suite: 'A', title: 't' };
    expect(executionFingerprint({ ...base, filePath: '.\\SRC\\a.test.ts', title: ' t ' })).toBe(fingerprint(base));
    expect(executionFingerprint({ ...base, params: { project: 'chromium' } })).not.toBe(executionFingerprint({ ...base, params: { project: 'firefox' } }));
    // Unicode forms of one name are one test (NFC at the door).
    expect(executionFingerprint({ ...base, title: 'cafe\u0301' })).toBe(fingerprint({ ...base, title: 'caf\u00e9' }));
  });
});

describe('decideMute', () => {
  const q = [entry({ filePath: 'src/a.test.ts', suite: 'A', title: 'flaky one' })];

  it('mutes a failing command whose only failure is quarantined: exit 0', () => {
    const v = decideMute({ commandExitCode: 1, executions: [e('ok', 'pass'), e('flaky one', 'fail')], quarantine: q });
    expect(v.kind).toBe('all_muted');
    expect(v.exitCode).toBe(0);
    expect(v.muted.map((m) => [m.title, m.quarantine.reason])).toEqual([['flaky one', 'flaky on CI']]);
  });

  it('keeps the command code when any failure is not quarantined', () => {
    const v = decideMute({ commandExitCode: 3, executions: [e('flaky one', 'fail'), e('real', 'fail')], quarantine: q });
    expect(v).toMatchObject({ kind: 'real_failures', exitCode: 3 });
    expect(v.unmuted.map((f) => f.title)).toEqual(['real']);
    expect(v.muted.map((f) => f.title)).toEqual(['flaky one']);
  });

  it('never turns a failing command without results, or without a failing test, green', () => {
    expect(decideMute({ commandExitCode: 2, executions: undefined, quarantine: q })).toMatchObject({ kind: 'no_results', exitCode: 2 });
    expect(decideMute({ commandExitCode: 2, executions: [], quarantine: q })).toMatchObject({ kind: 'no_results', exitCode: 2 });
    expect(decideMute({ commandExitCode: 1, executions: [e('ok', 'pass'), e('flaky one', 'fail'), e('flaky one', 'pass', { attempt: 2 })], quarantine: q })).toMatchObject({ kind: 'no_failing_test', exitCode: 1 });
  });

  it('keeps the command code without a list from the server, and says what the list would have muted', () => {
    const v = decideMute({ commandExitCode: 1, executions: [e('flaky one', 'fail')], quarantine: undefined });
    expect(v).toMatchObject({ kind: 'no_quarantine_list', exitCode: 1 });
  });

  it('leaves a passing command at 0 whatever its results say', () => {
    expect(decideMute({ commandExitCode: 0, executions: [e('real', 'fail')], quarantine: [] })).toMatchObject({ kind: 'passed', exitCode: 0 });
    expect(decideMute({ commandExitCode: 0, executions: undefined, quarantine: undefined })).toMatchObject({ kind: 'passed', exitCode: 0 });
  });

  it('matches a renamed test through its alias fingerprints, and tests with params only with the same params', () => {
    const renamed = e('flaky one (renamed)', 'fail');
    const aliased = [entry({ filePath: 'src/a.test.ts', suite: 'A', title: 'flaky one' }, [executionFingerprint(renamed)])];
    expect(decideMute({ commandExitCode: 1, executions: [renamed], quarantine: aliased }).kind).toBe('all_muted');
    const chromium = [entry({ filePath: 'src/a.test.ts', suite: 'A', title: 'p', params: { project: 'chromium' } })];
    expect(decideMute({ commandExitCode: 1, executions: [e('p', 'fail', { params: { project: 'chromium' } })], quarantine: chromium }).kind).toBe('all_muted');
    expect(decideMute({ commandExitCode: 1, executions: [e('p', 'fail', { params: { project: 'firefox' } })], quarantine: chromium }).kind).toBe('real_failures');
  });
});

describe('markMuted', () => {
  it('marks every failed attempt of a muted test, keeps other attributes, copies', () => {
    const execs = [e('flaky one', 'fail', { attributes: { team: 'web' } }), e('flaky one', 'fail', { attempt: 2, retryOfIndex: 0 }), e('ok', 'pass')];
    const v = decideMute({ commandExitCode: 1, executions: execs, quarantine: [entry({ filePath: 'src/a.test.ts', suite: 'A', title: 'flaky one' })] });
    const marked = markMuted(execs, v);
    expect(marked.map((x) => x.attributes)).toEqual([{ team: 'web', [QUARANTINED_ATTRIBUTE]: true }, { [QUARANTINED_ATTRIBUTE]: true }, undefined]);
    expect(execs[0]!.attributes).toEqual({ team: 'web' });
  });

  it('marks nothing when the run was not muted (a real failure beside it)', () => {
    const execs = [e('flaky one', 'fail'), e('real', 'fail')];
    const v = decideMute({ commandExitCode: 1, executions: execs, quarantine: [entry({ filePath: 'src/a.test.ts', suite: 'A', title: 'flaky one' })] });
    expect(markMuted(execs, v).some((x) => x.attributes?.[QUARANTINED_ATTRIBUTE] !== undefined)).toBe(false);
  });
});

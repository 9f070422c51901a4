// Pure tracker logic: the per-test state folded from events, and the open / update / close /
// reopen decision at a given time.
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { issueBody, issueMarker, issueTitle, observe, planIssue, type TrackedTest } from '../../src/domain/tracker.js';

const P = '11111111-1111-4111-8111-111111111111';
const T = '22222222-2222-4222-8222-222222222222';
const DAY = 86_400_000;
const t0 = Date.parse('2026-11-01T00:00:00Z');
const policy = { afterDays: 3, recoveryDays: 7 };

const detected = (at: number, score = 0.9): DomainEvent => ({
  id: `d${at}`,
  type: 'flaky.detected',
  projectId: P,
  occurredAt: at,
  data: { testIdentityId: T, filePath: 'src/a.test.ts', suite: 'cart', title: 'adds', score, reasons: [{ code: 'PASS_ON_RERUN' }] },
});
const scored = (at: number, score: number, candidate: boolean): DomainEvent => ({
  id: `s${at}`,
  type: 'score.updated',
  projectId: P,
  occurredAt: at,
  data: { testIdentityId: T, score, candidate, reasonCodes: candidate ? ['PASS_ON_RERUN'] : ['STABLE'] },
});

function fold(events: DomainEvent[], start: TrackedTest | null = null): TrackedTest | null {
  return events.reduce<TrackedTest | null>((s, e) => observe(s, e, e.occurredAt), start);
}

describe('observe', () => {
  it('does not track a test that never was a candidate', () => {
    expect(fold([scored(t0, 0.2, false), scored(t0 + DAY, 0.3, false)])).toBeNull();
  });

  it('starts the flaky spell when the test becomes a candidate and keeps it while it stays one', () => {
    const s = fold([scored(t0, 0.85, true), detected(t0), scored(t0 + DAY, 0.95, true)])!;
    expect(s).toMatchObject({ candidate: true, flakySince: t0, stableSince: null, score: 0.95, title: 'adds', suite: 'cart', filePath: 'src/a.test.ts' });
    const stable = observe(s, scored(t0 + 2 * DAY, 0.5, false), 0)!;
    expect(stable).toMatchObject({ candidate: false, flakySince: null, stableSince: t0 + 2 * DAY });
  });
});

describe('planIssue', () => {
  const flaky = fold([detected(t0)])!;

  it('opens after afterDays of one continuous spell, not before', () => {
    expect(planIssue(flaky, policy, t0 + 3 * DAY - 1)).toBeNull();
    expect(planIssue(flaky, policy, t0 + 3 * DAY)).toBe('open');
    // A spell that ended and began again counts from its new start.
    const again = fold([scored(t0 + DAY, 0.4, false), scored(t0 + 2 * DAY, 0.9, true)], flaky)!;
    expect(planIssue(again, policy, t0 + 4 * DAY)).toBeNull();
    expect(planIssue(again, policy, t0 + 5 * DAY)).toBe('open');
  });

  it('updates an open issue when the score moved by ≥ 0.05, closes after recoveryDays stable, reopens the same issue', () => {
    const open: TrackedTest = { ...flaky, issue: { repository: 'o/r', number: 7, url: null, open: true, score: 0.9 } };
    expect(planIssue({ ...open, score: 0.93 }, policy, t0 + 4 * DAY)).toBeNull();
    expect(planIssue({ ...open, score: 0.97 }, policy, t0 + 4 * DAY)).toBe('update');
    const stable = observe(open, scored(t0 + 5 * DAY, 0.9, false), 0)!;
    expect(planIssue(stable, policy, t0 + 12 * DAY - 1)).toBeNull();
    expect(planIssue(stable, policy, t0 + 12 * DAY)).toBe('close');
    const closed: TrackedTest = { ...stable, issue: { ...stable.issue!, open: false } };
    expect(planIssue(closed, policy, t0 + 30 * DAY)).toBeNull();
    const reflaked = observe(closed, scored(t0 + 30 * DAY, 0.9, true), 0)!;
    expect(planIssue(reflaked, policy, t0 + 33 * DAY)).toBe('reopen');
  });
});

describe('a flaky test that breaks', () => {
  const brokenEvent = (at: number): DomainEvent => ({ id: `b${at}`, type: 'score.updated', projectId: P, occurredAt: at, data: { testIdentityId: T, score: 0.1, candidate: false, state: 'broken' } });
  const fixedEvent = (at: number): DomainEvent => ({ id: `f${at}`, type: 'score.updated', projectId: P, occurredAt: at, data: { testIdentityId: T, score: 0, candidate: false, state: 'fixed' } });

  it('keeps its issue open while broken (failing is not recovering); the recovery clock starts when it is fixed', () => {
    const open: TrackedTest = { ...fold([detected(t0)])!, issue: { repository: 'o/r', number: 7, url: null, open: true, score: 0.9 } };
    const broken = observe(open, brokenEvent(t0 + 5 * DAY), 0)!;
    expect(broken).toMatchObject({ candidate: false, broken: true, stableSince: null });
    expect(planIssue(broken, policy, t0 + 60 * DAY)).not.toBe('close');
    const fixed = observe(broken, fixedEvent(t0 + 20 * DAY), 0)!;
    expect(fixed).toMatchObject({ broken: false, stableSince: t0 + 20 * DAY });
    expect(planIssue(fixed, policy, t0 + 27 * DAY - 1)).not.toBe('close');
    expect(planIssue(fixed, policy, t0 + 27 * DAY)).toBe('close');
  });

  it('a stored state from before test states (no broken flag) behaves as before', () => {
    const old = fold([detected(t0)])!;
    delete old.broken;
    expect(observe(old, scored(t0 + DAY, 0.5, false), 0)).toMatchObject({ stableSince: t0 + DAY });
  });
});

describe('issue text', () => {
  it('names the test, shows score and reasons, links, and carries the marker', () => {
    const s = fold([detected(t0, 0.9312)])!;
    expect(issueTitle(s)).toBe('Flaky test: cart › adds');
    const body = issueBody(s, { projectSlug: 'shop', testUrl: `https://d.example/projects/shop/tests/${T}`, policy });
    expect(body).toContain('**0.93**');
    expect(body).toContain('`PASS_ON_RERUN`');
    expect(body).toContain('since 2026-11-01');
    expect(body).toContain(`(https://d.example/projects/shop/tests/${T})`);
    expect(body).toContain(issueMarker(T));
  });
});

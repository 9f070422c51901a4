// A test's median duration against its trailing baseline (src/domain/duration-regression.ts), and
// the GitHub link of a commit (src/domain/commit-url.ts).
import { describe, expect, it } from 'vitest';
import { githubCommitUrl } from '../../src/domain/commit-url.js';
import { BASELINE_DAYS, RECENT_DAYS, SLOWED_MIN_DELTA_MS, SLOWED_RATIO, durationRegression, durationWindows } from '../../src/domain/duration-regression.js';

const w = (recent: number | null, baseline: number | null, n = 5) => ({ recent: { p50Ms: recent, samples: n }, baseline: { p50Ms: baseline, samples: n } });

describe('durationRegression', () => {
  it('uses the documented thresholds: 7 days against the 28 before, ≥ 1.5× and ≥ +200 ms', () => {
    expect({ RECENT_DAYS, BASELINE_DAYS, SLOWED_RATIO, SLOWED_MIN_DELTA_MS }).toEqual({ RECENT_DAYS: 7, BASELINE_DAYS: 28, SLOWED_RATIO: 1.5, SLOWED_MIN_DELTA_MS: 200 });
  });

  it('flags a median that grew by both the ratio and the absolute delta', () => {
    expect(durationRegression(w(2_900, 1_200))).toMatchObject({ slowed: true, recentP50Ms: 2_900, baselineP50Ms: 1_200, ratio: 2.417 });
    // Exactly on both lines.
    expect(durationRegression(w(600, 400)).slowed).toBe(true);
  });

  it('does not flag a fast test that tripled by a few ms, nor a slow one that grew by less than 1.5×', () => {
    expect(durationRegression(w(30, 10)).slowed).toBe(false);
    expect(durationRegression(w(599, 400)).slowed).toBe(false);
    expect(durationRegression(w(14_000, 10_000)).slowed).toBe(false);
  });

  it('needs enough executions in both windows, and both medians', () => {
    expect(durationRegression(w(2_900, 1_200, 2)).slowed).toBe(false);
    expect(durationRegression(w(2_900, null)).slowed).toBe(false);
    expect(durationRegression(w(2_900, null)).ratio).toBeNull();
  });

  it('places the baseline right before the recent window', () => {
    const now = Date.parse('2026-11-27T12:00:00Z');
    expect(durationWindows(now)).toEqual({ recentFrom: Date.parse('2026-11-20T12:00:00Z'), baselineFrom: Date.parse('2026-10-23T12:00:00Z') });
  });
});

describe('githubCommitUrl', () => {
  const gh = { repository: 'acme/shop', ciProvider: 'github_actions', ciJobUrl: '' };
  it('links a commit of a GitHub repository', () => {
    expect(githubCommitUrl(gh, 'abc1234def')).toBe('https://github.com/acme/shop/commit/abc1234def');
    expect(githubCommitUrl({ repository: 'acme/shop', ciProvider: 'jenkins', ciJobUrl: 'https://github.com/acme/shop/actions/runs/1' }, 'abc1234')).toBe('https://github.com/acme/shop/commit/abc1234');
  });
  it('does not guess other hosts, and refuses what is not an owner/name and a sha', () => {
    expect(githubCommitUrl({ repository: 'acme/shop', ciProvider: 'gitlab', ciJobUrl: 'https://gitlab.com/x' }, 'abc1234')).toBeNull();
    expect(githubCommitUrl({ ...gh, repository: '' }, 'abc1234')).toBeNull();
    expect(githubCommitUrl(gh, 'not a sha')).toBeNull();
    expect(githubCommitUrl(null, 'abc1234')).toBeNull();
  });
});

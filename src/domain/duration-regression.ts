// Duration regressions per test, pure: the median (p50) duration of a test's last RECENT_DAYS
// against its median over the BASELINE_DAYS before them (the trailing baseline), like suite.slowed
// (suite-alerts.ts) but per test and on medians, so one slow outlier does not flag a test.
//   slowed: recent p50 ≥ SLOWED_RATIO × baseline p50 and ≥ baseline p50 + SLOWED_MIN_DELTA_MS,
//           with at least MIN_RECENT_SAMPLES recent and MIN_BASELINE_SAMPLES baseline executions.

/** The recent window, in days, ending now. */
export const RECENT_DAYS = 7;
/** The trailing baseline, in days, ending where the recent window starts. */
export const BASELINE_DAYS = 28;
/** How many times slower the recent median must be. */
export const SLOWED_RATIO = 1.5;
/** And by how much at least, in milliseconds (a 10 ms test at 16 ms is not a regression). */
export const SLOWED_MIN_DELTA_MS = 200;
export const MIN_RECENT_SAMPLES = 3;
export const MIN_BASELINE_SAMPLES = 3;

export interface DurationWindows {
  recent: { p50Ms: number | null; samples: number };
  baseline: { p50Ms: number | null; samples: number };
}

export interface DurationRegression {
  slowed: boolean;
  recentP50Ms: number | null;
  baselineP50Ms: number | null;
  recentSamples: number;
  baselineSamples: number;
  /** recent / baseline, null without both medians (or a zero baseline). */
  ratio: number | null;
}

export function durationRegression(w: DurationWindows): DurationRegression {
  const recent = w.recent.p50Ms;
  const base = w.baseline.p50Ms;
  const enough = w.recent.samples >= MIN_RECENT_SAMPLES && w.baseline.samples >= MIN_BASELINE_SAMPLES && recent !== null && base !== null;
  const ratio = recent !== null && base !== null && base > 0 ? Math.round((recent / base) * 1000) / 1000 : null;
  const slowed = enough && recent >= SLOWED_RATIO * base && recent - base >= SLOWED_MIN_DELTA_MS;
  return { slowed, recentP50Ms: recent, baselineP50Ms: base, recentSamples: w.recent.samples, baselineSamples: w.baseline.samples, ratio };
}

/** The windows' bounds (ms since epoch) for `now`: baseline [baselineFrom, recentFrom), recent [recentFrom, now]. */
export function durationWindows(now: number): { baselineFrom: number; recentFrom: number } {
  const DAY = 86_400_000;
  const recentFrom = now - RECENT_DAYS * DAY;
  return { recentFrom, baselineFrom: recentFrom - BASELINE_DAYS * DAY };
}

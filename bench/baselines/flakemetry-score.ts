// Flakemetry's model 0.2.0, the baseline `npm run bench -- detection` compares our model
// (src/domain/score.ts) against. Bench-only: the daemon never scores with it, so it lives here
// rather than in src/domain.

const DAY_MS = 86_400_000;
const decayFactor = (dtMs: number, halfLifeMs: number): number => (dtMs <= 0 ? 1 : Math.pow(2, -dtMs / halfLifeMs));
const clamp01 = (x: number): number => (x < 0 ? 0 : x > 1 ? 1 : x);


/** Flakemetry model 0.2.0, the baseline (docs/architecture.md formula, last 500 graded executions). */
export interface GradedExecution {
  status: 'pass' | 'fail' | 'flaky';
  commitSha: string;
  runId: string;
  at: number;
  attempt: number;
  failedAloneInRun: boolean;
}

const FLAKEMETRY_WINDOW = 500;
const FLAKEMETRY_HALF_LIFE_MS = 14 * DAY_MS;

/**
 * score = clamp01(0.40·sameShaVariance + 0.20·instability + 0.15·flipRate + 0.10·passOnRerun
 *                 + 0.10·entropy + 0.05·failIsolation) over the last 500 graded executions, with
 *  sameShaVariance = share of commits with ≥ 2 executions that have both a green (pass, flaky)
 *                    and a red (fail) one (every commit, the placeholder included);
 *  instability     = β/(α+β), α = 1 + Σw(green), β = 1 + Σw(red), w = 2^(−age/14 d);
 *  flipRate        = green/red changes between consecutive executions / (n − 1);
 *  passOnRerun     = per commit, executions ordered by attempt: red followed by green / red followed by anything;
 *  entropy         = Shannon entropy (bits) of the green/red counts;
 *  failIsolation   = share of red executions that failed alone in their run.
 */
export function flakemetryScore(history: readonly GradedExecution[], now: number): number {
  const ordered = history
    .map((e, i) => ({ e, i }))
    .sort((a, b) => a.e.at - b.e.at || a.e.attempt - b.e.attempt || a.i - b.i)
    .slice(-FLAKEMETRY_WINDOW)
    .map((x) => x.e);
  if (ordered.length === 0) return 0;
  const green = (e: GradedExecution): boolean => e.status !== 'fail';

  const byCommit = new Map<string, GradedExecution[]>();
  for (const e of ordered) {
    const list = byCommit.get(e.commitSha);
    if (list) list.push(e);
    else byCommit.set(e.commitSha, [e]);
  }
  let multi = 0;
  let mixed = 0;
  let retriedAfterFail = 0;
  let recoveredAfterFail = 0;
  for (const list of byCommit.values()) {
    if (list.length >= 2) {
      multi++;
      if (list.some(green) && list.some((e) => !green(e))) mixed++;
    }
    const byAttempt = list.map((e, i) => ({ e, i })).sort((a, b) => a.e.attempt - b.e.attempt || a.i - b.i);
    for (let i = 1; i < byAttempt.length; i++) {
      if (!green(byAttempt[i - 1]!.e)) {
        retriedAfterFail++;
        if (green(byAttempt[i]!.e)) recoveredAfterFail++;
      }
    }
  }
  const sameShaVariance = multi === 0 ? 0 : mixed / multi;
  const passOnRerun = retriedAfterFail === 0 ? 0 : recoveredAfterFail / retriedAfterFail;

  let transitions = 0;
  for (let i = 1; i < ordered.length; i++) if (green(ordered[i]!) !== green(ordered[i - 1]!)) transitions++;
  const flipRate = ordered.length < 2 ? 0 : transitions / (ordered.length - 1);

  let alpha = 1;
  let beta = 1;
  let greens = 0;
  let reds = 0;
  let isolated = 0;
  for (const e of ordered) {
    const w = decayFactor(now - e.at, FLAKEMETRY_HALF_LIFE_MS);
    if (green(e)) {
      alpha += w;
      greens++;
    } else {
      beta += w;
      reds++;
      if (e.failedAloneInRun) isolated++;
    }
  }
  const instability = beta / (alpha + beta);
  const entropyTerm = (p: number): number => (p === 0 ? 0 : -p * Math.log2(p));
  const entropy = entropyTerm(greens / ordered.length) + entropyTerm(reds / ordered.length);
  const failIsolation = reds === 0 ? 0 : isolated / reds;

  return clamp01(0.4 * sameShaVariance + 0.2 * instability + 0.15 * flipRate + 0.1 * passOnRerun + 0.1 * entropy + 0.05 * failIsolation);
}

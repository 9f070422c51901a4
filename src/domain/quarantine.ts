// Quarantine rules (docs/contract.md §7), pure.
//
// Two writers never touch the same row: people's decisions go to `quarantine_overrides` (API),
// the scorer's automatic state lives in `test_state` (worker). The effective state combines them:
//   override quarantined → quarantined; released → not; `auto` → the state at that moment until
//   the scorer runs again, then the scorer's own state.

export type OverrideDecision = 'quarantined' | 'released';

export interface OverrideRow {
  /** null = `auto` (handed back to the scorer). */
  override: OverrideDecision | null;
  reason: string;
  /** The effective state when the decision was made (what `auto` keeps until the next scoring). */
  stateAfter: boolean;
  decidedAt: number;
}

export interface AutoState {
  autoQuarantined: boolean;
  reason: string;
  quarantinedAt: number | null;
  /** Clean runs since the automatic quarantine began. */
  cleanRuns: number;
  /** When the scorer last updated this test (ms); null before its first run. */
  scoredAt: number | null;
  /** When the scorer last released it after its cooldown: it is not quarantined again on the same
   * evidence (its score decays slowly), only on flaky evidence newer than the release. */
  releasedAt: number | null;
}

export function effectiveQuarantine(auto: AutoState | null, override: OverrideRow | null): { quarantined: boolean; reason: string | null } {
  if (override?.override === 'quarantined') return { quarantined: true, reason: override.reason || 'manual' };
  if (override?.override === 'released') return { quarantined: false, reason: null };
  if (override && (auto?.scoredAt === null || auto === null || override.decidedAt > auto.scoredAt)) {
    return { quarantined: override.stateAfter, reason: override.stateAfter ? override.reason || 'manual' : null };
  }
  if (auto?.autoQuarantined) return { quarantined: true, reason: auto.reason };
  return { quarantined: false, reason: null };
}

export interface QuarantinePolicy {
  enabled: boolean;
  cooldownRuns: number;
}

export interface RunOutcome {
  /** One entry per run in which the test ran (not only skipped), oldest first: true when every
   * attempt passed (a pass after a retry is not clean). */
  runs: boolean[];
}

export interface QuarantineStep {
  next: AutoState;
  /** Set when the effective state changed through this step. */
  changed: 'quarantined' | 'released' | null;
}

/** What the scorer says of the test this step. */
export interface ScoredTest {
  /** The test is flaky (the one quarantine-candidate predicate: state `flaky`). */
  candidate: boolean;
  /** The test is broken: failing on its mainline since `brokenSince`, not flaky. */
  broken: boolean;
  brokenSince: string | null;
  score: number;
  lastFlakedAt: number | null;
  /** The test is fixed (its flakiness proven gone, e.g. a verified fix merged): not held either. Absent = false. */
  fixed?: boolean;
  fixedSince?: string | null;
}

/**
 * One scoring step's automatic quarantine decision for a test. Tests with a person's override are
 * left alone; after `auto` the scorer starts from the state the person left. Automatic quarantine
 * never holds a broken test: the gate would no longer see a real break fail, and a test that never
 * passes could never earn its cooldown runs. Nor a fixed one: its flakiness was proven gone (a new
 * flake makes it a candidate again). A person's quarantine of a broken test stays.
 */
export function stepQuarantine(prev: AutoState | null, override: OverrideRow | null, policy: QuarantinePolicy, outcome: RunOutcome, scored: ScoredTest, now: number): QuarantineStep {
  const base: AutoState = prev ?? { autoQuarantined: false, reason: '', quarantinedAt: null, cleanRuns: 0, scoredAt: null, releasedAt: null };
  if (override?.override === 'quarantined' || override?.override === 'released') {
    return { next: { ...base, scoredAt: now }, changed: null };
  }
  const before = effectiveQuarantine(prev, override).quarantined;
  let state: AutoState = { ...base, scoredAt: now };
  // `auto` after a person's decision: continue from the state they left.
  if (override && (prev === null || prev.scoredAt === null || override.decidedAt > prev.scoredAt)) {
    state = override.stateAfter
      ? { ...state, autoQuarantined: true, reason: state.autoQuarantined ? state.reason : override.reason || 'manual', quarantinedAt: state.quarantinedAt ?? override.decidedAt, cleanRuns: 0 }
      : { ...state, autoQuarantined: false, reason: '', quarantinedAt: null, cleanRuns: 0 };
  }
  if (state.autoQuarantined && scored.broken) {
    const since = scored.brokenSince ? ` since ${scored.brokenSince.slice(0, 7)}` : '';
    state = { ...state, autoQuarantined: false, reason: `auto: released, broken${since} (not flaky: a quarantine would hide the break)`, quarantinedAt: null, cleanRuns: 0, releasedAt: now };
  } else if (state.autoQuarantined && scored.fixed) {
    const since = scored.fixedSince ? ` since ${scored.fixedSince.slice(0, 7)}` : '';
    state = { ...state, autoQuarantined: false, reason: `auto: released, fixed${since}`, quarantinedAt: null, cleanRuns: 0, releasedAt: now };
  } else if (state.autoQuarantined) {
    for (const clean of outcome.runs) {
      state.cleanRuns = clean ? state.cleanRuns + 1 : 0;
      if (state.cleanRuns >= policy.cooldownRuns) {
        state = { ...state, autoQuarantined: false, reason: '', quarantinedAt: null, cleanRuns: 0, releasedAt: now };
        break;
      }
    }
  } else if (policy.enabled && scored.candidate && !scored.broken && !scored.fixed && (state.releasedAt === null || (scored.lastFlakedAt !== null && scored.lastFlakedAt > state.releasedAt))) {
    state = { ...state, autoQuarantined: true, reason: `auto: flaky score ${scored.score.toFixed(2)}`, quarantinedAt: now, cleanRuns: 0 };
  }
  const after = state.autoQuarantined;
  return { next: state, changed: after === before ? null : after ? 'quarantined' : 'released' };
}

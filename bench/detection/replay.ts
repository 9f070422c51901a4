// Replays the generated histories through our model and the baseline, run by run in time order,
// with the automatic quarantine behind each, and keeps what the metrics need per test.
import type { ProjectHistory, RunRecord, TestResult, TestSpec, TestTruth } from './generator.js';
import * as baseline from './baseline.js';
import { observationOf, runRatios, type RunRatios } from './observation.js';
import * as ours from './ours.js';
import type { ModelReading, QuarantineState } from './ours.js';

export type ModelName = 'ours' | 'baseline';
export const MODELS: readonly ModelName[] = ['ours', 'baseline'];

/** Read the model this long after the run (the scorer runs once the run is in). */
const READ_DELAY_MS = 60_000;

export interface ModelTrack {
  everCandidate: boolean;
  /** The test's graded-run ordinal (1-based) after which it first was a candidate. */
  firstCandidateRun: number | null;
  everQuarantined: boolean;
  quarantinedAtEnd: boolean;
  /** After the test's last run. */
  final: ModelReading;
  /** Count of runs after which the model's state label was each value (ours). */
  states: Record<string, number>;
}

export interface EvaluatedTest {
  spec: TestSpec;
  truth: TestTruth;
  project: ProjectHistory;
  models: Record<ModelName, ModelTrack>;
}

const emptyTrack = (): ModelTrack => ({
  everCandidate: false,
  firstCandidateRun: null,
  everQuarantined: false,
  quarantinedAtEnd: false,
  final: { score: 0, candidate: false, lastFlakedAt: null, broken: false, brokenSince: null },
  states: {},
});

const short = (sha: string | null): string => (sha === null ? '-' : sha.slice(0, 7));
const clock = (at: number): string => new Date(at).toISOString().slice(5, 16).replace('T', ' ');
const fmt = (x: number): string => x.toFixed(3);

function traceLine(run: RunRecord, result: TestResult, ratios: RunRatios, readings: Record<ModelName, ModelReading>, quarantined: Record<ModelName, boolean>): string {
  const code = run.code;
  const where = code.pr === null ? `main@${code.mainIdx}` : `${code.branch}#${code.prCommitIdx} base main@${code.mainIdx}`;
  const o = readings.ours;
  const b = readings.baseline;
  return [
    clock(run.at),
    run.runId.padEnd(9),
    `${run.commitSha.slice(0, 7)} mb=${short(run.mergeBase)}`,
    where.padEnd(28),
    run.shardIndex === null ? '' : `shard ${run.shardIndex}`,
    run.rerun > 0 ? `rerun ${run.rerun}` : '',
    run.outage ? `OUTAGE(${fmt(run.outage.intensity)}${run.outage.persistent ? ',persistent' : ''})` : '',
    result.codeBroken ? 'BROKEN-CODE' : '',
    result.attempts.join(',').padEnd(14),
    `fail=${fmt(ratios.runFailRatio)} flaky=${fmt(ratios.runFlakyRatio)} n=${ratios.runTestCount}`,
    `| ours ${fmt(o.score)}${o.candidate ? ' CAND' : ''}${quarantined.ours ? ' Q' : ''} ${o.state ?? ''} ${o.detail ?? ''}`,
    `| base ${fmt(b.score)}${b.candidate ? ' CAND' : ''}${quarantined.baseline ? ' Q' : ''}`,
  ]
    .filter((s) => s !== '')
    .join('  ');
}

export function replay(projects: ProjectHistory[], traceId: string | undefined, print: (line: string) => void): EvaluatedTest[] {
  const out: EvaluatedTest[] = [];
  for (const project of projects) {
    const ourState = new Map<string, ours.OurState>();
    const baseState = new Map<string, baseline.BaselineState>();
    const quarantine = new Map<string, Record<ModelName, QuarantineState>>();
    const graded = new Map<string, number>();
    const evaluated = new Map<string, EvaluatedTest>();
    for (const spec of project.tests) {
      ourState.set(spec.id, ours.init());
      baseState.set(spec.id, baseline.init());
      quarantine.set(spec.id, { ours: null, baseline: null });
      graded.set(spec.id, 0);
      const e: EvaluatedTest = { spec, truth: project.truth.get(spec.id)!, project, models: { ours: emptyTrack(), baseline: emptyTrack() } };
      evaluated.set(spec.id, e);
      out.push(e);
    }
    const traced = traceId === undefined ? undefined : project.tests.find((t) => t.id === traceId);
    if (traced) print(`trace ${traced.id} (${traced.name}): ${JSON.stringify({ ...traced, truth: traced.truth, shardMoves: traced.shardMoves.length })}`);

    for (const run of project.runs) {
      const ratios = runRatios(run);
      const now = run.at + READ_DELAY_MS;
      for (const result of run.results) {
        const id = result.test.id;
        const obs = observationOf(run, result, ratios);
        const gradedRun = result.attempts.some((a) => a !== 'skip');
        const ordinal = (graded.get(id) ?? 0) + (gradedRun ? 1 : 0);
        graded.set(id, ordinal);
        const ourNext = ours.observe(ourState.get(id)!, obs);
        ourState.set(id, ourNext);
        const baseNext = baseline.observe(baseState.get(id)!, obs);
        const readings: Record<ModelName, ModelReading> = { ours: ours.read(ourNext, now), baseline: baseline.read(baseNext, now) };
        const ranClean = gradedRun ? result.attempts.every((a) => a === 'pass' || a === 'skip') : null;
        const q = quarantine.get(id)!;
        const quarantined = { ours: false, baseline: false };
        const e = evaluated.get(id)!;
        for (const m of MODELS) {
          const step = ours.stepAutoQuarantine(q[m], ranClean, readings[m], now);
          q[m] = step.next;
          quarantined[m] = step.quarantined;
          const track = e.models[m];
          const r = readings[m];
          if (r.candidate && !track.everCandidate) {
            track.everCandidate = true;
            track.firstCandidateRun = ordinal;
          }
          track.everQuarantined ||= step.quarantined;
          track.quarantinedAtEnd = step.quarantined;
          track.final = r;
          if (r.state !== undefined) track.states[r.state] = (track.states[r.state] ?? 0) + 1;
        }
        if (traced && traced.id === id) print(traceLine(run, result, ratios, readings, quarantined));
      }
    }
    if (traced) print(`truth ${traced.id}: ${JSON.stringify(project.truth.get(traced.id))}`);
  }
  return out;
}

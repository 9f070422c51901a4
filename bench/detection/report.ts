// The readable table: per project, per truth class, overall, and the targets, ours beside the baseline.
import { CLASS_ROWS, TARGETS, type ClassStats, type FlakyRowStats, type Latency, type ModelSummary, type NonFlakyRowStats } from './metrics.js';
import type { ModelName } from './replay.js';

export interface ProjectLine {
  project: number;
  profile: { label: string };
  tests: number;
  ciRuns: number;
  runIds: number;
  reruns: number;
  outageRuns: number;
  mainCommits: number;
  prs: { opened: number; merged: number; abandoned: number; open: number; mainMergedIn: number };
  days: number;
  models: Record<ModelName, { precision: number | null; recall: number | null; nonFlakyEverCandidates: number; latencyAfterStrongEvidence: Latency }>;
}

const num = (x: number | null): string => (x === null ? '–' : Number.isInteger(x) ? String(x) : x.toFixed(3));
const lat = (l: Latency): string => `${num(l.median)} / ${num(l.p90)} (${l.detected} of ${l.of}${l.beforeEvidence > 0 ? `, ${l.beforeEvidence} before` : ''})`;

export function renderTable(header: string, projects: ProjectLine[], classes: Record<string, ClassStats>, summary: Record<ModelName, ModelSummary>): string {
  const L: string[] = ['', header, ''];
  L.push('project  profile          tests  CI runs  run ids  re-runs  outages  main commits  PRs m/a/o (main merged in)  days   ours P / R / lat    baseline P / R / lat');
  for (const p of projects) {
    const pr = p.prs;
    L.push(
      `p${p.project}`.padEnd(9) +
        p.profile.label.padEnd(17) +
        String(p.tests).padStart(5) +
        String(p.ciRuns).padStart(9) +
        String(p.runIds).padStart(9) +
        String(p.reruns).padStart(9) +
        String(p.outageRuns).padStart(9) +
        String(p.mainCommits).padStart(14) +
        `  ${pr.merged}/${pr.abandoned}/${pr.open} (${pr.mainMergedIn})`.padEnd(27) +
        String(p.days).padStart(5) +
        `   ${num(p.models.ours.precision)} / ${num(p.models.ours.recall)} / ${num(p.models.ours.latencyAfterStrongEvidence.median)}`.padEnd(22) +
        `${num(p.models.baseline.precision)} / ${num(p.models.baseline.recall)} / ${num(p.models.baseline.latencyAfterStrongEvidence.median)}`,
    );
  }
  L.push('  (P / R at the end; lat = median latency after strong evidence; m/a/o = merged / abandoned / still open)');
  L.push('');
  L.push('flaky (positives)          n    obs  |  ours: end   ever   obs-end  |  baseline: end   ever   obs-end');
  for (const row of CLASS_ROWS.filter((r) => r.flaky)) {
    const c = classes[row.key]!;
    const o = c.models.ours as FlakyRowStats;
    const b = c.models.baseline as FlakyRowStats;
    L.push(
      `  ${row.label}`.padEnd(25) +
        String(c.count).padStart(4) +
        String(c.observable ?? '').padStart(7) +
        `  |  ${num(o.recallAtEnd).padStart(9)} ${num(o.everDetected).padStart(6)} ${num(o.observableRecallAtEnd).padStart(9)}  |  ` +
        `${num(b.recallAtEnd).padStart(13)} ${num(b.everDetected).padStart(6)} ${num(b.observableRecallAtEnd).padStart(9)}`,
    );
  }
  L.push('  (recall: candidate after the test\'s last run = end; ever = candidate after some run; obs = failed on its own ≥ 2× outside outages)');
  L.push('');
  L.push('non-flaky (negatives)      n         |  ours: ever  end  quar  |  baseline: ever  end  quar');
  for (const row of CLASS_ROWS.filter((r) => !r.flaky)) {
    const c = classes[row.key]!;
    const o = c.models.ours as NonFlakyRowStats;
    const b = c.models.baseline as NonFlakyRowStats;
    L.push(
      `  ${row.label}`.padEnd(25) +
        String(c.count).padStart(4) +
        '       ' +
        `  |  ${String(o.everCandidates).padStart(10)} ${String(o.candidatesAtEnd).padStart(4)} ${String(o.quarantinedAtEnd).padStart(5)}  |  ` +
        `${String(b.everCandidates).padStart(14)} ${String(b.candidatesAtEnd).padStart(4)} ${String(b.quarantinedAtEnd).padStart(5)}`,
    );
  }
  L.push('  (ever: candidate after any run of the history; end: after its last run; quar: auto-quarantined at the end; rows in parentheses are derived subsets)');
  L.push('');
  const o = summary.ours;
  const b = summary.baseline;
  const line = (label: string, x: string, y: string): string => `  ${label}`.padEnd(50) + x.padEnd(34) + y;
  L.push(line('overall', 'ours', 'baseline'));
  L.push(line('precision / recall / F1 (end)', `${num(o.precision)} / ${num(o.recall)} / ${num(o.f1)}`, `${num(b.precision)} / ${num(b.recall)} / ${num(b.f1)}`));
  L.push(line('tp / fp / fn (end)', `${o.tp} / ${o.fp} / ${o.fn}`, `${b.tp} / ${b.fp} / ${b.fn}`));
  L.push(line('recall of observable flakes (end)', num(o.recallObservable), num(b.recallObservable)));
  L.push(line('ROC AUC (final score)', num(o.rocAuc), num(b.rocAuc)));
  L.push(line('non-flaky ever candidates', `${o.nonFlakyEverCandidates} (${num(o.nonFlakyEverCandidateShare)})`, `${b.nonFlakyEverCandidates} (${num(b.nonFlakyEverCandidateShare)})`));
  L.push(line('non-flaky quarantined at end', String(o.nonFlakyQuarantinedAtEnd), String(b.nonFlakyQuarantinedAtEnd)));
  L.push(line('recall observable 1–2% / 2–5% (end)', `${num(o.recallObservable1to2pct)} / ${num(o.recallObservable2to5pct)}`, `${num(b.recallObservable1to2pct)} / ${num(b.recallObservable2to5pct)}`));
  L.push(line('latency after strong evidence, med / p90', lat(o.latencyAfterStrongEvidence), lat(b.latencyAfterStrongEvidence)));
  L.push(line('latency after 2nd failure, no strong ev.', lat(o.latencyAfterSecondFailureNoStrongEvidence), lat(b.latencyAfterSecondFailureNoStrongEvidence)));
  L.push('  (latency: the test\'s own graded runs from the evidence to its first candidacy; "before" = candidate earlier, counted negative)');
  L.push('');
  L.push(`  ${'target'.padEnd(42)}${'goal'.padEnd(12)}${'ours'.padEnd(14)}baseline`);
  for (const t of TARGETS) {
    const mark = (s: ModelSummary): string => {
      const v = t.value(s);
      return `${num(v)} ${t.met(v) ? 'met' : 'MISSED'}`;
    };
    L.push(`  ${t.name.padEnd(42)}${t.goal.padEnd(12)}${mark(o).padEnd(14)}${mark(b)}`);
  }
  L.push('  (real breaks: regressions fixed or not, broken variants, skipped after break, one-PR breaks, outage victims)');
  return L.join('\n');
}

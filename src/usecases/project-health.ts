// Project health (GET /v1/health, the `health.metrics` procedure) over a window (docs/contract.md §6, §10) — flaky MTTR, introduced
// versus resolved per ISO week, quarantine backlog and its trend, daily reliability, and what
// flakiness costs. `owner` narrows every figure to the tests whose file the owner holds
// (CODEOWNERS resolved in memory, then `test_id IN`).
//
// What it reads, and from which tables, is src/store/project-health.ts.
import { z } from 'zod';
import { ownerMatches } from '../domain/codeowners.js';
import { effectiveQuarantine } from '../domain/quarantine.js';
import type { ServiceConfig } from '../config/service-yml.js';
import type { Store } from '../store/client.js';
import type { CodeownersRepo } from '../store/codeowners.js';
import { parseJobMatrixText } from '../../client/src/contract/ci-job.js';
import { jobKey, ProjectHealthRepo, reRunsOf } from '../store/project-health.js';
import type { TestRepo } from '../store/tests.js';

const DAY_MS = 86_400_000;

export const healthQuerySchema = z.object({
  days: z.coerce.number().int().min(1).max(365).default(90),
  owner: z.string().trim().min(1).optional(),
});

export const projectHealthSchema = z.object({
  rangeDays: z.number(),
  mttr: z.object({ resolvedCount: z.number(), openCount: z.number(), meanMs: z.number().nullable(), medianMs: z.number().nullable() }),
  weekly: z.array(z.object({ weekStart: z.string(), introduced: z.number(), resolved: z.number() })),
  quarantine: z.object({ currentBacklog: z.number(), trend: z.array(z.object({ day: z.string(), count: z.number() })) }),
  /** Days with executions; `passRate` is null on a day with fewer than MIN_PASS_RATE_EXECUTIONS graded ones (a gap, not a 0). */
  reliabilityTrend: z.array(z.object({ day: z.string(), passRate: z.number().nullable(), total: z.number() })),
  cost: z.object({
    /** ISO 4217 code of every amount (`cost.currency`). */
    currency: z.string(),
    ciSpend: z.number(),
    peopleSpend: z.number(),
    total: z.number(),
    /** Retried attempts (attempt > 1), ms. */
    rerunMs: z.number(),
    /** Whole-job re-runs: how many, and their CI time in ms (wall time less the retries inside, counted in rerunMs). */
    reRunCount: z.number(),
    reRunMs: z.number(),
    flakyOccurrences: z.number(),
    rates: z.object({ ciMinute: z.number(), developerHour: z.number(), investigationMinutes: z.number() }),
  }),
  /**
   * Per CI job (name and matrix values; a null name for runs that named none), most CI time first,
   * at most MAX_HEALTH_JOBS: its runs started in the window and their wall time (whole runs, any
   * trigger, with `owner` too), and its whole-job re-runs as `cost` counts them (with `owner`, the
   * owner's tests' first attempts in them).
   */
  jobs: z.array(
    z.object({
      name: z.string().nullable(),
      matrix: z.record(z.string(), z.string()).nullable(),
      runs: z.number(),
      ciMs: z.number(),
      reRunCount: z.number(),
      reRunMs: z.number(),
    }),
  ),
}).meta({ id: 'ProjectHealth' });
export type ProjectHealth = z.infer<typeof projectHealthSchema>;

export interface ProjectHealthDeps {
  store: Store;
  tests: TestRepo;
  codeowners: CodeownersRepo;
  service: ServiceConfig;
  /** The project's own policy (its settings' `cost`); `service` when absent. */
  projectConfig?: (projectId: string) => Promise<{ config: ServiceConfig }>;
}

export function dayText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Monday (UTC) of the ISO week holding `ms`, at 00:00. */
export function mondayOf(ms: number): number {
  const day = Math.floor(ms / DAY_MS) * DAY_MS;
  const weekday = (new Date(day).getUTCDay() + 6) % 7; // Monday = 0
  return day - weekday * DAY_MS;
}

/**
 * Each fix (in range) paired with the start of the episode it ends: the first `flaked` or `broke`
 * since the previous fix. A test that broke, then turned out flaky, then was fixed is one episode.
 */
export function repairTimes(events: readonly { testId: string; kind: string; at: number }[], rangeStart: number): number[] {
  const open = new Map<string, number>();
  const out: number[] = [];
  const starts = (kind: string): boolean => kind === 'flaked' || kind === 'broke';
  const sorted = [...events].sort((a, b) => a.at - b.at || (starts(a.kind) === starts(b.kind) ? 0 : starts(a.kind) ? -1 : 1));
  for (const e of sorted) {
    if (starts(e.kind)) {
      if (!open.has(e.testId)) open.set(e.testId, e.at);
    } else if (e.kind === 'fixed') {
      const since = open.get(e.testId);
      open.delete(e.testId);
      if (since !== undefined && e.at >= rangeStart) out.push(e.at - since);
    }
  }
  return out;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * The backlog at the end of each day (today: now), walking back from `current`: a `quarantined`
 * after that moment was not yet in the backlog, a `released` after it still was.
 */
export function backlogTrend(current: number, changes: readonly { at: number; delta: 1 | -1 }[], days: readonly number[]): { day: string; count: number }[] {
  const sorted = [...changes].sort((a, b) => b.at - a.at);
  const out: { day: string; count: number }[] = [];
  let count = current;
  let i = 0;
  for (let k = days.length - 1; k >= 0; k--) {
    const end = days[k]! + DAY_MS;
    while (i < sorted.length && sorted[i]!.at >= end) {
      count -= sorted[i]!.delta;
      i++;
    }
    out.push({ day: dayText(days[k]!), count: Math.max(0, count) });
  }
  return out.reverse();
}

function round(n: number, dp: number): number {
  const f = 10 ** dp;
  return Math.round(n * f) / f;
}

export async function projectHealth(d: ProjectHealthDeps, projectId: string, days: number, owner: string | undefined, now: number): Promise<ProjectHealth> {
  const repo = new ProjectHealthRepo(d.store);
  const service = d.projectConfig ? (await d.projectConfig(projectId)).config : d.service;
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const rangeStart = today - (days - 1) * DAY_MS;
  const dayList = Array.from({ length: days }, (_, i) => rangeStart + i * DAY_MS);

  // Owner filter: the owner's tests by their identity's file path.
  let ownerIds: string[] | null = null;
  if (owner !== undefined) {
    const [identities, owners] = await Promise.all([repo.testFiles(projectId), d.codeowners.resolver(projectId)]);
    ownerIds = identities.filter((i) => ownerMatches(owners(i.filePath), owner)).map((i) => i.id);
  }
  if (ownerIds !== null && ownerIds.length === 0) return emptyHealth(service, days, dayList, rangeStart, today);

  const [episodes, openCount, byWeek, autoIds, overrideIds, qEvents, daily, reRuns, jobRuns] = await Promise.all([
    repo.repairEvents(projectId, rangeStart, ownerIds),
    repo.openFlakyCount(projectId, ownerIds),
    repo.weeklyTransitions(projectId, rangeStart, ownerIds),
    repo.autoQuarantinedIds(projectId, ownerIds),
    repo.overriddenIds(projectId, ownerIds),
    repo.quarantineEvents(projectId, rangeStart, ownerIds),
    repo.dailyTotals(projectId, dayText(rangeStart), dayText(today), ownerIds),
    reRunTime(repo, projectId, rangeStart, ownerIds),
    repo.runsByJob(projectId, rangeStart, MAX_HEALTH_JOBS),
  ]);

  // MTTR
  const repairs = repairTimes(episodes, rangeStart);
  const mean = repairs.length > 0 ? repairs.reduce((a, b) => a + b, 0) / repairs.length : null;
  const med = median(repairs);

  // Introduced vs resolved, every ISO week of the window.
  const weekly: ProjectHealth['weekly'] = [];
  for (let w = mondayOf(rangeStart); w <= today; w += 7 * DAY_MS) {
    const r = byWeek.get(dayText(w));
    weekly.push({ weekStart: dayText(w), introduced: r?.introduced ?? 0, resolved: r?.resolved ?? 0 });
  }

  // Quarantine backlog now (automatic state and people's overrides), and walked back per day.
  const ids = [...new Set([...autoIds, ...overrideIds])];
  const [states, overrides] = await Promise.all([d.tests.states(projectId, ids), d.tests.overrides(projectId, ids)]);
  let currentBacklog = 0;
  // Both the scorer and people's decisions (POST …/quarantine) record quarantined/released events.
  const changes: { at: number; delta: 1 | -1 }[] = qEvents.map((e) => ({ at: e.at, delta: e.kind === 'quarantined' ? 1 : -1 }));
  for (const id of ids) {
    if (effectiveQuarantine(states.get(id)?.auto ?? null, overrides.get(id) ?? null).quarantined) currentBacklog++;
  }
  const trend = backlogTrend(currentBacklog, changes, dayList);

  // Reliability per day and cost over the window, from the daily rollup.
  const reliabilityTrend: ProjectHealth['reliabilityTrend'] = [];
  let rerunMs = 0;
  let flakyOccurrences = 0;
  for (const r of daily) {
    const graded = r.executions - r.skipped;
    rerunMs += r.rerunMs;
    flakyOccurrences += r.flaky;
    if (graded > 0) reliabilityTrend.push({ day: r.day, passRate: graded < MIN_PASS_RATE_EXECUTIONS ? null : round(r.passed / graded, 4), total: graded });
  }

  return {
    rangeDays: days,
    mttr: {
      resolvedCount: repairs.length,
      openCount,
      meanMs: mean === null ? null : Math.round(mean),
      medianMs: med === null ? null : Math.round(med),
    },
    weekly,
    quarantine: { currentBacklog, trend },
    reliabilityTrend,
    cost: costOf(service, rerunMs, flakyOccurrences, reRuns),
    jobs: jobRuns.map((j) => {
      const r = reRuns.byJob.get(j.job);
      return {
        name: j.name === '' ? null : j.name,
        matrix: parseJobMatrixText(j.matrix),
        runs: j.runs,
        ciMs: j.ms,
        reRunCount: r?.count ?? 0,
        reRunMs: r?.ms ?? 0,
      };
    }),
  };
}

/** Jobs in the health page's per-job breakdown, most CI time first. */
export const MAX_HEALTH_JOBS = 50;

/** Fewer graded executions than this on a day: its pass rate is a gap (null), too few to mean much. */
export const MIN_PASS_RATE_EXECUTIONS = 5;

/**
 * Whole-job re-runs in the window (see reRunsOf) and their CI time: a re-run's wall time less its
 * retried attempts (those are already billed as retries). With an owner, the owner's tests' first
 * attempts in those runs instead (a job's wall time is nobody's in particular).
 */
export async function reRunTime(
  repo: ProjectHealthRepo,
  projectId: string,
  startMs: number,
  ownerIds: readonly string[] | null,
): Promise<{ count: number; ms: number; byJob: Map<string, { count: number; ms: number }> }> {
  const reRuns = reRunsOf(await repo.runsOfRecentCommits(projectId, startMs), startMs);
  const byRun = await repo.attemptTimeByRun(projectId, reRuns.map((r) => r.id), ownerIds);
  let ms = 0;
  let count = 0;
  const byJob = new Map<string, { count: number; ms: number }>();
  for (const r of reRuns) {
    const t = byRun.get(r.id);
    let runMs: number;
    if (ownerIds !== null) {
      if (!t || t.firstMs === 0) continue;
      runMs = t.firstMs;
    } else runMs = Math.max(0, r.durationMs - (t?.retriedMs ?? 0));
    ms += runMs;
    count++;
    const job = r.job ?? jobKey('', '');
    const j = byJob.get(job) ?? { count: 0, ms: 0 };
    j.count++;
    j.ms += runMs;
    byJob.set(job, j);
  }
  return { count, ms, byJob };
}

/**
 * docs/contract.md §10: retried attempts and whole-job re-runs billed as CI minutes, each flaky
 * occurrence as an investigation; every amount in `cost.currency`.
 */
export function costOf(service: ServiceConfig, rerunMs: number, flakyOccurrences: number, reRuns: { count: number; ms: number } = { count: 0, ms: 0 }): ProjectHealth['cost'] {
  const rates = { ciMinute: service.cost.ciMinute, developerHour: service.cost.developerHour, investigationMinutes: service.cost.investigationMinutes };
  const ci = ((rerunMs + reRuns.ms) / 60_000) * rates.ciMinute;
  const people = ((flakyOccurrences * rates.investigationMinutes) / 60) * rates.developerHour;
  return {
    currency: service.cost.currency,
    ciSpend: round(ci, 4),
    peopleSpend: round(people, 4),
    total: round(ci + people, 4),
    rerunMs,
    reRunCount: reRuns.count,
    reRunMs: reRuns.ms,
    flakyOccurrences,
    rates,
  };
}

function emptyHealth(service: ServiceConfig, days: number, dayList: number[], rangeStart: number, today: number): ProjectHealth {
  const weekly: ProjectHealth['weekly'] = [];
  for (let w = mondayOf(rangeStart); w <= today; w += 7 * DAY_MS) weekly.push({ weekStart: dayText(w), introduced: 0, resolved: 0 });
  return {
    rangeDays: days,
    mttr: { resolvedCount: 0, openCount: 0, meanMs: null, medianMs: null },
    weekly,
    quarantine: { currentBacklog: 0, trend: dayList.map((day) => ({ day: dayText(day), count: 0 })) },
    reliabilityTrend: [],
    cost: costOf(service, 0, 0),
    jobs: [],
  };
}

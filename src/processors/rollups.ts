// `rollups` processor: the daily rollups themselves are materialized views filled at insert time
// (daily_test_stats, suite_daily, flaky_trends); this stage watches them for suite regressions and
// slowdowns. It compares a suite's day with this lease included against its trailing 14 days and
// emits suite.regressed / suite.slowed when the lease makes the day cross the line (once a day).
import { z } from 'zod';
import { stableUuid } from '../../client/src/contract/ids.js';
import { suiteAlerts, type SuiteDay } from '../domain/suite-alerts.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import type { WorkBatch } from '../pipeline/work-batch.js';
import type { SuiteHistory } from '../store/rollups.js';

export const rollupsProcessorFactory = defineProcessor({
  type: 'rollups',
  description: 'suite regressions and slowdowns against the daily rollups (suite.regressed, suite.slowed)',
  configSchema: z.object({}).strict(),
  // Counts the lease's executions per suite and day.
  requires: ['executions'],
  provides: ['suiteAlerts'],
  start: (host, _cfg, { id }) => {
    const repo = host.extensions.repositories('processor', id).rollups;
    // Today's and the trailing 14 days' suite totals per project, read once a day and then kept up
    // to date from each committed lease (the worker is the only writer of executions).
    const histories = new Map<string, Map<string, SuiteHistory>>();
    const pendingByBatch = new WeakMap<WorkBatch, { key: string; suites: { suite: string; d: SuiteDay }[] }[]>();
    return {
      committed(batch) {
        for (const { key, suites } of pendingByBatch.get(batch) ?? []) {
          const h = histories.get(key);
          if (!h) continue;
          for (const { suite, d } of suites) {
            const entry = h.get(suite) ?? { today: { executions: 0, failed: 0, durationMsSum: 0 }, prior: [] };
            entry.today = add(entry.today, d);
            h.set(suite, entry);
          }
        }
      },
      async processBatch(batch) {
        // This lease's contribution per (project, suite, day), as the suite_daily view will count it.
        const lease = new Map<string, { projectId: string; suite: string; day: string; d: SuiteDay }>();
        for (const item of batch.items) {
          for (const e of item.executions) {
            if (e.input.status === 'skip') continue;
            const day = new Date(e.input.startedAt).toISOString().slice(0, 10);
            const key = `${e.projectId}\u0000${e.input.suite}\u0000${day}`;
            let g = lease.get(key);
            if (!g) {
              g = { projectId: e.projectId, suite: e.input.suite, day, d: { executions: 0, failed: 0, durationMsSum: 0 } };
              lease.set(key, g);
            }
            g.d.executions++;
            if (e.input.status === 'fail') g.d.failed++;
            g.d.durationMsSum += e.input.durationMs;
          }
        }
        // Only the lease's newest day per suite can newly cross a line today.
        const today = new Date(batch.now).toISOString().slice(0, 10);
        const byProject = new Map<string, { suite: string; d: SuiteDay }[]>();
        for (const g of lease.values()) {
          if (g.day !== today) continue;
          const list = byProject.get(g.projectId) ?? [];
          list.push({ suite: g.suite, d: g.d });
          byProject.set(g.projectId, list);
        }
        const pending: { key: string; suites: { suite: string; d: SuiteDay }[] }[] = [];
        for (const [projectId, suites] of byProject) {
          const key = `${projectId}:${today}`;
          let history = histories.get(key);
          if (!history) {
            // A new day (or a first sight): forget other days, read this one's history once.
            for (const k of histories.keys()) if (!k.endsWith(`:${today}`) || histories.size > 1000) histories.delete(k);
            history = await repo.suiteHistory(projectId, today);
            histories.set(key, history);
          }
          pending.push({ key, suites });
          for (const { suite, d } of suites) {
            const h = history.get(suite) ?? { today: { executions: 0, failed: 0, durationMsSum: 0 }, prior: [] };
            const after = add(h.today, d);
            const before = new Set(suiteAlerts(h.today, h.prior).map((a) => a.kind));
            for (const alert of suiteAlerts(after, h.prior)) {
              if (before.has(alert.kind)) continue;
              batch.emit(projectId, {
                id: stableUuid(`suite.${alert.kind}`, projectId, suite, today),
                type: alert.kind === 'regressed' ? 'suite.regressed' : 'suite.slowed',
                projectId,
                occurredAt: batch.now,
                data: { suite, day: today, today: round(alert.today), baseline: round(alert.baseline) },
              });
            }
          }
        }
        pendingByBatch.set(batch, pending);
      },
    };
  },
});

function add(a: SuiteDay, b: SuiteDay): SuiteDay {
  return { executions: a.executions + b.executions, failed: a.failed + b.failed, durationMsSum: a.durationMsSum + b.durationMsSum };
}

function round<T extends Record<string, number>>(o: T): T {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v * 1000) / 1000])) as T;
}

// `rollups` processor: the daily rollups themselves are materialized views filled at insert time
// (daily_test_stats, suite_daily, flaky_trends); this stage watches them for suite regressions and
// slowdowns. It compares a suite's day with this lease included against its trailing 14 days and
// emits suite.regressed / suite.slowed when the lease makes the day cross the line (once a day).
import { z } from 'zod';
import { stableUuid } from '../domain/ids.js';
import { suiteAlerts, type SuiteDay } from '../domain/suite-alerts.js';
import type { Host, ProcessorFactory, WorkBatch } from '../pipeline/component.js';
import { toNumber, type Store } from '../store/client.js';

const DAY = 86_400_000;

export const rollupsProcessorFactory: ProcessorFactory<Record<string, never>> = {
  kind: 'processor',
  type: 'rollups',
  description: 'suite regressions and slowdowns against the daily rollups (suite.regressed, suite.slowed)',
  signals: ['executions'],
  configSchema: z.object({}).strict(),
  createExecutions: () => {
    let store: Store | undefined;
    // Today's and the trailing 14 days' suite totals per project, read once a day and then kept up
    // to date from each committed lease (the worker is the only writer of executions).
    const histories = new Map<string, Map<string, SuiteHistory>>();
    const pendingByBatch = new WeakMap<WorkBatch, { key: string; suites: { suite: string; d: SuiteDay }[] }[]>();
    return {
      async start(host: Host) {
        store = host.store;
      },
      async shutdown() {},
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
        if (!store) throw new Error('rollups processor used before start');
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
            history = await suiteHistory(store, projectId, today);
            histories.set(key, history);
          }
          pending.push({ key, suites });
          const item = batch.items.find((i) => i.job.projectId === projectId)!;
          for (const { suite, d } of suites) {
            const h = history.get(suite) ?? { today: { executions: 0, failed: 0, durationMsSum: 0 }, prior: [] };
            const after = add(h.today, d);
            const before = new Set(suiteAlerts(h.today, h.prior).map((a) => a.kind));
            for (const alert of suiteAlerts(after, h.prior)) {
              if (before.has(alert.kind)) continue;
              item.events.push({
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
};

interface SuiteHistory {
  today: SuiteDay;
  prior: SuiteDay[];
}

function add(a: SuiteDay, b: SuiteDay): SuiteDay {
  return { executions: a.executions + b.executions, failed: a.failed + b.failed, durationMsSum: a.durationMsSum + b.durationMsSum };
}

/** Every suite of the project with rows in the 15 days up to `today`. */
async function suiteHistory(store: Store, projectId: string, today: string): Promise<Map<string, SuiteHistory>> {
  const rows = await store.query<{ suite: string; day_text: string; executions: number | string; failed: number | string; duration: number | string }>(
    `SELECT suite, toString(day) AS day_text, sum(executions) AS executions, sum(failed) AS failed, sum(duration_ms_sum) AS duration
     FROM ${store.table('suite_daily')}
     WHERE project_id = {projectId:UUID}
       AND day BETWEEN toDate({today:String}) - 14 AND toDate({today:String})
     GROUP BY suite, day_text`,
    { projectId, today },
  );
  const out = new Map<string, SuiteHistory>();
  const start = Date.parse(`${today}T00:00:00Z`) - 14 * DAY;
  for (const r of rows) {
    const entry = out.get(r.suite) ?? { today: { executions: 0, failed: 0, durationMsSum: 0 }, prior: [] };
    const d = { executions: toNumber(r.executions), failed: toNumber(r.failed), durationMsSum: toNumber(r.duration) };
    if (r.day_text === today) entry.today = d;
    else if (Date.parse(`${r.day_text}T00:00:00Z`) >= start) entry.prior.push(d);
    out.set(r.suite, entry);
  }
  return out;
}

function round<T extends Record<string, number>>(o: T): T {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v * 1000) / 1000])) as T;
}

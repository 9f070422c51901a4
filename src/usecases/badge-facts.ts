// What a project's README badges show (docs/contract.md §6): its pass rate over the health window,
// its flaky and quarantined tests, and the worst flaky one. The badge route (src/api/routes/badge.ts)
// caches the answer briefly: badges are fetched by anyone who views a README.
import { HEALTH_WINDOW_DAYS, type BadgeFacts } from '../../client/src/contract/badge.js';
import { effectiveQuarantine } from '../domain/quarantine.js';
import type { BadgeFactsRepo } from '../store/badges.js';
import type { TestRepo } from '../store/tests.js';

const DAY_MS = 86_400_000;

export interface BadgeFactsDeps {
  facts: Pick<BadgeFactsRepo, 'flaggedTestIds' | 'passTotals'>;
  tests: Pick<TestRepo, 'overrides' | 'states'>;
}

export async function badgeFacts(d: BadgeFactsDeps, projectId: string, now: number): Promise<BadgeFacts> {
  const startDay = new Date(Math.floor(now / DAY_MS) * DAY_MS - (HEALTH_WINDOW_DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
  const [flagged, overrides, totals] = await Promise.all([d.facts.flaggedTestIds(projectId), d.tests.overrides(projectId, null), d.facts.passTotals(projectId, startDay)]);
  const ids = [...new Set([...flagged, ...overrides.keys()])];
  const states = await d.tests.states(projectId, ids);
  let flaky = 0;
  let quarantined = 0;
  let worst: BadgeFacts['worst'] = null;
  for (const id of ids) {
    const s = states.get(id) ?? null;
    if (effectiveQuarantine(s?.auto ?? null, overrides.get(id) ?? null).quarantined) {
      quarantined++;
      continue;
    }
    if (!s?.candidate) continue;
    flaky++;
    if (!worst || s.score > worst.score) worst = { suite: s.suite, title: s.title, score: s.score };
  }
  return { passRate: totals.graded > 0 ? totals.passed / totals.graded : null, flaky, quarantined, worst };
}

import { describe, expect, it } from 'vitest';
import { suiteAlerts } from '../../src/domain/suite-alerts.js';

const day = (executions: number, failed: number, avgMs: number) => ({ executions, failed, durationMsSum: executions * avgMs });

describe('suiteAlerts (docs/contract.md §10)', () => {
  it('regressed: ≥ 20 today, a full prior day, fail rate ≥ 0.10 and ≥ baseline + 0.15', () => {
    const prior = [day(40, 2, 100), day(30, 1, 100)];
    expect(suiteAlerts(day(25, 6, 100), prior).map((a) => a.kind)).toEqual(['regressed']);
    // 0.16 today vs 0.043 baseline is +0.117 only
    expect(suiteAlerts(day(25, 4, 100), prior)).toEqual([]);
    // below 20 executions today: never
    expect(suiteAlerts(day(19, 19, 100), prior)).toEqual([]);
    // no prior day with ≥ 20 executions: no baseline, no alert
    expect(suiteAlerts(day(25, 20, 100), [day(10, 0, 100)])).toEqual([]);
  });

  it('slowed: average ≥ 500 ms and ≥ 1.3 × the baseline average', () => {
    const prior = [day(40, 0, 400)];
    const [alert] = suiteAlerts(day(30, 0, 600), prior);
    expect(alert).toMatchObject({ kind: 'slowed', today: { executions: 30, avgMs: 600 }, baseline: { avgMs: 400, days: 1 } });
    expect(suiteAlerts(day(30, 0, 510), prior)).toEqual([]); // < 1.3 × 400
    expect(suiteAlerts(day(30, 0, 450), [day(40, 0, 100)])).toEqual([]); // < 500 ms
  });

  it('reports both when both lines are crossed', () => {
    expect(suiteAlerts(day(30, 15, 900), [day(40, 0, 300)]).map((a) => a.kind)).toEqual(['regressed', 'slowed']);
  });
});

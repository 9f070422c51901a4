// A test's quarantine over time: the transitions the scorer and people caused (test_health_events:
// flaked, broke, fixed, quarantined, released), newest last. People's reasons live with their latest
// decision (quarantine_overrides keeps one row per test), which the caller shows beside the log.
import { toIso } from '../../client/src/contract/time.js';
import type { HealthEventKind } from '../domain/processor-outputs.js';
import { toNumber, type Store } from './client.js';

export { HEALTH_EVENT_KINDS, type HealthEventKind } from '../domain/processor-outputs.js';

export interface HealthEvent {
  kind: HealthEventKind;
  at: string;
  score: number;
}

export class QuarantineLogRepo {
  constructor(private readonly store: Store) {}

  async events(projectId: string, testId: string, limit: number): Promise<HealthEvent[]> {
    const rows = await this.store.query<{ kind: HealthEventKind; at_ms: number | string; score: number }>(
      `SELECT kind, toUnixTimestamp64Milli(at) AS at_ms, score FROM (
         SELECT kind, at, score FROM ${this.store.table('test_health_events')} FINAL
         WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID}
         ORDER BY at DESC, kind LIMIT {limit:UInt32})
       ORDER BY at, kind`,
      { projectId, testId, limit },
    );
    return rows.map((r) => ({ kind: r.kind, at: toIso(toNumber(r.at_ms)), score: Math.round(toNumber(r.score) * 10_000) / 10_000 }));
  }
}

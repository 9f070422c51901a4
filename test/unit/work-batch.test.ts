// The work batch's typed outputs as the clickhouse exporter writes them (the rows processors used to
// build themselves), the batch's events, and defineProcessor's lifecycle.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { emptyScoreState } from '../../src/domain/score.js';
import { processorRows } from '../../src/exporters/clickhouse.js';
import type { Host } from '../../src/pipeline/component.js';
import { defineProcessor } from '../../src/pipeline/helpers/processor.js';
import { WorkBatch, type TestUpdate } from '../../src/pipeline/work-batch.js';
import type { TestStateRecord } from '../../src/store/tests.js';

const P = '11111111-1111-4111-8111-111111111111';
const T = '22222222-2222-4222-8222-222222222222';
const AT = Date.UTC(2026, 0, 2, 3, 4, 5, 6);

function state(testId: string): TestStateRecord {
  return {
    projectId: P,
    testId,
    filePath: 'src/a.test.ts',
    suite: 'A',
    title: 't',
    score: 0.5,
    candidate: true,
    broken: false,
    samples: 3,
    flipRate: 0.5,
    passOnRerunRate: 0,
    trend: 'stable',
    lastFlakedAt: null,
    state: 'flaky',
    stateSince: { commitSha: 'abc1234', branch: 'main', at: AT },
    flakeRate: 0.25,
    reasons: [],
    model: emptyScoreState(),
    auto: { autoQuarantined: false, reason: '', quarantinedAt: null, cleanRuns: 0, scoredAt: null, releasedAt: null },
    lastRunId: 'r',
    lastStatus: 'fail',
    lastSeenAt: AT,
    appliedLease: 'lease-1',
    version: 1,
  };
}

const update = (testId: string, persist: boolean, alreadyApplied: boolean): TestUpdate => ({ record: state(testId), previous: null, outcome: { runs: [] }, alreadyApplied, persist });

describe('processorRows: the typed outputs as table rows', () => {
  it('maps each output to its table, in table-name order, times as ClickHouse text, tables without rows left out', () => {
    const batch = new WorkBatch({ leaseId: 'lease-1', items: [], now: AT });
    expect([...processorRows(batch).keys()]).toEqual([]);
    batch.healthEvents.push({ projectId: P, testId: T, kind: 'flaked', at: AT, score: 0.5 });
    batch.signatures.push({
      projectId: P,
      signatureId: 'abcdef0123456789',
      clusterId: 'abcdef0123456789',
      errorType: 'AssertionError',
      normalizedMessage: 'expected <n> to be <n>',
      frames: ['a.ts'],
      sketch: Uint32Array.from([1, 2, 3]),
      bandKeys: ['k1', 'k2'],
      similarity: 1,
      firstSeenAt: AT,
      exampleExecutionId: 'e1',
    });
    batch.aliases.push({ projectId: P, fingerprint: 'fp', testId: T, createdAt: AT });
    batch.stitches.push({ projectId: P, testId: T, level: 'L2', fromFilePath: 'old.ts', fromTitle: 't', toFilePath: 'new.ts', toTitle: 't', confidence: 1, createdAt: AT });
    batch.testStates.set(`${P}:a`, update('a', true, false));
    batch.testStates.set(`${P}:b`, update('b', false, false)); // written behind
    batch.testStates.set(`${P}:c`, update('c', true, true)); // a redelivery: already stored

    const rows = processorRows(batch);
    expect([...rows.keys()]).toEqual(['error_signatures', 'identity_aliases', 'identity_stitches', 'signature_bands', 'test_health_events', 'test_state']);
    const time = '1767323045.006';
    expect(rows.get('test_health_events')).toEqual([{ project_id: P, test_id: T, kind: 'flaked', at: time, score: 0.5 }]);
    expect(rows.get('identity_aliases')).toEqual([{ project_id: P, fingerprint: 'fp', test_id: T, created_at: time }]);
    expect(rows.get('identity_stitches')).toEqual([
      { project_id: P, test_id: T, level: 'L2', from_file_path: 'old.ts', from_title: 't', to_file_path: 'new.ts', to_title: 't', confidence: 1, created_at: time },
    ]);
    expect(rows.get('error_signatures')).toEqual([
      {
        project_id: P,
        signature_id: 'abcdef0123456789',
        cluster_id: 'abcdef0123456789',
        error_type: 'AssertionError',
        normalized_message: 'expected <n> to be <n>',
        frames: ['a.ts'],
        sketch: [1, 2, 3],
        similarity: 1,
        first_seen_at: time,
        example_execution: 'e1',
      },
    ]);
    expect(rows.get('signature_bands')).toEqual([
      { project_id: P, band_key: 'k1', signature_id: 'abcdef0123456789' },
      { project_id: P, band_key: 'k2', signature_id: 'abcdef0123456789' },
    ]);
    expect(rows.get('test_state')?.map((r) => r.test_id)).toEqual(['a']);
  });
});

describe('WorkBatch events', () => {
  it('keeps each project’s events in emission order, projects in the order of their first event', () => {
    const batch = new WorkBatch({ leaseId: 'l', items: [], now: AT });
    const ev = (projectId: string, id: string) => ({ id, type: 'identity.created', projectId, occurredAt: AT, data: {} }) as never;
    batch.emit('p2', ev('p2', 'a'));
    batch.emit('p1', ev('p1', 'b'));
    batch.emit('p2', ev('p2', 'c'));
    expect(batch.emittingProjects()).toEqual(['p2', 'p1']);
    expect(batch.emitted('p2').map((e) => e.id)).toEqual(['a', 'c']);
    expect(batch.emitted('p1').map((e) => e.id)).toEqual(['b']);
    expect(batch.emitted('p3')).toEqual([]);
  });
});

describe('defineProcessor', () => {
  const host = { marker: 'host' } as unknown as Host;
  const settings = { id: 'counting/x', logger: undefined as never };

  it('builds an executions processor factory whose start gets the host and the config, and whose stages reach what start returned', async () => {
    const calls: string[] = [];
    const factory = defineProcessor({
      type: 'counting',
      description: 'counts leases',
      configSchema: z.object({ step: z.number().default(2) }).strict(),
      start: (h, cfg, s) => {
        calls.push(`start ${(h as unknown as { marker: string }).marker} ${cfg.step} ${s.id}`);
        let seen = 0;
        return {
          async processBatch(batch) {
            seen += cfg.step;
            calls.push(`process ${batch.leaseId} ${seen}`);
          },
          committed(batch) {
            calls.push(`committed ${batch.leaseId}`);
          },
          async shutdown() {
            calls.push('shutdown');
          },
        };
      },
    });
    expect(factory).toMatchObject({ kind: 'processor', type: 'counting', description: 'counts leases', signals: ['executions'] });
    const config = factory.configSchema.parse({});
    const proc = factory.createExecutions!(config, settings);
    const batch = new WorkBatch({ leaseId: 'l1', items: [], now: AT });
    await expect(proc.processBatch(batch)).rejects.toThrow('counting processor used before start');
    await proc.start(host);
    await proc.processBatch(batch);
    proc.committed?.(batch);
    await proc.processBatch(new WorkBatch({ leaseId: 'l2', items: [], now: AT }));
    await proc.shutdown();
    expect(calls).toEqual(['start host 2 counting/x', 'process l1 2', 'committed l1', 'process l2 4', 'shutdown']);
  });

  it('needs no committed or shutdown of its own, and shuts down cleanly when never started', async () => {
    const factory = defineProcessor({
      type: 'plain',
      description: 'does nothing',
      configSchema: z.object({}).strict(),
      start: () => ({ async processBatch() {} }),
    });
    const never = factory.createExecutions!({}, settings);
    await expect(never.shutdown()).resolves.toBeUndefined();
    const proc = factory.createExecutions!({}, settings);
    await proc.start(host);
    const batch = new WorkBatch({ leaseId: 'l', items: [], now: AT });
    await proc.processBatch(batch);
    expect(() => proc.committed?.(batch)).not.toThrow();
    await expect(proc.shutdown()).resolves.toBeUndefined();
  });
});

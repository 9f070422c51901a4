// `scoring` processor: updates the flakiness model of every test a lease touches, from that
// test's attempts in each run (docs/architecture.md "Identity, scoring, clustering"). The cost per lease is one state read and one
// state write per touched test: it does not grow with a test's history.
import { z } from 'zod';
import type { DomainEvent } from '../domain/events.js';
import { stableUuid } from '../../client/src/contract/ids.js';
import { applyObservation, emptyScoreState, scoreOf, type Observation } from '../domain/score.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import type { TestUpdate, WorkBatch } from '../pipeline/work-batch.js';
import { Yielder } from '../pipeline/yield.js';
import type { ServiceConfig } from '../config/service-yml.js';
import type { TestStateRecord } from '../store/tests.js';
import type { TestStatus } from '../../client/src/contract/batch.js';
import { VERIFY_ATTRIBUTE } from '../../client/src/contract/verify.js';
import { WriteBehindCache } from '../domain/write-behind-cache.js';
import { ShapePacker } from '../domain/shape-packer.js';

/** Smallest score change worth a `score.updated` event (stable tests would otherwise emit one per run). */
const SCORE_EPSILON = 0.01;

interface Touched {
  projectId: string;
  testId: string;
  filePath: string;
  suite: string;
  title: string;
  observations: Observation[];
  /** Per graded run: every attempt passed. */
  cleanRuns: { at: number; clean: boolean }[];
  lastRunId: string;
  lastStatus: TestStatus;
  lastSeenAt: number;
}

/** Groups a lease's executions by test: one observation per (test, run), attempts in order. */
export function collectObservations(batch: WorkBatch): Map<string, Touched> {
  const touched = new Map<string, Touched>();
  for (const item of batch.items) {
    const run = item.run;
    const runFailRatio = run.counts.total > 0 ? run.counts.failed / run.counts.total : 0;
    // Failures hidden by retries still say "outage" when most of the run needed them.
    const runFlakyRatio = run.counts.total > 0 ? run.counts.flaky / run.counts.total : 0;
    const perTest = new Map<string, { statuses: { attempt: number; status: TestStatus; at: number }[]; e: (typeof item.executions)[number]; fix: { runs: number; failed: number } }>();
    for (const e of item.executions) {
      let entry = perTest.get(e.testId);
      const a = { attempt: e.input.attempt, status: e.input.status, at: e.input.startedAt };
      if (entry) entry.statuses.push(a);
      else perTest.set(e.testId, (entry = { statuses: [a], e, fix: { runs: 0, failed: 0 } }));
      // `--verify-fix` re-runs (their attempts are evidence like any other; all passing is a verified fix).
      if (e.input.attributes?.[VERIFY_ATTRIBUTE] === 'fix' && e.input.status !== 'skip') {
        entry.fix.runs++;
        if (e.input.status !== 'pass') entry.fix.failed++;
      }
    }
    for (const [testId, { statuses, e, fix }] of perTest) {
      statuses.sort((x, y) => x.attempt - y.attempt || x.at - y.at);
      const attempts = statuses.map((s) => s.status);
      const key = `${run.projectId}:${testId}`;
      let t = touched.get(key);
      if (!t) {
        t = { projectId: run.projectId, testId, filePath: e.input.filePath, suite: e.input.suite, title: e.input.title, observations: [], cleanRuns: [], lastRunId: run.id, lastStatus: 'skip', lastSeenAt: 0 };
        touched.set(key, t);
      }
      t.observations.push({
        runId: run.id,
        commitSha: run.resource.commitSha,
        ciRunKey: run.resource.ciRunId ? `${run.resource.ciProvider}:${run.resource.ciRunId}` : null,
        branch: run.resource.branch,
        prNumber: run.resource.prNumber ?? null,
        baseBranch: run.resource.baseBranch ?? null,
        mergeBase: run.resource.mergeBase ?? null,
        at: run.startedAt,
        attempts,
        runFailRatio,
        runFlakyRatio,
        runTestCount: run.counts.total,
        ...(fix.runs > 0 ? { verifiedFix: fix.failed === 0 } : {}),
      });
      if (attempts.some((s) => s !== 'skip')) t.cleanRuns.push({ at: run.startedAt, clean: attempts.every((s) => s === 'pass' || s === 'skip') });
      if (run.startedAt >= t.lastSeenAt) {
        t.lastSeenAt = run.startedAt;
        t.lastRunId = run.id;
        const last = attempts[attempts.length - 1]!;
        t.lastStatus = last === 'pass' && attempts.includes('fail') ? 'flaky' : last;
      }
    }
  }
  for (const t of touched.values()) {
    t.observations.sort((a, b) => a.at - b.at);
    t.cleanRuns.sort((a, b) => a.at - b.at);
  }
  return touched;
}

export function scoringPolicy(service: ServiceConfig): { threshold: number; minSamples: number } {
  return { threshold: service.flaky.threshold, minSamples: service.flaky.minSamples };
}

export const scoringConfigSchema = z
  .object({
    // Test states kept in memory between runs, ~2-3 KB each. Tests beyond it have their states read
    // back and written on every run, which costs more than keeping them: a second 100,000-test
    // report took 19.1 against 7.6 s and peaked higher with 32,768 kept (docs/pipeline.md "Scoring").
    state_cache_size: z.number().int().min(0).default(200_000),
    // Of those, the most recently set kept as objects; older ones are kept packed, ~1-1.7 KB each
    // against 3-4 KB (src/domain/shape-packer.ts). Off unless set below state_cache_size: packing
    // and unpacking took a second 100,000-test report from ~8 to ~14 s with 32,768 (docs/pipeline.md).
    state_cache_hot: z.number().int().min(1).default(200_000),
  })
  .strict();

/** A kept state not set again for this long may give its place to a new one (WriteBehindCache). */
const STATE_CACHE_IDLE_MS = 10 * 60_000;


export const scoringProcessorFactory = defineProcessor({
  type: 'scoring',
  description: 'updates each touched test’s flakiness score and reason codes (score.updated, flaky.detected)',
  configSchema: scoringConfigSchema,
  // Groups executions by test id (identity's) and weighs them by the run's counts.
  requires: ['runs', 'executions'],
  provides: ['testStates', 'healthEvents'],
  start: (host, cfg, { id }) => {
    const repo = host.extensions.repositories('processor', id).tests;
    // The worker is the only writer of test_state: a committed state can be kept in memory and
    // saves the read (and the JSON decode of the model) next time the test runs. It also lets
    // clean passes that change nothing visible be written behind (see WRITE_BEHIND_*): most tests
    // pass most of the time, and rewriting their state every run doubled the write volume. A crash
    // loses at most those clean runs (the executions themselves are stored), and the model
    // continues from the last written state.
    const packer = new ShapePacker<TestStateRecord>();
    const cache = new WriteBehindCache<TestStateRecord>(cfg.state_cache_size, STATE_CACHE_IDLE_MS, {
      hot: cfg.state_cache_hot,
      pack: (r) => packer.pack(r),
      unpack: (text) => packer.unpack(text),
    });
    let lastFlush = Date.now();
    return {
      committed(batch) {
        const now = Date.now();
        // The lease's states are keyed as the cache is: no key is built again.
        for (const [key, u] of batch.testStates) {
          if (u.flushed) {
            cache.written(key);
            continue;
          }
          const dirty = u.persist ? 0 : cache.dirtyOf(key) + 1;
          cache.set(key, u.record, dirty, now);
        }
      },
      async processBatch(batch) {
        const touched = collectObservations(batch);
        // Per project, each touched test with its `${projectId}:${testId}` key (built once: the
        // cache and the lease's states are keyed by it, for every test of every lease).
        const byProject = new Map<string, [string, Touched][]>();
        for (const entry of touched) {
          const list = byProject.get(entry[1].projectId);
          if (list) list.push(entry);
          else byProject.set(entry[1].projectId, [entry]);
        }
        const y = new Yielder(500);
        const now = Date.now();
        for (const [projectId, tests] of byProject) {
          // Each project's own flaky.threshold / minSamples (its settings may differ from service.yml).
          const params = scoringPolicy((await host.projectConfig(projectId)).config);
          const stored = new Map<string, TestStateRecord>();
          // One cache lookup per test: its hit, or undefined for a state to read.
          const hits = tests.map(([key]) => cache.peek(key));
          const missing: string[] = [];
          tests.forEach(([, t], i) => {
            if (!hits[i]) missing.push(t.testId);
          });
          if (missing.length > 0) for (const [id, st] of await repo.states(projectId, missing)) stored.set(id, st);
          for (const [i, [key, t]] of tests.entries()) {
            const testId = t.testId;
            const hit = hits[i];
            const prev = hit?.record ?? stored.get(testId) ?? null;
            // A state the cache will not keep is written now: its clean runs have nowhere to wait.
            const unwritten = cache.wouldKeep(key, now) ? (hit?.dirty ?? 0) : WRITE_BEHIND_RUNS;
            const update = scoreTest(t, prev, batch, params, unwritten);
            batch.testStates.set(key, update);
            if (!update.alreadyApplied) {
              for (const event of scoreEvents(update, batch.now)) batch.emit(projectId, event);
              const h = healthTransition(update);
              // Dated where the state began (the run that broke, fixed or made it flaky), not when the
              // lease ran: a lease can hold many runs, and time to fix is measured between them.
              if (h) batch.healthEvents.push({ projectId, testId, kind: h, at: update.record.stateSince?.at ?? batch.now, score: update.record.score });
            }
            await y.tick();
          }
        }
        // States the cache let go with clean runs unwritten go out with this lease; so do, now and
        // then, those it keeps (write-behind flush).
        const flush = (states: Iterable<[string, TestStateRecord]>): void => {
          for (const [key, record] of states) {
            if (!batch.testStates.has(key)) batch.testStates.set(key, { record, previous: record, outcome: { runs: [] }, alreadyApplied: false, persist: true, flushed: true });
          }
        };
        flush(cache.unwrittenEntries());
        if (Date.now() - lastFlush >= WRITE_BEHIND_MS) {
          lastFlush = Date.now();
          flush(cache.dirtyEntries());
        }
      },
    };
  },
});

/** Clean runs a state may stay unwritten, and how long, before it is written anyway. */
const WRITE_BEHIND_RUNS = 20;
const WRITE_BEHIND_MS = 60_000;

function scoreTest(t: Touched, prev: TestStateRecord | null, batch: WorkBatch, params: { threshold: number; minSamples: number }, unwritten: number): TestUpdate {
  const outcome = { runs: t.cleanRuns.map((c) => c.clean) };
  if (prev && prev.appliedLease === batch.leaseId) return { record: prev, previous: prev, outcome, alreadyApplied: true, persist: false };
  let model = prev?.model ?? emptyScoreState();
  for (const o of t.observations) model = applyObservation(model, o, params);
  const r = scoreOf(model, batch.now, params);
  const record: TestStateRecord = {
    projectId: t.projectId,
    testId: t.testId,
    filePath: t.filePath,
    suite: t.suite,
    title: t.title,
    score: r.score,
    candidate: r.candidate,
    broken: r.broken,
    samples: r.samples,
    flipRate: r.flipRate,
    passOnRerunRate: r.passOnRerunRate,
    trend: r.trend,
    lastFlakedAt: r.lastFlakedAt,
    state: r.state,
    stateSince: r.stateSince,
    flakeRate: r.flakeRate,
    reasons: r.reasons,
    model,
    // The quarantine processor decides the automatic state; until then it carries over.
    auto: prev?.auto ?? { autoQuarantined: false, reason: '', quarantinedAt: null, cleanRuns: 0, scoredAt: null, releasedAt: null },
    lastRunId: t.lastRunId,
    lastStatus: t.lastStatus,
    lastSeenAt: Math.max(t.lastSeenAt, prev?.lastSeenAt ?? 0),
    appliedLease: batch.leaseId,
    version: Math.max((prev?.version ?? 0) + 1, batch.now),
  };
  const eventful = t.observations.some((o) => o.attempts.some((a) => a !== 'pass' && a !== 'skip'));
  const visible =
    !prev ||
    Math.abs(record.score - prev.score) >= SCORE_EPSILON ||
    record.candidate !== prev.candidate ||
    record.broken !== prev.broken ||
    record.state !== prev.state ||
    record.trend !== prev.trend ||
    record.reasons[0]?.code !== prev.reasons[0]?.code;
  const persist = visible || eventful || unwritten + t.observations.length >= WRITE_BEHIND_RUNS;
  return { record, previous: prev, outcome, alreadyApplied: false, persist };
}

function scoreEvents(u: TestUpdate, now: number): DomainEvent[] {
  const { record: r, previous: p } = u;
  const out: DomainEvent[] = [];
  const moved = !p || Math.abs(r.score - p.score) >= SCORE_EPSILON || r.candidate !== p.candidate || r.state !== p.state || r.reasons[0]?.code !== p.reasons[0]?.code;
  const transition = healthTransition(u);
  if (moved) {
    out.push({
      id: stableUuid('score.updated', r.projectId, r.testId, r.appliedLease),
      type: 'score.updated',
      projectId: r.projectId,
      occurredAt: now,
      data: {
        testIdentityId: r.testId,
        score: r.score,
        previousScore: p?.score ?? null,
        candidate: r.candidate,
        state: r.state,
        previousState: p?.state ?? null,
        stateSince: r.stateSince,
        reasonCodes: r.reasons.map((x) => x.code),
        transition,
      },
    });
  }
  if (r.candidate && !p?.candidate) {
    out.push({
      id: stableUuid('flaky.detected', r.projectId, r.testId, r.appliedLease),
      type: 'flaky.detected',
      projectId: r.projectId,
      occurredAt: now,
      data: { testIdentityId: r.testId, filePath: r.filePath, suite: r.suite, title: r.title, score: r.score, reasons: r.reasons, state: r.state, flakeRate: r.flakeRate },
    });
  }
  return out;
}

/**
 * The health log's state transitions: `flaked` (became flaky), `broke` (became broken), `fixed` (a
 * flaky or broken test proven fixed). Health's time to fix runs from the first two to the third.
 */
function healthTransition(u: TestUpdate): 'flaked' | 'broke' | 'fixed' | null {
  const was = u.previous?.state ?? null;
  const now = u.record.state;
  if (now === was) return null;
  if (now === 'flaky') return 'flaked';
  if (now === 'broken') return 'broke';
  if (now === 'fixed') return 'fixed';
  return null;
}

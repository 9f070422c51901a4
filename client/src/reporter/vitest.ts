// Vitest reporter: `reporters: ['default', 'flakehouse/vitest']`. Vitest reports one result per
// test after all its retries (`retry`), with the errors of every failed attempt and the retry
// count; the attempts are rebuilt from that and sent once the run ends. Every hook is guarded
// (guard.ts) and APIs that only some Vitest versions have are looked up before use: the reporter
// never changes the runner's exit code (tested on Vitest 3.2, 4.1 and 5: test/e2e/runner-matrix.test.ts).
import path from 'node:path';
import type { Reporter, TestCase, TestModule, TestSpecification, Vitest } from 'vitest/node';
import type { ArtifactRef, ExecutionError } from '../contract/batch.js';
import { RunCollector, fileArtifact, splitAttempts, toExecutionError, type AttemptInput } from './collect.js';
import { HookGuard, callIfPresent } from './guard.js';
import { finishReporterRun } from './run-handoff.js';
import type { SendResult } from './send.js';

export interface FlakehouseReporterOptions {
  /** Throw (fail the test command) when the run cannot be delivered or buffered. */
  strict?: boolean;
}

export default class FlakehouseVitestReporter implements Reporter {
  private readonly options: FlakehouseReporterOptions;
  private rootDir = process.cwd();
  private collector: RunCollector | undefined;
  private readonly guard = new HookGuard('Vitest');
  /** The last delivery, for callers that drive Vitest programmatically. */
  lastResult: SendResult | undefined;

  constructor(options: FlakehouseReporterOptions = {}) {
    this.options = options;
  }

  onInit(vitest: Vitest): void {
    this.guard.run('onInit', () => {
      const root = vitest.config?.root;
      if (typeof root === 'string' && root) this.rootDir = root;
    });
  }

  onTestRunStart(_specifications: ReadonlyArray<TestSpecification>): void {
    // Watch mode starts a new run each time: each is its own batch.
    this.guard.run('onTestRunStart', () => (this.collector = new RunCollector({ rootDir: this.rootDir })));
  }

  onTestCaseResult(testCase: TestCase): void {
    this.guard.run('a test result (onTestCaseResult)', () => {
      this.collector ??= new RunCollector({ rootDir: this.rootDir });
      for (const a of vitestAttempts(testCase, this.guard)) this.collector.add(a);
    });
  }

  async onTestRunEnd(_modules: ReadonlyArray<TestModule>): Promise<void> {
    await this.guard.runAsync('the end of the run (onTestRunEnd)', async () => {
      const collector = this.collector;
      this.collector = undefined;
      if (!collector || collector.executions.length === 0) return;
      // Sent, then the quarantined failures named; under `flakehouse run`, handed to it instead (run-handoff.ts).
      this.lastResult = await finishReporterRun(collector.toRun(), { cwd: this.rootDir, strict: this.options.strict });
    });
  }
}

/** The attempts one Vitest test case stands for (one, or one per retry). */
export function vitestAttempts(testCase: TestCase, guard: HookGuard = new HookGuard('Vitest')): AttemptInput[] {
  const result = testCase.result();
  if (result.state === 'pending') return [];
  const suitePath: string[] = [];
  for (let p = testCase.parent; p.type === 'suite'; p = p.parent) suitePath.unshift(p.name);
  const file = testCase.module.moduleId;
  const project = testCase.project.name;
  const diag = callIfPresent<ReturnType<TestCase['diagnostic']>>(testCase, 'diagnostic', undefined);
  const startedAt = diag?.startTime ?? Date.now();
  const durationMs = diag?.duration ?? 0;
  const attempt = (status: AttemptInput['status'], n: number, at: number, ms: number): AttemptInput => {
    // Built field by field: this runs once per test, and object spreads are the slow path here.
    const a: AttemptInput = { file, suitePath, title: testCase.name, status, attempt: n, startedAt: at, durationMs: ms };
    if (project) a.params = { project };
    return a;
  };
  if (result.state === 'skipped') return [attempt('skip', 1, startedAt, durationMs)];

  const errors: ExecutionError[] = [];
  for (const err of result.errors ?? []) {
    const e = toExecutionError(err);
    if (e) errors.push(e);
  }
  const split = splitAttempts({
    retries: diag?.retryCount ?? 0,
    status: result.state === 'passed' ? 'pass' : 'fail',
    startedAt,
    durationMs,
    errors,
  });
  const out = split.map((s, i) => {
    const a = attempt(s.status, i + 1, s.startedAt, s.durationMs);
    if (s.error) a.error = s.error;
    return a;
  });
  // Annotations and artifacts belong to the test, not an attempt: they go with the last one. The
  // attempts are sent without them when they cannot be read.
  const artifacts = guard.run('a test\'s attachments', () => vitestArtifacts(testCase)) ?? [];
  if (artifacts.length > 0) out[out.length - 1]!.artifacts = artifacts;
  return out;
}

/**
 * Files attached with `annotate(…, { path })` (Vitest ≥ 3.2) or `recordArtifact` (Vitest ≥ 4.1; the
 * method `artifacts()` is missing before), which Vitest copies under attachmentsDir.
 */
function vitestArtifacts(testCase: TestCase): ArtifactRef[] {
  const out: ArtifactRef[] = [];
  for (const ann of callIfPresent<ReturnType<TestCase['annotations']>>(testCase, 'annotations', [])) {
    const p = ann.attachment?.path;
    if (!p || /^https?:\/\//.test(p)) continue;
    const ref = fileArtifact(ann.message || path.basename(p), ann.attachment?.contentType, p);
    if (ref) out.push(ref);
  }
  for (const art of callIfPresent<ReturnType<TestCase['artifacts']>>(testCase, 'artifacts', [])) {
    if (art.type === 'internal:annotation') continue;
    for (const att of art.attachments ?? []) {
      if (!att.path || /^https?:\/\//.test(att.path)) continue;
      const named = 'name' in att && typeof att.name === 'string' ? att.name : path.basename(att.path);
      const ref = fileArtifact(named, att.contentType, att.path);
      if (ref) out.push(ref);
    }
  }
  return out;
}

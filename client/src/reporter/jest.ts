// Jest reporter: `reporters: ['default', 'flakehouse/jest']`. jest-circus reports every attempt
// of a retried test (`jest.retryTimes`) as its own test case result, numbered by `invocations`;
// skipped tests only appear in the file's result. The run is sent when Jest completes it. Every
// hook is guarded (guard.ts): the reporter never changes Jest's exit code.
import type { AggregatedResult, Config, Reporter, Test, TestCaseResult, TestContext, TestResult } from '@jest/reporters';
import type { ExecutionError } from '../contract/batch.js';
import { RunCollector, errorFromText, splitAttempts, toExecutionError, type AttemptInput } from './collect.js';
import { HookGuard } from './guard.js';
import { finishReporterRun } from './run-handoff.js';
import type { SendResult } from './send.js';

export interface FlakehouseReporterOptions {
  /** Throw (fail the test command) when the run cannot be delivered or buffered. */
  strict?: boolean;
}

type JestStatus = TestCaseResult['status'];

export default class FlakehouseJestReporter implements Reporter {
  private readonly rootDir: string;
  private readonly options: FlakehouseReporterOptions;
  private collector: RunCollector;
  private readonly guard = new HookGuard('Jest');
  lastResult: SendResult | undefined;

  constructor(globalConfig: Config.GlobalConfig, options: FlakehouseReporterOptions = {}) {
    this.rootDir = globalConfig?.rootDir || process.cwd();
    this.options = options ?? {};
    this.collector = new RunCollector({ rootDir: this.rootDir });
  }

  onRunStart(results: AggregatedResult): void {
    // Watch mode starts a new run each time: each is its own batch.
    this.guard.run('onRunStart', () => (this.collector = new RunCollector({ rootDir: this.rootDir, startedAt: results?.startTime || Date.now() })));
  }

  onTestCaseResult(test: Test, result: TestCaseResult): void {
    this.guard.run('a test result (onTestCaseResult)', () => {
      const a = jestAttempt(test.path, result);
      if (a) this.collector.add(a);
    });
  }

  onTestResult(test: Test, fileResult: TestResult): void {
    // What the per-attempt events did not cover: skips, todos, and runners without them (jasmine2).
    this.guard.run('a test file result (onTestResult)', () => {
      for (const r of fileResult.testResults) {
        if (this.collector.has(test.path, r.ancestorTitles, r.title)) continue;
        for (const a of jestFinalAttempts(test.path, r, fileResult.perfStats?.start ?? Date.now())) this.collector.add(a);
      }
    });
  }

  async onRunComplete(_contexts: Set<TestContext>, _results: AggregatedResult): Promise<void> {
    await this.guard.runAsync('the end of the run (onRunComplete)', async () => {
      const collector = this.collector;
      this.collector = new RunCollector({ rootDir: this.rootDir });
      if (collector.executions.length === 0) return;
      // Sent, then the quarantined failures named; under `flakehouse run`, handed to it instead (run-handoff.ts).
      this.lastResult = await finishReporterRun(collector.toRun(), { cwd: this.rootDir, strict: this.options.strict });
    });
  }

  getLastError(): Error | undefined {
    return undefined;
  }
}

function statusOf(s: JestStatus): AttemptInput['status'] | undefined {
  if (s === 'passed') return 'pass';
  if (s === 'failed') return 'fail';
  if (s === 'pending' || s === 'skipped' || s === 'todo' || s === 'disabled') return 'skip';
  return undefined;
}

/** One attempt, from a per-attempt test case result. */
export function jestAttempt(file: string, r: TestCaseResult): AttemptInput | undefined {
  const status = statusOf(r.status);
  if (!status) return undefined;
  const a: AttemptInput = {
    file,
    suitePath: r.ancestorTitles,
    title: r.title,
    status,
    attempt: Math.max(1, r.invocations ?? 1),
    startedAt: r.startedAt ?? Date.now(),
    durationMs: r.duration ?? 0,
  };
  if (status === 'fail') {
    const error = jestError(r.failureDetails[0], r.failureMessages[0]);
    if (error) a.error = error;
  }
  return a;
}

/** The attempts a file-level assertion result implies (retry errors only with `logErrorsBeforeRetry`). */
export function jestFinalAttempts(file: string, r: TestResult['testResults'][number], fileStart: number): AttemptInput[] {
  const status = statusOf(r.status);
  if (!status) return [];
  const startedAt = r.startAt ?? fileStart;
  if (status === 'skip') return [{ file, suitePath: r.ancestorTitles, title: r.title, status, attempt: 1, startedAt, durationMs: 0 }];
  const errors = [...(r.retryReasons ?? []), ...r.failureMessages].map(errorFromText).filter((e): e is ExecutionError => e !== undefined);
  return splitAttempts({ retries: Math.max(0, (r.invocations ?? 1) - 1), status, startedAt, durationMs: r.duration ?? 0, errors }).map((a, i) => ({
    file,
    suitePath: r.ancestorTitles,
    title: r.title,
    ...a,
    attempt: i + 1,
  }));
}

/**
 * The error as thrown, completed from Jest's printed one: errors cross the worker boundary as plain
 * objects, which can lose the name (the type) and the stack.
 */
function jestError(detail: unknown, printed: string | undefined): ExecutionError | undefined {
  const fromDetail = toExecutionError(detail);
  const fromText = printed !== undefined ? errorFromText(printed) : undefined;
  if (!fromDetail || !fromText) return fromDetail ?? fromText;
  fromDetail.type ??= fromText.type;
  fromDetail.stack ??= fromText.stack;
  return fromDetail;
}

// Playwright Test reporter: `reporter: [['list'], ['flakehouse/playwright']]`. Playwright reports
// each attempt (`retries`) on its own with its retry index, errors and attachments (traces,
// screenshots, videos); the run is sent from onEnd, which Playwright awaits. Every hook is guarded
// (guard.ts): the reporter never changes Playwright's exit code.
import type { FullConfig, FullResult, Reporter, Suite, TestCase, TestError, TestResult } from '@playwright/test/reporter';
import type { ArtifactRef, ExecutionError } from '../contract/batch.js';
import { RunCollector, fileArtifact, toExecutionError, type AttemptInput } from './collect.js';
import { HookGuard } from './guard.js';
import { finishReporterRun } from './run-handoff.js';
import type { SendResult } from './send.js';

export interface FlakehouseReporterOptions {
  /** Throw (fail the test command) when the run cannot be delivered or buffered. */
  strict?: boolean;
}

export default class FlakehousePlaywrightReporter implements Reporter {
  private readonly options: FlakehouseReporterOptions;
  private collector: RunCollector | undefined;
  private rootDir = process.cwd();
  private readonly guard = new HookGuard('Playwright');
  lastResult: SendResult | undefined;

  constructor(options: FlakehouseReporterOptions = {}) {
    this.options = options;
  }

  onBegin(config: FullConfig, _suite: Suite): void {
    this.guard.run('onBegin', () => {
      if (typeof config?.rootDir === 'string' && config.rootDir) this.rootDir = config.rootDir;
      this.collector = new RunCollector({ rootDir: this.rootDir });
    });
  }

  onTestEnd(test: TestCase, result: TestResult): void {
    this.guard.run('a test result (onTestEnd)', () => {
      this.collector ??= new RunCollector({ rootDir: this.rootDir });
      this.collector.add(playwrightAttempt(test, result));
    });
  }

  async onEnd(_result: FullResult): Promise<void> {
    await this.guard.runAsync('the end of the run (onEnd)', async () => {
      const collector = this.collector;
      this.collector = undefined;
      if (!collector || collector.executions.length === 0) return;
      // Sent, then the quarantined failures named; under `flakehouse run`, handed to it instead (run-handoff.ts).
      this.lastResult = await finishReporterRun(collector.toRun(), { cwd: this.rootDir, strict: this.options.strict });
    });
  }

  printsToStdio(): boolean {
    return false;
  }
}

export function playwrightAttempt(test: TestCase, result: TestResult): AttemptInput {
  const suitePath: string[] = [];
  for (let s = test.parent; s.type === 'describe'; s = s.parent!) suitePath.unshift(s.title);
  const project = test.parent.project()?.name;
  const a: AttemptInput = {
    file: test.location.file,
    suitePath,
    title: test.title,
    status: statusOf(test, result),
    attempt: result.retry + 1,
    startedAt: result.startTime.getTime(),
    durationMs: result.duration,
  };
  // The same test in two projects (chromium, firefox) is two tests.
  if (project) a.params = { project };
  if (a.status === 'fail') {
    const error = playwrightError(result.errors[0] ?? result.error, result.status);
    if (error) a.error = error;
  }
  const artifacts = result.attachments
    .map((att) => (att.path ? fileArtifact(att.name, att.contentType, att.path) : undefined))
    .filter((r): r is ArtifactRef => r !== undefined);
  if (artifacts.length > 0) a.artifacts = artifacts;
  return a;
}

function statusOf(test: TestCase, result: TestResult): AttemptInput['status'] {
  // `interrupted` is a cancelled run, not an outcome of the test.
  if (result.status === 'skipped' || result.status === 'interrupted') return 'skip';
  // test.fail(): failing is what it is expected to do.
  return result.status === test.expectedStatus ? 'pass' : 'fail';
}

function playwrightError(err: TestError | undefined, status: TestResult['status']): ExecutionError | undefined {
  const e = toExecutionError(err);
  if (status === 'timedOut') {
    const timeout: ExecutionError = e ?? { message: 'Test timed out' };
    timeout.type ??= 'TimeoutError';
    return timeout;
  }
  return e ?? (status === 'passed' ? { message: 'Expected to fail, but passed', type: 'Error' } : undefined);
}

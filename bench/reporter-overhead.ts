// `npm run bench -- reporter-overhead [--tests 1000] [--rounds 100] [--deliver] [--deliveries 10]`
//
// What the runner reporters (flakehouse/vitest, /jest, /playwright) add to a test run, per 1,000
// tests, in this process:
//  - collect: each runner's result objects, shaped as the runner hands them over, through its
//    adapter into the collector (attempt bookkeeping, error parsing, attachment stat), as happens
//    while the tests run;
//  - encode: the collected run as the json transport's body and as the OTLP protobuf requests,
//    as happens once at the end;
//  - with --deliver: sendRun against a real daemon (started as a child process) over both
//    transports, until the 202: the wall time the end of the run waits.
// The suite: 90% pass, 5% fail once then pass on retry, 3% fail all 3 attempts (errors with a
// ~1.5 KB stack, one attachment per failed Playwright attempt), 2% skipped.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { TestCase as PwTestCase, TestResult as PwTestResult } from '@playwright/test/reporter';
import type { TestCaseResult } from '@jest/reporters';
import type { TestCase as VitestTestCase } from 'vitest/node';
import { CURRENT_CONTRACT_VERSION, type IngestBatch } from '../client/src/contract/batch.js';
import { RunCollector } from '../client/src/reporter/collect.js';
import { jestAttempt } from '../client/src/reporter/jest.js';
import { encodeOtlpRun } from '../client/src/contract/otlp-encode.js';
import { playwrightAttempt } from '../client/src/reporter/playwright.js';
import { sendRun } from '../client/src/reporter/send.js';
import type { ReporterRun } from '../client/src/reporter/types.js';
import { vitestAttempts } from '../client/src/reporter/vitest.js';
import { bootstrapToken, startServerProcess } from '../test/helpers/process.js';
import { writeResult } from './results.js';

type Outcome = 'pass' | 'flaky' | 'fail' | 'skip';
type Runner = 'vitest' | 'jest' | 'playwright';
const RUNNERS: readonly Runner[] = ['vitest', 'jest', 'playwright'];

const ROOT = '/repo';
/** Rounds left out of the figures while the JIT settles. */
const WARMUP = 10;
const STACK_FRAMES = Array.from({ length: 14 }, (_, i) => `    at step${i} (/repo/src/feature/module${i}.ts:${10 + i}:${5 + i})`).join('\n');

function outcomeOf(i: number): Outcome {
  const r = i % 100;
  if (r < 90) return 'pass';
  if (r < 95) return 'flaky';
  if (r < 98) return 'fail';
  return 'skip';
}

function errorOf(i: number, attempt: number): { name: string; message: string; stack: string } {
  const message = `expected ${i} to equal ${i + attempt} (request ${i}-${attempt} timed out after 5000 ms)`;
  return { name: 'AssertionError', message, stack: `AssertionError: ${message}\n${STACK_FRAMES}` };
}

function where(i: number): { file: string; suitePath: string[]; title: string } {
  return { file: `${ROOT}/src/feature${i % 40}/module${i % 7}.test.ts`, suitePath: [`feature ${i % 40}`, `group ${i % 5}`], title: `case ${i} does its thing` };
}

/** Attempts per outcome: [status, ...] in order. */
function attemptsFor(o: Outcome): ('pass' | 'fail' | 'skip')[] {
  if (o === 'pass') return ['pass'];
  if (o === 'flaky') return ['fail', 'pass'];
  if (o === 'fail') return ['fail', 'fail', 'fail'];
  return ['skip'];
}

/** Playwright: one (TestCase, TestResult) pair per attempt. */
function playwrightInputs(n: number, attachment: string): [PwTestCase, PwTestResult][] {
  const out: [PwTestCase, PwTestResult][] = [];
  const project = () => ({ name: 'chromium' });
  for (let i = 0; i < n; i++) {
    const w = where(i);
    const file = { type: 'file', title: path.basename(w.file), project };
    const outer = { type: 'describe', title: w.suitePath[0], parent: file, project };
    const inner = { type: 'describe', title: w.suitePath[1], parent: outer, project };
    const test = { title: w.title, parent: inner, location: { file: w.file, line: 1, column: 1 }, expectedStatus: 'passed' } as unknown as PwTestCase;
    attemptsFor(outcomeOf(i)).forEach((s, k) => {
      const failed = s === 'fail';
      const result = {
        retry: k,
        status: s === 'pass' ? 'passed' : s === 'skip' ? 'skipped' : 'failed',
        startTime: new Date(1_800_000_000_000 + i * 10 + k),
        duration: 12 + (i % 30),
        errors: failed ? [{ message: `Error: ${errorOf(i, k).message}`, stack: errorOf(i, k).stack }] : [],
        attachments: failed ? [{ name: 'screenshot', contentType: 'image/png', path: attachment }] : [],
      } as unknown as PwTestResult;
      out.push([test, result]);
    });
  }
  return out;
}

/** Jest: one test case result per attempt; errors cross the worker boundary as plain objects. */
function jestInputs(n: number): [string, TestCaseResult][] {
  const out: [string, TestCaseResult][] = [];
  for (let i = 0; i < n; i++) {
    const w = where(i);
    const attempts = attemptsFor(outcomeOf(i));
    if (attempts[0] === 'skip') continue; // skips come with the file's result, not per attempt
    attempts.forEach((s, k) => {
      const e = errorOf(i, k);
      out.push([
        w.file,
        {
          ancestorTitles: w.suitePath,
          title: w.title,
          fullName: `${w.suitePath.join(' ')} ${w.title}`,
          status: s === 'pass' ? 'passed' : 'failed',
          invocations: k + 1,
          startedAt: 1_800_000_000_000 + i * 10 + k,
          duration: 12 + (i % 30),
          failureDetails: s === 'fail' ? [{ message: e.message }] : [],
          failureMessages: s === 'fail' ? [e.stack] : [],
          numPassingAsserts: 1,
        },
      ]);
    });
  }
  return out;
}

/** Vitest: one test case per test, its retries folded into the result. */
function vitestInputs(n: number): VitestTestCase[] {
  const out: VitestTestCase[] = [];
  for (let i = 0; i < n; i++) {
    const w = where(i);
    const o = outcomeOf(i);
    const attempts = attemptsFor(o);
    const module = { type: 'module', moduleId: w.file };
    const outer = { type: 'suite', name: w.suitePath[0], parent: module };
    const inner = { type: 'suite', name: w.suitePath[1], parent: outer };
    const errors = attempts.flatMap((s, k) => (s === 'fail' ? [errorOf(i, k)] : []));
    const state = o === 'skip' ? 'skipped' : o === 'fail' ? 'failed' : 'passed';
    out.push({
      type: 'test',
      name: w.title,
      parent: inner,
      module,
      project: { name: '' },
      result: () => ({ state, errors: errors.length > 0 ? errors : undefined }),
      diagnostic: () => ({ startTime: 1_800_000_000_000 + i * 10, duration: 12 + (i % 30), retryCount: attempts.length - 1 }),
      annotations: () => [],
      artifacts: () => [],
    } as unknown as VitestTestCase);
  }
  return out;
}

function collect(runner: Runner, inputs: { pw: [PwTestCase, PwTestResult][]; jest: [string, TestCaseResult][]; vitest: VitestTestCase[] }): RunCollector {
  const c = new RunCollector({ rootDir: ROOT, baseDir: ROOT, startedAt: 1_800_000_000_000 });
  if (runner === 'playwright') for (const [t, r] of inputs.pw) c.add(playwrightAttempt(t, r));
  else if (runner === 'jest') {
    for (const [file, r] of inputs.jest) {
      const a = jestAttempt(file, r);
      if (a) c.add(a);
    }
  } else for (const t of inputs.vitest) for (const a of vitestAttempts(t)) c.add(a);
  return c;
}

function batchOf(run: ReporterRun): IngestBatch {
  return {
    contractVersion: CURRENT_CONTRACT_VERSION,
    idempotencyKey: 'bench-reporter-overhead',
    resource: { ciProvider: 'local', commitSha: 'abc1234', branch: 'bench', trigger: 'other' },
    run: { status: 'failed', startedAt: run.startedAt, finishedAt: run.finishedAt },
    executions: run.executions,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
function p95(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)]!;
}
const round2 = (x: number): number => Math.round(x * 100) / 100;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      tests: { type: 'string', default: '1000' },
      rounds: { type: 'string', default: '100' },
      deliver: { type: 'boolean', default: false },
      deliveries: { type: 'string', default: '10' },
    },
  });
  const tests = Number(values.tests);
  const rounds = Number(values.rounds);
  const per1k = 1000 / tests;
  const scratch = mkdtempSync(path.join(tmpdir(), 'fh-bench-reporter-'));
  const attachment = path.join(scratch, 'screenshot.png');
  writeFileSync(attachment, Buffer.alloc(20_000));
  console.log(`reporter-overhead bench: ${tests} tests per run, ${rounds} rounds per runner${values.deliver ? ', with delivery' : ''}`);

  const inputs = { pw: playwrightInputs(tests, attachment), jest: jestInputs(tests), vitest: vitestInputs(tests) };
  const runners: Record<string, unknown> = {};
  let sample: ReporterRun | undefined;
  for (const runner of RUNNERS) {
    const collectMs: number[] = [];
    const jsonMs: number[] = [];
    const otlpMs: number[] = [];
    let executions = 0;
    let jsonBytes = 0;
    let otlpBytes = 0;
    // Collecting and encoding are timed in separate loops, so the garbage one leaves is not
    // collected on the other's clock.
    let reporterRun: ReporterRun | undefined;
    for (let r = 0; r < rounds + WARMUP; r++) {
      const t0 = performance.now();
      const c = collect(runner, inputs);
      const t1 = performance.now();
      reporterRun = c.toRun(1_800_000_100_000);
      if (r >= WARMUP) collectMs.push((t1 - t0) * per1k); // the first rounds warm up the JIT
    }
    const batch = batchOf(reporterRun!);
    executions = batch.executions.length;
    if (runner === 'playwright') sample = reporterRun;
    for (let r = 0; r < rounds + WARMUP; r++) {
      const t0 = performance.now();
      const json = JSON.stringify(batch);
      const t1 = performance.now();
      if (r >= WARMUP) jsonMs.push((t1 - t0) * per1k);
      jsonBytes = Buffer.byteLength(json);
    }
    for (let r = 0; r < rounds + WARMUP; r++) {
      const t0 = performance.now();
      const otlp = encodeOtlpRun(batch);
      const t1 = performance.now();
      if (r >= WARMUP) otlpMs.push((t1 - t0) * per1k);
      otlpBytes = otlp.reduce((sum, b) => sum + b.byteLength, 0);
    }
    const res = {
      executions,
      collectMsPer1k: { p50: round2(median(collectMs)), p95: round2(p95(collectMs)) },
      encodeJsonMsPer1k: { p50: round2(median(jsonMs)), p95: round2(p95(jsonMs)) },
      encodeOtlpMsPer1k: { p50: round2(median(otlpMs)), p95: round2(p95(otlpMs)) },
      totalOtlpMsPer1k: round2(median(collectMs) + median(otlpMs)),
      jsonBytes,
      otlpBytes,
    };
    runners[runner] = res;
    console.log(
      `  ${runner.padEnd(10)} ${executions} executions: collect ${res.collectMsPer1k.p50} ms, json ${res.encodeJsonMsPer1k.p50} ms, otlp ${res.encodeOtlpMsPer1k.p50} ms per 1,000 tests (p50); bodies ${(jsonBytes / 1024).toFixed(0)} KiB json, ${(otlpBytes / 1024).toFixed(0)} KiB otlp`,
    );
  }

  let delivery: Record<string, unknown> | undefined;
  if (values.deliver && sample) {
    const dataDir = path.join(scratch, 'data');
    const server = await startServerProcess({ SERVICE_DATA_DIR: dataDir, LOG_LEVEL: 'warn', SERVICE_RATE_LIMIT_MAX: '0' });
    try {
      const token = bootstrapToken(dataDir);
      delivery = {};
      for (const transport of ['otlp', 'json'] as const) {
        const ms: number[] = [];
        const n = Number(values.deliveries);
        for (let i = 0; i < n + 1; i++) {
          const env = {
            SERVICE_ENDPOINT: server.url,
            SERVICE_TOKEN: token,
            SERVICE_TRANSPORT: transport,
            SERVICE_COMMIT_SHA: 'abc1234',
            SERVICE_BRANCH: 'bench',
            SERVICE_BUFFER_DIR: path.join(scratch, 'buffer'),
          };
          const t0 = performance.now();
          const res = await sendRun({ ...sample, rootDir: scratch }, { env, cwd: scratch, log: () => {} });
          const t = performance.now() - t0;
          if (!res.delivered) throw new Error(`delivery failed: ${JSON.stringify(res)}`);
          if (i > 0) ms.push(t * per1k); // the first one warms up the connection and the server
        }
        delivery[transport] = { sendMsPer1k: { p50: round2(median(ms)), p95: round2(p95(ms)) }, deliveries: ms.length };
        console.log(`  delivery over ${transport}: sendRun until 202 ${round2(median(ms))} ms per 1,000 tests (p50 of ${ms.length}, playwright run)`);
      }
    } finally {
      await server.stop();
    }
  }

  const file = writeResult('reporter-overhead', {
    bench: 'reporter-overhead',
    at: new Date().toISOString(),
    node: process.version,
    tests,
    rounds,
    suite: { pass: 0.9, flakyOnRetry: 0.05, failAllAttempts: 0.03, skip: 0.02, retries: 2 },
    runners,
    ...(delivery ? { delivery } : {}),
  });
  console.log(`wrote ${file}`);
  rmSync(scratch, { recursive: true, force: true });
  return 0;
}

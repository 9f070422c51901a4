// What the Vitest, Jest and Playwright reporters share: turning a runner's per-test results into
// canonical executions, one per attempt, with the retry links that let the server see a
// pass-on-retry. The runner adapters only translate their own result objects into AttemptInput.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { ArtifactRef, AttributeValue, ExecutionError, ExecutionInput } from '../contract/batch.js';
import { canonicalJson } from '../contract/identity.js';
import { UNKNOWN_CONTENT_TYPE, contentTypeForFile } from '../contract/content-types.js';
import type { ReporterRun } from './types.js';

/** One attempt of one test, as a runner adapter sees it. */
export interface AttemptInput {
  /** Test file, absolute or relative to the collector's base directory. */
  file: string;
  /** Enclosing describe blocks, outermost first. */
  suitePath: readonly string[];
  title: string;
  /** Part of the test's identity (e.g. the Playwright project). */
  params?: Record<string, unknown>;
  status: 'pass' | 'fail' | 'skip';
  /**
   * 1-based attempt number when the runner tells it. `1` always starts a new test, so two tests of
   * the same name in one file are not taken for retries of each other. Without it the collector
   * counts: a test seen again is the next attempt.
   */
  attempt?: number;
  startedAt: number;
  durationMs: number;
  error?: ExecutionError;
  artifacts?: ArtifactRef[];
  attributes?: Record<string, AttributeValue>;
}

/** Joins describe blocks the way the OTLP `test.case.name` convention does. */
export const SUITE_SEPARATOR = ' > ';

interface Chain {
  index: number;
  attempt: number;
  failedBefore: boolean;
}

export class RunCollector {
  readonly executions: ExecutionInput[] = [];
  readonly startedAt: number;
  /** File paths are stored relative to this directory (the repository root when there is one). */
  readonly baseDir: string;
  readonly rootDir: string;
  private readonly chains = new Map<string, Chain>();
  /** Runner file path → stored path; a file holds many tests and path.relative is not free. */
  private readonly paths = new Map<string, string>();

  constructor(opts: { rootDir: string; startedAt?: number; baseDir?: string }) {
    this.rootDir = path.resolve(opts.rootDir);
    this.baseDir = opts.baseDir !== undefined ? path.resolve(opts.baseDir) : repositoryRoot(this.rootDir);
    this.startedAt = opts.startedAt ?? Date.now();
  }

  /** Records one attempt and returns its execution (index = position in `executions`). */
  add(a: AttemptInput): ExecutionInput {
    const filePath = this.pathOf(a.file);
    const suite = a.suitePath.join(SUITE_SEPARATOR);
    const key = `${filePath}\u0000${suite}\u0000${a.title}\u0000${a.params ? canonicalJson(a.params) : ''}`;
    const prev = this.chains.get(key);
    const continues = prev !== undefined && (a.attempt === undefined || a.attempt > prev.attempt);
    const attempt = a.attempt ?? (continues ? prev.attempt + 1 : 1);
    const failedBefore = continues && prev.failedBefore;
    // The contract's `flaky`: this attempt passed after an earlier one of the same test failed.
    const status = a.status === 'pass' && failedBefore ? 'flaky' : a.status;
    const e: ExecutionInput = {
      filePath,
      suite,
      title: a.title,
      status,
      attempt,
      startedAt: Math.round(a.startedAt),
      durationMs: Math.max(0, Math.round(a.durationMs)),
    };
    if (continues) e.retryOfIndex = prev.index;
    if (a.params && Object.keys(a.params).length > 0) e.params = a.params;
    if (a.error) e.error = a.error;
    if (a.artifacts && a.artifacts.length > 0) e.artifacts = a.artifacts;
    if (a.attributes) e.attributes = a.attributes;
    const index = this.executions.push(e) - 1;
    this.chains.set(key, { index, attempt, failedBefore: failedBefore || a.status === 'fail' });
    return e;
  }

  /** True when an attempt of this test was recorded (runners that report skips separately). */
  has(file: string, suitePath: readonly string[], title: string, params?: Record<string, unknown>): boolean {
    const key = `${this.pathOf(file)}\u0000${suitePath.join(SUITE_SEPARATOR)}\u0000${title}\u0000${params ? canonicalJson(params) : ''}`;
    return this.chains.has(key);
  }

  private pathOf(file: string): string {
    let rel = this.paths.get(file);
    if (rel === undefined) {
      rel = relativePath(file, this.baseDir);
      this.paths.set(file, rel);
    }
    return rel;
  }

  toRun(finishedAt = Date.now()): ReporterRun {
    return { executions: this.executions, startedAt: this.startedAt, finishedAt: Math.max(finishedAt, this.startedAt), rootDir: this.rootDir };
  }
}

/**
 * For runners that report one result for all attempts of a test (Vitest): the attempts it implies.
 * Every attempt before the last failed (runners retry only failures). Errors are handed out one
 * per failed attempt in order (the runner appends each attempt's error); with fewer errors than
 * failed attempts the later ones repeat the last. The runner gives one start and one duration for
 * all attempts, so the time is spread evenly.
 */
export function splitAttempts(r: {
  retries: number;
  status: 'pass' | 'fail' | 'skip';
  startedAt: number;
  durationMs: number;
  errors: readonly ExecutionError[];
}): { status: 'pass' | 'fail' | 'skip'; startedAt: number; durationMs: number; error?: ExecutionError }[] {
  const n = Math.max(0, Math.trunc(r.retries)) + 1;
  const failed = r.status === 'fail' ? n : n - 1;
  const each = r.durationMs / n;
  const out: { status: 'pass' | 'fail' | 'skip'; startedAt: number; durationMs: number; error?: ExecutionError }[] = [];
  for (let i = 0; i < n; i++) {
    const a: (typeof out)[number] = {
      status: i < n - 1 ? 'fail' : r.status,
      startedAt: r.startedAt + Math.round(each * i),
      durationMs: Math.round(each * (i + 1)) - Math.round(each * i),
    };
    const error = i < failed ? r.errors[Math.min(i, r.errors.length - 1)] : undefined;
    if (error) a.error = error;
    out.push(a);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Errors

// oxlint-disable-next-line eslint/no-control-regex -- ANSI escapes are control characters by definition
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

export function stripAnsi(s: string): string {
  return s.includes('\u001b') ? s.replace(ANSI, '') : s;
}

const FRAME = /^\s+at\s/;
const ERROR_TYPE = /^([A-Za-z_$][\w$.]*(?:Error|Exception|Failure)|Error)(?:\s*\[[^\]]*\])?:\s?/;

/**
 * An error as the runners hand it over: an Error, a serialized one (`{name, message, stack}`), or
 * only the printed stack (`"TypeError: boom\n    at …"`). Colours are removed: they are for
 * terminals, and they would split one failure into several error signatures.
 */
export function toExecutionError(err: unknown): ExecutionError | undefined {
  if (err === undefined || err === null) return undefined;
  if (typeof err === 'string') return errorFromText(err);
  if (typeof err === 'number' || typeof err === 'boolean' || typeof err === 'bigint') return { message: String(err) };
  if (typeof err !== 'object') return undefined;
  const o = err as { name?: unknown; message?: unknown; stack?: unknown; value?: unknown };
  const stack = typeof o.stack === 'string' && o.stack.trim() !== '' ? stripAnsi(o.stack) : undefined;
  let message = typeof o.message === 'string' ? stripAnsi(o.message) : undefined;
  let type = typeof o.name === 'string' && o.name !== '' ? o.name : undefined;
  if (message === undefined || message.trim() === '') {
    if (stack) return errorFromText(stack);
    if (typeof o.value === 'string' && o.value.trim() !== '') return { message: stripAnsi(o.value) };
    return undefined;
  }
  // Playwright and Jest put the type in front of the message ("Error: expect(…)").
  const m = ERROR_TYPE.exec(message);
  if (m) {
    type ??= m[1];
    message = message.slice(m[0].length);
  }
  const e: ExecutionError = { message: message.trim() === '' ? (type ?? 'Error') : message.trimEnd() };
  if (type) e.type = type;
  if (stack) e.stack = stack;
  return e;
}

/** Parses a printed error: the lines before the first `at` frame are `Type: message`. */
export function errorFromText(text: string): ExecutionError | undefined {
  const clean = stripAnsi(text);
  if (clean.trim() === '') return undefined;
  const lines = clean.split('\n');
  let end = lines.findIndex((l) => FRAME.test(l));
  if (end < 0) end = lines.length;
  let head = lines.slice(0, end).join('\n').trim();
  let type: string | undefined;
  const m = ERROR_TYPE.exec(head);
  if (m) {
    type = m[1];
    head = head.slice(m[0].length).trim();
  }
  const e: ExecutionError = { message: head === '' ? (type ?? 'Error') : head };
  if (type) e.type = type;
  if (end < lines.length) e.stack = clean.trimEnd();
  return e;
}

// ---------------------------------------------------------------------------------------------
// Paths and files

/** The nearest directory at or above `dir` holding `.git`; `dir` itself when there is none. */
export function repositoryRoot(dir: string): string {
  let cur = path.resolve(dir);
  for (;;) {
    if (existsSync(path.join(cur, '.git'))) return cur;
    const up = path.dirname(cur);
    if (up === cur) return path.resolve(dir);
    cur = up;
  }
}

/** POSIX path relative to `base` when the file is under it (CODEOWNERS patterns are), else as given. */
export function relativePath(file: string, base: string): string {
  if (!path.isAbsolute(file)) return file.replace(/\\/g, '/');
  const rel = path.relative(base, file);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return file.replace(/\\/g, '/');
  return rel.split(path.sep).join('/');
}

/** An artifact for a file the runner left on disk; undefined when the file is not there. */
export function fileArtifact(name: string, contentType: string | undefined, filePath: string): ArtifactRef | undefined {
  try {
    const st = statSync(filePath);
    if (!st.isFile()) return undefined;
    // A runner that gives no type: typed by the file's name, as the JUnit receiver types its attachments.
    const type = contentType || (contentTypeForFile(filePath) ?? UNKNOWN_CONTENT_TYPE);
    return { name, contentType: type, path: filePath, sizeBytes: st.size };
  } catch {
    return undefined;
  }
}

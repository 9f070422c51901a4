// What the worker and ClickHouse can store, checked at the door: a batch that passes
// `sanitizeBatch` cannot fail later for its values (a 202 must mean stored). Every receiver's
// batches go through it before anything is enqueued, and the worker runs it again on each job so
// one queued before these checks existed is set aside alone instead of failing its whole lease.
import type { IngestBatch } from './batch.js';
import { canonicalText } from './identity.js';

/** The bounds of the columns batch values land in (src/store/migrations/001_core.sql). */
export const STORABLE = {
  /**
   * Timestamps: 1970-01-01 ≤ t < 2100-01-01 (UTC). The floor is the `day Date` column's (and
   * epoch-ms JSON's); the ceiling leaves room under `toDateTime` (UInt32 seconds, ends
   * 2106-02-07, used by test_recent's TTL) even for a run that ends the longest duration after
   * its start, and is far inside DateTime64(3) (2299) and Date (2149).
   */
  minTimeMs: 0,
  maxTimeMs: Date.UTC(2100, 0, 1) - 1,
  /** executions.attempt, runs.shard_index / shard_total. */
  maxUInt16: 65_535,
  /** runs.pr_number, executions.duration_ms (about 49.7 days, also the span duration bound). */
  maxUInt32: 4_294_967_295,
  /** Levels of objects/arrays in free-form JSON (params, attributes), the value itself included. */
  maxJsonDepth: 32,
} as const;

/** A value the store would reject; `path` is dotted into the batch (`executions.3.durationMs`). */
export class UnstorableError extends Error {
  override readonly name = 'UnstorableError';
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}

export function isStorableTime(ms: number): boolean {
  return ms >= STORABLE.minTimeMs && ms <= STORABLE.maxTimeMs;
}

export const TIME_WINDOW_TEXT = 'must be between 1970-01-01T00:00:00Z and 2099-12-31T23:59:59.999Z';

// isWellFormed/toWellFormed are Node 20 (ES2024); the project's lib is ES2023.
interface Es2024String {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/** The string with lone surrogates replaced by U+FFFD (ClickHouse refuses them in JSON and text). */
export function wellFormed(s: string): string {
  return (s as unknown as Es2024String).isWellFormed() ? s : (s as unknown as Es2024String).toWellFormed();
}

function isWellFormedString(s: string): boolean {
  return (s as unknown as Es2024String).isWellFormed();
}

/**
 * Checks a batch against what can be stored and normalises its strings in place (lone surrogates
 * → U+FFFD, in keys of free-form objects too; the strings of a test's identity — filePath, suite,
 * title, params keys and string values — to NFC, docs/contract.md §1 "canonical text"). Throws
 * UnstorableError for the first value that cannot be stored. One pass, no copies unless a key has
 * to be rewritten.
 */
export function sanitizeBatch(batch: IngestBatch): void {
  at.exec = -1;
  at.part = '';
  if (typeof batch !== 'object' || batch === null) throw new UnstorableError('', 'expected a batch object');
  const key = batch.idempotencyKey;
  if (typeof key !== 'string') fail('idempotencyKey', 'expected a string');
  // Replacing here could make two different keys equal (and the second batch a "replay").
  if (!isWellFormedString(key)) fail('idempotencyKey', 'contains a lone UTF-16 surrogate (not valid Unicode)');
  batch.contractVersion = str(batch.contractVersion, 'contractVersion');

  const r = batch.resource;
  if (typeof r !== 'object' || r === null) fail('resource', 'expected an object');
  r.ciProvider = str(r.ciProvider, 'resource.ciProvider') as typeof r.ciProvider;
  r.commitSha = str(r.commitSha, 'resource.commitSha');
  r.branch = str(r.branch, 'resource.branch');
  r.trigger = str(r.trigger, 'resource.trigger') as typeof r.trigger;
  if (r.ciRunId !== undefined) r.ciRunId = str(r.ciRunId, 'resource.ciRunId');
  if (r.repository !== undefined) r.repository = str(r.repository, 'resource.repository');
  if (r.baseBranch !== undefined) r.baseBranch = str(r.baseBranch, 'resource.baseBranch');
  if (r.ciJobUrl !== undefined) r.ciJobUrl = str(r.ciJobUrl, 'resource.ciJobUrl');
  if (r.ciJobName !== undefined) r.ciJobName = str(r.ciJobName, 'resource.ciJobName');
  if (r.ciJobMatrix !== undefined) {
    const m = r.ciJobMatrix;
    if (typeof m !== 'object' || m === null) fail('resource.ciJobMatrix', 'expected an object');
    const out: Record<string, string> = {};
    for (const k of Object.keys(m)) out[str(k, 'resource.ciJobMatrix')] = str(m[k], `resource.ciJobMatrix.${k}`);
    r.ciJobMatrix = out;
  }
  if (r.prNumber !== undefined) uint(r.prNumber, STORABLE.maxUInt32, 'resource.prNumber');
  if (r.shardIndex !== undefined) uint(r.shardIndex, STORABLE.maxUInt16, 'resource.shardIndex');
  if (r.shardTotal !== undefined) uint(r.shardTotal, STORABLE.maxUInt16, 'resource.shardTotal');

  const run = batch.run;
  if (typeof run !== 'object' || run === null) fail('run', 'expected an object');
  run.status = str(run.status, 'run.status') as typeof run.status;
  time(run.startedAt, 'run.startedAt');
  if (run.finishedAt !== undefined) time(run.finishedAt, 'run.finishedAt');
  if (run.traceId !== undefined) run.traceId = str(run.traceId, 'run.traceId');

  const executions = batch.executions;
  if (!Array.isArray(executions)) fail('executions', 'expected an array');
  for (let i = 0; i < executions.length; i++) {
    at.exec = i;
    at.part = '';
    sanitizeExecution(executions[i]!);
  }
}

type Execution = IngestBatch['executions'][number];
type Span = NonNullable<Execution['spans']>[number];

/**
 * Where the walk is, so field names can be passed as constants and the dotted path is built only
 * on failure (nothing per execution on the happy path). The walk is synchronous: one at a time.
 */
const at = { exec: -1, part: '', index: -1 };

function pathOf(field: string): string {
  if (at.exec < 0) return field;
  const head = at.part === '' ? `executions.${at.exec}` : `executions.${at.exec}.${at.part}.${at.index}`;
  return field === '' ? head : `${head}.${field}`;
}

function fail(field: string, reason: string): never {
  throw new UnstorableError(pathOf(field), reason);
}

function sanitizeExecution(e: Execution): void {
  if (typeof e !== 'object' || e === null) fail('', 'expected an object');
  // Identity text is stored canonical (NFC): the fingerprint, the stored row and what a reader sees agree.
  e.filePath = canonicalText(str(e.filePath, 'filePath'));
  e.suite = canonicalText(str(e.suite, 'suite'));
  e.title = canonicalText(str(e.title, 'title'));
  e.status = str(e.status, 'status') as typeof e.status;
  uint(e.attempt, STORABLE.maxUInt16, 'attempt');
  time(e.startedAt, 'startedAt');
  uint(e.durationMs, STORABLE.maxUInt32, 'durationMs');
  if (e.traceId !== undefined) e.traceId = str(e.traceId, 'traceId');
  if (e.spanId !== undefined) e.spanId = str(e.spanId, 'spanId');
  if (e.error !== undefined) sanitizeError(e.error);
  if (e.params !== undefined) e.params = json(e.params, 1, 'params', true) as Record<string, unknown>;
  if (e.attributes !== undefined) e.attributes = json(e.attributes, 1, 'attributes', false) as Execution['attributes'];
  if (e.artifacts !== undefined) {
    if (!Array.isArray(e.artifacts)) fail('artifacts', 'expected an array');
    at.part = 'artifacts';
    for (let k = 0; k < e.artifacts.length; k++) {
      at.index = k;
      const a = e.artifacts[k]!;
      a.name = str(a.name, 'name');
      a.contentType = str(a.contentType, 'contentType');
      a.path = str(a.path, 'path');
      if (a.key !== undefined) a.key = str(a.key, 'key');
      if (a.sizeBytes !== undefined) uint(a.sizeBytes, Number.MAX_SAFE_INTEGER, 'sizeBytes');
    }
    at.part = '';
  }
  if (e.spans !== undefined) {
    if (!Array.isArray(e.spans)) fail('spans', 'expected an array');
    at.part = 'spans';
    for (let k = 0; k < e.spans.length; k++) {
      at.index = k;
      sanitizeSpan(e.spans[k]!);
    }
    at.part = '';
  }
}

function sanitizeSpan(s: Span): void {
  if (typeof s !== 'object' || s === null) fail('', 'expected an object');
  s.spanId = str(s.spanId, 'spanId');
  if (s.parentSpanId !== undefined) s.parentSpanId = str(s.parentSpanId, 'parentSpanId');
  s.name = str(s.name, 'name');
  s.kind = str(s.kind, 'kind') as typeof s.kind;
  s.status = str(s.status, 'status') as typeof s.status;
  time(s.startedAt, 'startedAt');
  uint(s.durationMs, STORABLE.maxUInt32, 'durationMs');
  if (s.attributes !== undefined) s.attributes = json(s.attributes, 1, 'attributes', false) as Span['attributes'];
  if (s.error !== undefined) sanitizeError(s.error);
}

function sanitizeError(err: NonNullable<Execution['error']>): void {
  if (typeof err !== 'object' || err === null) fail('error', 'expected an object');
  err.message = str(err.message, 'error.message');
  if (err.type !== undefined) err.type = str(err.type, 'error.type');
  if (err.stack !== undefined) err.stack = str(err.stack, 'error.stack');
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string') fail(field, 'expected a string');
  return isWellFormedString(v) ? v : (v as unknown as Es2024String).toWellFormed();
}

function uint(v: unknown, max: number, field: string): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) {
    fail(field, `must be an integer from 0 to ${max}${typeof v === 'number' ? `, got ${v}` : ''}`);
  }
}

function time(v: unknown, field: string): void {
  if (typeof v !== 'number' || !(v >= STORABLE.minTimeMs && v <= STORABLE.maxTimeMs)) {
    fail(field, `${TIME_WINDOW_TEXT}${typeof v === 'number' ? `, got ${v} ms` : ''}`);
  }
}

/**
 * Free-form JSON: depth-limited (the walk stops at the limit, so it cannot overflow the stack),
 * strings normalised; with `canon` (params, part of the identity) keys and strings also to NFC.
 */
function json(v: unknown, depth: number, field: string, canon: boolean): unknown {
  if (typeof v === 'string') {
    const s = isWellFormedString(v) ? v : (v as unknown as Es2024String).toWellFormed();
    return canon ? canonicalText(s) : s;
  }
  if (typeof v !== 'object' || v === null) return v;
  if (depth > STORABLE.maxJsonDepth) fail(field, `nested too deeply: at most ${STORABLE.maxJsonDepth} levels of objects and arrays`);
  if (Array.isArray(v)) {
    for (let k = 0; k < v.length; k++) {
      const x: unknown = v[k];
      const y = json(x, depth + 1, field, canon);
      if (y !== x) v[k] = y;
    }
    return v;
  }
  const obj = v as Record<string, unknown>;
  let badKey = false;
  for (const k in obj) {
    const x = obj[k];
    const y = json(x, depth + 1, field, canon);
    if (y !== x) obj[k] = y;
    if (!badKey && (!isWellFormedString(k) || (canon && canonicalText(k) !== k))) badKey = true;
  }
  if (!badKey) return obj;
  // Rare: rebuild with normalised keys (defineProperty, so a "__proto__" key stays a plain key).
  const out: Record<string, unknown> = {};
  for (const k in obj) {
    const key = canon ? canonicalText(wellFormed(k)) : wellFormed(k);
    // Two keys that are one text in canonical form (NFC and NFD of one name): which value is the
    // test's would be a guess.
    if (canon && Object.prototype.hasOwnProperty.call(out, key)) fail(`${field}.${key}`, 'the same key twice once in canonical form (Unicode NFC)');
    Object.defineProperty(out, key, { value: obj[k], enumerable: true, writable: true, configurable: true });
  }
  return out;
}

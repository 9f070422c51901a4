// Maps decoded OTLP traces to canonical ingest batches (docs/contract.md §4): one trace → one run.
import {
  CI_PROVIDERS,
  CURRENT_CONTRACT_VERSION,
  LIMITS,
  PLACEHOLDER_BRANCH,
  PLACEHOLDER_COMMIT,
  TEST_STATUSES,
  TRIGGERS,
  deriveRunStatus,
} from '../../../client/src/contract/batch.js';
import type {
  BatchResource,
  BatchRun,
  CiProvider,
  ExecutionError,
  ExecutionInput,
  ExecutionSpan,
  IngestBatch,
  RunStatus,
  SpanKind,
  TestStatus,
  Trigger,
} from '../../../client/src/contract/batch.js';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { artifactRefSchema } from '../native/schema.js';
import { jobMatrixFrom } from '../../../client/src/contract/ci-job.js';
import type { AttrValue, Attributes, OtlpSpan, OtlpTraceRequest, RejectedSpan } from './decode.js';
import {
  CHANGE_ID_KEYS,
  CI_JOB_MATRIX_KEY,
  CI_JOB_NAME_KEY,
  CI_JOB_URL_KEYS,
  HEAD_NAME_KEYS,
  HEAD_REVISION_KEYS,
  isPytestSessionSpan,
  RUN_STATUS_KEYS,
  SUITE_NAME,
  ciProviderFromUrl,
  commitFromServiceVersion,
  parseNodeId,
  pytestNodeId,
} from './conventions.js';

export interface MapOptions {
  /** Fallback timestamp (epoch ms) when a trace carries no usable start time. */
  now: number;
}

interface TraceGroup {
  traceId: string;
  spans: OtlpSpan[];
  /** Resource attributes of each span (parallel to `spans`). */
  resources: Attributes[];
}

/**
 * `rejected`: test-case spans refused here (a status the receiver cannot read), to report with
 * the decoder's as an OTLP partial success; the rest of the request is mapped without them.
 */
export function mapOtlpToBatches(req: OtlpTraceRequest, opts: MapOptions): { batches: IngestBatch[]; rejected: RejectedSpan[] } {
  const rejected: RejectedSpan[] = [];
  // Group by trace id across resourceSpans so a trace split over several resources is one run.
  const groups = new Map<string, TraceGroup>();
  for (const rs of req.resourceSpans) {
    for (const span of rs.spans) {
      if (isCase(span)) {
        const problem = unknownStatus(span);
        if (problem !== undefined) {
          rejected.push({ path: `trace ${span.traceId} span ${span.spanId}`, message: problem });
          continue;
        }
      }
      let g = groups.get(span.traceId);
      if (!g) {
        g = { traceId: span.traceId, spans: [], resources: [] };
        groups.set(span.traceId, g);
      }
      g.spans.push(span);
      g.resources.push(rs.resource);
    }
  }

  // Keys carry a digest of each trace's span ids, so traces sharing a resource-level key stay apart.
  const batches: IngestBatch[] = [];
  for (const g of groups.values()) {
    const batch = mapTrace(g, opts.now);
    if (batch) batches.push(batch);
  }
  return { batches, rejected };
}

// ---------------------------------------------------------------------------------------------

const CASE_KEYS = new Set([
  'test.title',
  'test.suite',
  'test.suite.name',
  'test.file_path',
  'code.file.path',
  'code.filepath',
  'test.status',
  'test.case.result.status',
  'test.attempt',
  'test.retry_of',
  'test.params',
  'test.artifacts',
]);

/** Ours or Flakemetry's (`test.case`), the semantic conventions' (`test.case.name`), or pytest-opentelemetry's (node id). */
function isCase(span: OtlpSpan): boolean {
  return span.name === 'test.case' || span.attributes['test.case.name'] !== undefined || pytestNodeId(span) !== undefined;
}

function hasPipelineAttr(span: OtlpSpan): boolean {
  for (const key in span.attributes) if (key.startsWith('cicd.pipeline.')) return true;
  return false;
}

function mapTrace(g: TraceGroup, now: number): IngestBatch | undefined {
  const { spans } = g;
  const n = spans.length;
  // Start-time order (stable on ties) so execution indices and child spans read chronologically
  // regardless of the SDK's end-time export order.
  const order: number[] = new Array<number>(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => spans[a]!.startTimeMs - spans[b]!.startTimeMs || a - b);

  const caseFlags: boolean[] = new Array<boolean>(n);
  const cases: number[] = [];
  const byId = new Map<string, number>();
  const children = new Map<string, number[]>();
  for (const i of order) {
    const s = spans[i]!;
    const c = isCase(s);
    caseFlags[i] = c;
    if (c) cases.push(i);
    byId.set(s.spanId, i);
    if (s.parentSpanId !== undefined) {
      const list = children.get(s.parentSpanId);
      if (list) list.push(i);
      else children.set(s.parentSpanId, [i]);
    }
  }
  const runIdx = cases.length > 0 ? findRunSpan(spans, caseFlags, order, byId, cases[0]!) : findExplicitRunSpan(spans, caseFlags, order);
  // A part with neither test cases nor a run span says nothing about a test run.
  if (runIdx === undefined && cases.length === 0) return undefined;
  const runSpan = runIdx === undefined ? undefined : spans[runIdx];
  const resource = mergeResources(g.resources, runIdx);
  const runAttrs = runSpan?.attributes;
  // Key order wins over source: for each key, resource attributes then the run span's.
  const get = (...keys: string[]): AttrValue | undefined => {
    for (const k of keys) {
      const v = resource[k] ?? runAttrs?.[k];
      if (v !== undefined) return v;
    }
    return undefined;
  };

  // Executions
  const caseIndex = new Map<string, number>();
  for (let k = 0; k < cases.length; k++) caseIndex.set(spans[cases[k]!]!.spanId, k);
  let minStart = 0;
  for (const i of cases) {
    const t = spans[i]!.startTimeMs;
    if (t > 0 && (minStart === 0 || t < minStart)) minStart = t;
  }
  const runStart = runSpan && runSpan.startTimeMs > 0 ? runSpan.startTimeMs : minStart > 0 ? minStart : now;

  const executions: ExecutionInput[] = new Array<ExecutionInput>(cases.length);
  const retried = new Set<number>();
  for (let k = 0; k < cases.length; k++) {
    const exec = mapCase(spans, cases[k]!, k, caseIndex, children, caseFlags, byId, runStart);
    if (exec.retryOfIndex !== undefined) retried.add(exec.retryOfIndex);
    executions[k] = exec;
  }

  // Run
  let status = runStatusOf(get(...RUN_STATUS_KEYS));
  const statusExplicit = status !== undefined;
  if (status === undefined) {
    // Only final attempts count: a failure that was retried is superseded by its retry.
    status = deriveRunStatus(retried.size === 0 ? executions : executions.filter((_, k) => !retried.has(k)));
  }
  const run: BatchRun = { status, startedAt: runStart };
  if (runSpan && runSpan.endTimeMs > 0) run.finishedAt = runSpan.endTimeMs;
  run.traceId = g.traceId;
  const explicitRunSpan = runIdx !== undefined && isExplicitRunSpan(spans[runIdx]!);
  run.hasRunSpan = explicitRunSpan;
  run.statusExplicit = statusExplicit;

  const keyAttr = str(get('service.idempotency_key', 'flakemetry.idempotency_key'));
  const batch: IngestBatch = {
    contractVersion: CURRENT_CONTRACT_VERSION,
    idempotencyKey: partKey(keyAttr ?? g.traceId, spans),
    resource: mapResource(get, cases.length > 0 ? taskNameAbove(spans, cases[0]!, byId) : undefined),
    run,
    executions,
  };
  return batch;
}

/**
 * The name of the pipeline task (CI job) span nearest above a test case: with a pipeline span as the
 * run span, the job the tests ran in is a task span between them.
 */
function taskNameAbove(spans: OtlpSpan[], caseIdx: number, byId: Map<string, number>): string | undefined {
  let cur = caseIdx;
  // The step bound guards against parent cycles.
  for (let steps = 0; steps < spans.length; steps++) {
    const parent = spans[cur]!.parentSpanId;
    const p = parent === undefined ? undefined : byId.get(parent);
    if (p === undefined) return undefined;
    const name = spans[p]!.attributes[CI_JOB_NAME_KEY];
    if (typeof name === 'string' && name.trim() !== '') return name;
    cur = p;
  }
  return undefined;
}

function isExplicitRunSpan(span: OtlpSpan): boolean {
  return span.name === 'test.run' || isPytestSessionSpan(span) || hasPipelineAttr(span);
}

/** A part without test cases counts only if it holds a span that is a run span by name or attributes. */
function findExplicitRunSpan(spans: OtlpSpan[], caseFlags: boolean[], order: number[]): number | undefined {
  for (const i of order) if (!caseFlags[i] && isExplicitRunSpan(spans[i]!)) return i;
  return undefined;
}

/**
 * The idempotency key of one part of a trace: the run's key plus a digest of the part's span ids.
 * A retried export of the same spans repeats the key (deduplicated); the next part of the same
 * trace gets its own key instead of being taken for a replay.
 */
function partKey(runKey: string, spans: readonly OtlpSpan[]): string {
  const ids = spans.map((s) => s.spanId).sort();
  const digest = createHash('sha256').update(ids.join(',')).digest('hex').slice(0, 16);
  const base = runKey.length > 100 ? createHash('sha256').update(runKey).digest('hex').slice(0, 32) : runKey;
  return `${base}:${digest}`;
}

function findRunSpan(
  spans: OtlpSpan[],
  caseFlags: boolean[],
  order: number[],
  byId: Map<string, number>,
  firstCase: number,
): number | undefined {
  for (const i of order) if (!caseFlags[i] && spans[i]!.name === 'test.run') return i;
  // pytest's session is the test run even when its trace continues a CI pipeline's (TRACEPARENT):
  // the run is the tests, so it comes before a pipeline span.
  for (const i of order) if (!caseFlags[i] && isPytestSessionSpan(spans[i]!)) return i;
  for (const i of order) if (!caseFlags[i] && hasPipelineAttr(spans[i]!)) return i;
  // Root ancestor of the first case; the step bound guards against parent cycles.
  let cur = firstCase;
  for (let steps = 0; steps < spans.length; steps++) {
    const parent = spans[cur]!.parentSpanId;
    const p = parent === undefined ? undefined : byId.get(parent);
    if (p === undefined) break;
    cur = p;
  }
  return caseFlags[cur] ? undefined : cur;
}

function mergeResources(resources: Attributes[], runIdx: number | undefined): Attributes {
  const first = resources[runIdx ?? 0]!;
  let merged: Attributes | undefined;
  let seen: Set<Attributes> | undefined;
  for (const r of resources) {
    if (r === first || seen?.has(r)) continue;
    // Rare: the trace spans several resources. The run span's resource wins per key, then order.
    (seen ??= new Set()).add(r);
    merged ??= { ...first };
    for (const k in r) if (merged[k] === undefined) merged[k] = r[k]!;
  }
  return merged ?? first;
}

// ---------------------------------------------------------------------------------------------
// Test cases

function mapCase(
  spans: OtlpSpan[],
  idx: number,
  k: number,
  caseIndex: Map<string, number>,
  children: Map<string, number[]>,
  caseFlags: boolean[],
  byId: Map<string, number>,
  runStart: number,
): ExecutionInput {
  const span = spans[idx]!;
  const a = span.attributes;
  const status = caseStatus(span);
  // Precedence per field: our `test.*` keys, then the semantic conventions' (and `code.*`), then
  // what the pytest node id says, then the span name. A `test.case.name` beats a node id: a span
  // carrying it states its name outright.
  const nodeId = a['test.case.name'] === undefined ? pytestNodeId(span) : undefined;
  const node = nodeId === undefined ? undefined : parseNodeId(nodeId);
  const exec: ExecutionInput = {
    filePath: str(a['test.file_path'] ?? a['code.file.path']) ?? node?.filePath ?? str(a['code.filepath']) ?? '',
    suite: str(a['test.suite'] ?? a[SUITE_NAME]) ?? node?.suite ?? ancestorSuite(spans, idx, byId) ?? '',
    title: str(a['test.title']) ?? lastSegment(str(a['test.case.name'])) ?? node?.title ?? (span.name || 'test.case'),
    status,
    attempt: positiveInt(a['test.attempt']) ?? 1,
    startedAt: span.startTimeMs > 0 ? span.startTimeMs : runStart,
    durationMs: Math.round(span.durationMs),
    traceId: span.traceId,
    spanId: span.spanId,
  };

  const retryOf = a['test.retry_of'];
  if (retryOf !== undefined) {
    let target = typeof retryOf === 'string' ? caseIndex.get(retryOf.toLowerCase()) : undefined;
    target ??= nonNegativeInt(retryOf);
    // The contract allows only an earlier execution of this batch.
    if (target !== undefined && target < k) exec.retryOfIndex = target;
  }

  const params = parseParams(a['test.params']) ?? node?.params;
  if (params) exec.params = params;
  const artifacts = parseArtifacts(a['test.artifacts']);
  if (artifacts) exec.artifacts = artifacts;

  const error = exceptionError(span) ?? (status === 'fail' && span.statusMessage ? { message: span.statusMessage } : undefined);
  if (error) exec.error = error;

  let extra: Attributes | undefined;
  for (const key in a) {
    if (CASE_KEYS.has(key)) continue;
    (extra ??= {})[key] = a[key]!;
  }
  if (extra) exec.attributes = extra;

  const childSpans = collectChildSpans(spans, span.spanId, children, caseFlags);
  if (childSpans.length > 0) exec.spans = childSpans;
  return exec;
}

/**
 * The semantic conventions' shape (test.md): cases under a suite span carrying `test.suite.name`.
 * The nearest ancestor's name is the case's suite; the step bound guards against parent cycles.
 */
function ancestorSuite(spans: OtlpSpan[], idx: number, byId: Map<string, number>): string | undefined {
  let cur = idx;
  for (let steps = 0; steps < spans.length; steps++) {
    const parent = spans[cur]!.parentSpanId;
    const p = parent === undefined ? undefined : byId.get(parent);
    if (p === undefined) return undefined;
    const name = str(spans[p]!.attributes[SUITE_NAME])?.trim();
    if (name) return name;
    cur = p;
  }
  return undefined;
}

/** `test.case.result.status` values the receiver reads (semantic conventions say pass/fail). */
const RESULT_STATUSES: Readonly<Record<string, TestStatus>> = {
  pass: 'pass',
  passed: 'pass',
  fail: 'fail',
  failed: 'fail',
  error: 'fail',
  skip: 'skip',
  skipped: 'skip',
};

/** The explicit status a case span states: `test.status`, else `test.case.result.status`, when readable. */
function explicitStatus(a: Attributes): TestStatus | undefined {
  const explicit = lower(a['test.status']);
  if (explicit !== undefined && (TEST_STATUSES as readonly string[]).includes(explicit)) return explicit as TestStatus;
  const result = lower(a['test.case.result.status']);
  return result !== undefined && Object.hasOwn(RESULT_STATUSES, result) ? RESULT_STATUSES[result] : undefined;
}

/**
 * Why a case span's status cannot be read, or undefined. A status attribute the receiver does not
 * know (`timedout`, an integer) used to fall back to the span status, which made an unset span a
 * `pass`: the span is refused instead (partial success), since any status we picked would be a guess.
 */
function unknownStatus(span: OtlpSpan): string | undefined {
  const a = span.attributes;
  if (explicitStatus(a) !== undefined) return undefined;
  for (const key of ['test.status', 'test.case.result.status']) {
    const v = a[key];
    if (v !== undefined) {
      return `${key} ${clipText(JSON.stringify(v), 100)} is not a status this server knows (test.status: ${TEST_STATUSES.join(', ')}; test.case.result.status: pass, fail, skip); the test case is not stored`;
    }
  }
  return undefined;
}

function clipText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function caseStatus(span: OtlpSpan): TestStatus {
  return explicitStatus(span.attributes) ?? (span.statusCode === 'error' ? 'fail' : 'pass');
}

const SEGMENT_SPLIT = / > |::|\/|\./;

function lastSegment(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const parts = name.split(SEGMENT_SPLIT);
  for (let i = parts.length - 1; i >= 0; i--) {
    const p = parts[i]!.trim();
    if (p !== '') return p;
  }
  return undefined;
}

function parseParams(v: AttrValue | undefined): Record<string, unknown> | undefined {
  if (typeof v !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(v);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // Not JSON: params are optional, so the case is kept without them.
  }
  return undefined;
}

const artifactRefsSchema = z.array(artifactRefSchema).min(1);

/** `test.artifacts`: the execution's ArtifactRef[] as JSON (what the reporter sends over OTLP). */
function parseArtifacts(v: AttrValue | undefined): ExecutionInput['artifacts'] {
  if (typeof v !== 'string') return undefined;
  try {
    const parsed = artifactRefsSchema.safeParse(JSON.parse(v));
    // Malformed refs are dropped like malformed params: the case itself is still good.
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function exceptionError(span: OtlpSpan): ExecutionError | undefined {
  for (const e of span.events) {
    if (e.name !== 'exception') continue;
    const type = str(e.attributes['exception.type']);
    const stack = str(e.attributes['exception.stacktrace']);
    // message is required (min 1) downstream; fall back to what else describes the failure.
    const err: ExecutionError = {
      message: str(e.attributes['exception.message']) || type || span.statusMessage || 'exception',
    };
    if (type) err.type = type;
    if (stack) err.stack = stack;
    return err;
  }
  return undefined;
}

/** Descendants of a case in pre-order (children by start time), not entering nested cases. */
function collectChildSpans(
  spans: OtlpSpan[],
  caseSpanId: string,
  children: Map<string, number[]>,
  caseFlags: boolean[],
): ExecutionSpan[] {
  const out: ExecutionSpan[] = [];
  const first = children.get(caseSpanId);
  if (!first) return out;
  const stack: number[] = [];
  for (let j = first.length - 1; j >= 0; j--) stack.push(first[j]!);
  // Every iteration emits one span, so the cap also bounds malformed (cyclic/duplicate-id) input.
  while (stack.length > 0 && out.length < LIMITS.maxSpansPerExecution) {
    const i = stack.pop()!;
    if (caseFlags[i]) continue;
    const s = spans[i]!;
    out.push(toExecutionSpan(s));
    const kids = children.get(s.spanId);
    if (kids) for (let j = kids.length - 1; j >= 0; j--) stack.push(kids[j]!);
  }
  return out;
}

function toExecutionSpan(s: OtlpSpan): ExecutionSpan {
  const es: ExecutionSpan = {
    spanId: s.spanId,
    name: s.name,
    kind: spanKind(s),
    status: s.statusCode,
    startedAt: s.startTimeMs,
    durationMs: Math.round(s.durationMs),
  };
  if (s.parentSpanId !== undefined) es.parentSpanId = s.parentSpanId;
  // Shared with the decoded span, not copied: decoded requests are not reused.
  for (const _ in s.attributes) {
    es.attributes = s.attributes;
    break;
  }
  const error =
    exceptionError(s) ?? (s.statusCode === 'error' && s.statusMessage ? { message: s.statusMessage } : undefined);
  if (error) es.error = error;
  return es;
}

function spanKind(s: OtlpSpan): SpanKind {
  if (s.attributes['http.request.method'] !== undefined || s.attributes['http.method'] !== undefined) return 'http';
  if (s.name === 'test.step') return 'step';
  if (s.name.startsWith('browser.') || s.name.startsWith('pw:api')) return 'browser';
  return 'other';
}

// ---------------------------------------------------------------------------------------------
// Resource / run

type Getter = (...keys: string[]) => AttrValue | undefined;

function mapResource(get: Getter, taskName: string | undefined): BatchResource {
  // service.version last: only pytest-opentelemetry puts the commit there (a full sha only).
  const sha = revisionOf(get(...HEAD_REVISION_KEYS)) ?? commitFromServiceVersion(get('service.version'));
  const branch = branchName(get(...HEAD_NAME_KEYS));
  const res: BatchResource = {
    ciProvider: ciProviderOf(get('ci.provider'), get('cicd.system.component')) ?? ciProviderFromUrl(get(...CI_JOB_URL_KEYS)) ?? 'other',
    // An unusable sha is treated like a missing one: the run is still worth keeping.
    commitSha: sha ?? PLACEHOLDER_COMMIT,
    branch: branch ?? PLACEHOLDER_BRANCH,
    trigger: triggerOf(get('service.trigger', 'flakemetry.trigger')),
  };
  const ciRunId = str(get('cicd.pipeline.run.id', 'ci.run_id'));
  if (ciRunId) res.ciRunId = ciRunId;
  // Numeric only: a change id may be a Gerrit Change-Id or a Phabricator `D123`, not a PR number.
  const pr = positiveInt(get(...CHANGE_ID_KEYS));
  if (pr !== undefined) res.prNumber = pr;
  const shardIndex = positiveInt(get('test.shard.index'));
  if (shardIndex !== undefined) res.shardIndex = shardIndex;
  const shardTotal = positiveInt(get('test.shard.total'));
  if (shardTotal !== undefined) res.shardTotal = shardTotal;
  const repository = repositoryOf(get('vcs.repository.name'), get('vcs.repository.url.full'));
  if (repository) res.repository = repository;
  const baseBranch = branchName(get('vcs.ref.base.name'));
  if (baseBranch) res.baseBranch = baseBranch;
  // Semantic conventions: the revision the head ref was created from, i.e. the PR's merge base.
  // Not a sha → left out, like a missing one (optional context never refuses a run).
  const mergeBase = revisionOf(get('vcs.ref.base.revision'));
  if (mergeBase) res.mergeBase = mergeBase;
  const ciJobUrl = str(get(...CI_JOB_URL_KEYS));
  if (ciJobUrl) res.ciJobUrl = ciJobUrl;
  const ciJobName = str(get(CI_JOB_NAME_KEY))?.trim() || taskName;
  if (ciJobName) res.ciJobName = ciJobName;
  // Not a JSON object → left out (optional context never refuses a run).
  const matrix = jobMatrixOf(get(CI_JOB_MATRIX_KEY));
  if (matrix) res.ciJobMatrix = matrix;
  return res;
}

const PROVIDER_ALIASES: Record<string, CiProvider> = {
  github: 'github_actions',
  'github-actions': 'github_actions',
  'github actions': 'github_actions',
  gitlab: 'gitlab_ci',
  'gitlab-ci': 'gitlab_ci',
  circle: 'circleci',
  azure: 'azure_pipelines',
  'azure-pipelines': 'azure_pipelines',
  'azure devops': 'azure_pipelines',
};

function ciProviderOf(...values: (AttrValue | undefined)[]): CiProvider | undefined {
  for (const v of values) {
    const s = lower(v);
    if (s === undefined) continue;
    if ((CI_PROVIDERS as readonly string[]).includes(s)) return s as CiProvider;
    const alias = PROVIDER_ALIASES[s];
    if (alias) return alias;
  }
  return undefined;
}

function triggerOf(v: AttrValue | undefined): Trigger {
  const s = lower(v);
  return s !== undefined && (TRIGGERS as readonly string[]).includes(s) ? (s as Trigger) : 'other';
}

function runStatusOf(v: AttrValue | undefined): RunStatus | undefined {
  switch (lower(v)) {
    case 'passed':
    case 'success':
      return 'passed';
    case 'failed':
    case 'failure':
    case 'error':
    case 'timeout':
    case 'timed_out': // test.suite.run.status
      return 'failed';
    case 'canceled':
    case 'cancelled':
    case 'cancellation':
    case 'aborted': // test.suite.run.status
      return 'canceled';
    case 'running':
    case 'in_progress': // test.suite.run.status
      return 'running';
  }
  return undefined;
}

/** A commit sha (7 to 40 hex characters), lowercased; anything else is undefined. */
function revisionOf(v: AttrValue | undefined): string | undefined {
  const s = str(v)?.trim().toLowerCase();
  return s !== undefined && /^[0-9a-f]{7,40}$/.test(s) ? s : undefined;
}

function branchName(v: AttrValue | undefined): string | undefined {
  const s = str(v)?.trim();
  if (!s) return undefined;
  return s.startsWith('refs/heads/') ? s.slice(11) || undefined : s;
}

const OWNER_NAME = /^[\w.-]+\/[\w.-]+$/;

function repositoryOf(name: AttrValue | undefined, url: AttrValue | undefined): string | undefined {
  const n = str(name)?.trim();
  if (n && OWNER_NAME.test(n)) return n;
  const u = str(url)?.trim();
  if (!u) return undefined;
  // https://host/owner/name(.git) or scp-like git@host:owner/name.git → last two path segments.
  let p: string;
  const scp = /^[\w.-]+@[\w.-]+:(.+)$/.exec(u);
  if (scp) p = scp[1]!;
  else if (URL.canParse(u)) p = new URL(u).pathname;
  else return undefined;
  const segs = p.replace(/\.git\/?$/, '').split('/').filter(Boolean);
  if (segs.length < 2) return undefined;
  const r = `${segs[segs.length - 2]!}/${segs[segs.length - 1]!}`;
  return OWNER_NAME.test(r) ? r : undefined;
}

// ---------------------------------------------------------------------------------------------
// Attribute coercion

function str(v: AttrValue | undefined): string | undefined {
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : String(v);
}

function jobMatrixOf(v: AttrValue | undefined): Record<string, string> | undefined {
  if (typeof v !== 'string') return undefined;
  try {
    return jobMatrixFrom(JSON.parse(v));
  } catch {
    return undefined;
  }
}

function lower(v: AttrValue | undefined): string | undefined {
  return typeof v === 'string' ? v.trim().toLowerCase() : undefined;
}

function nonNegativeInt(v: AttrValue | undefined): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  if (typeof v === 'string' && /^\s*\d+\s*$/.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  return undefined;
}

function positiveInt(v: AttrValue | undefined): number | undefined {
  const n = nonNegativeInt(v);
  return n !== undefined && n >= 1 ? n : undefined;
}

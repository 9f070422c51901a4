// A run as OTLP/HTTP protobuf: one trace, a `test.run` span and one `test.case` span per execution,
// with the attribute keys the server's OTLP receiver reads (docs/contract.md §4,
// src/receivers/otlp/map.ts), serialized by @opentelemetry/otlp-transformer. A large run is split
// into several requests of the same trace; the server joins the parts by trace id.
import { randomBytes } from 'node:crypto';
import { SpanKind, SpanStatusCode, type Attributes, type HrTime, type SpanContext } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace';
import { newTraceId } from './trace-id.js';
import type { BatchResource, ExecutionError, ExecutionInput, ExecutionSpan, IngestBatch } from './batch.js';
import { jobMatrixText } from './ci-job.js';

/** Cases per request: well under the server's 5000 executions per batch. */
const MAX_CASES_PER_PART = 2000;
/** Rough encoded bytes per request: under the 8 MiB body limit with room for protobuf overhead. */
const MAX_BYTES_PER_PART = 4 * 1024 * 1024;

const SCOPE = { name: 'flakehouse-reporter', version: '0.1.0' };
const TRACE_ID_RE = /^[0-9a-f]{32}$/;

/**
 * Span ids for one encoded run: a 32-bit prefix (never 0, so no id is the invalid all-zero one)
 * followed by a 32-bit counter from a start, both from the first 8 bytes of `seed`. Random by
 * default: one `randomBytes` call per run rather than one per span, which dominated encoding time;
 * ids stay unique within the run's trace (fewer than 2^32 spans) and unpredictable across runs. The
 * `otlp_http` exporter seeds it from a job's receipt, so a re-send repeats the ids.
 */
export function spanIdSource(seed: Buffer = randomBytes(8)): () => string {
  const prefix = (seed.readUInt32BE(0) || 1).toString(16).padStart(8, '0');
  let n = seed.readUInt32BE(4);
  return () => {
    const id = prefix + n.toString(16).padStart(8, '0');
    n = (n + 1) >>> 0;
    return id;
  };
}

/** Resource attributes of the run (docs/contract.md §4 keys, OpenTelemetry semantic conventions first). */
export function resourceAttributes(resource: BatchResource, idempotencyKey: string): Attributes {
  const a: Attributes = {
    'service.name': 'flakehouse-reporter',
    'service.idempotency_key': idempotencyKey,
    'vcs.ref.head.revision': resource.commitSha,
    'vcs.ref.head.name': resource.branch,
    'ci.provider': resource.ciProvider,
    'service.trigger': resource.trigger,
  };
  if (resource.baseBranch) a['vcs.ref.base.name'] = resource.baseBranch;
  // Semantic conventions: the revision the head ref was created from (the PR's merge base).
  if (resource.mergeBase) a['vcs.ref.base.revision'] = resource.mergeBase;
  if (resource.prNumber !== undefined) a['vcs.change.id'] = String(resource.prNumber);
  if (resource.ciRunId) a['cicd.pipeline.run.id'] = resource.ciRunId;
  if (resource.ciJobUrl) a['cicd.pipeline.run.url.full'] = resource.ciJobUrl;
  // Semantic conventions: the task (job) of the pipeline run; no key holds matrix values, so ours does.
  if (resource.ciJobName) a['cicd.pipeline.task.name'] = resource.ciJobName;
  const matrix = jobMatrixText(resource.ciJobMatrix);
  if (matrix !== '') a['service.job.matrix'] = matrix;
  if (resource.repository) a['vcs.repository.name'] = resource.repository;
  if (resource.shardIndex !== undefined) a['test.shard.index'] = resource.shardIndex;
  if (resource.shardTotal !== undefined) a['test.shard.total'] = resource.shardTotal;
  return a;
}

/**
 * Encodes the batch as one or more ExportTraceServiceRequest bodies of the batch's trace.
 * `spanIds`: where span ids come from (random by default); the `otlp_http` exporter passes a
 * seeded source so that a re-sent run carries the same ids and the receiver deduplicates it.
 */
export function encodeOtlpRun(batch: IngestBatch, spanIds: () => string = spanIdSource()): Uint8Array[] {
  const traceId = batch.run.traceId && TRACE_ID_RE.test(batch.run.traceId) ? batch.run.traceId : newTraceId();
  const resource = resourceFromAttributes(resourceAttributes(batch.resource, batch.idempotencyKey));
  const ctx = (spanId: string): SpanContext => ({ traceId, spanId, traceFlags: 1 });
  const newSpanId = spanIds;
  const runSpanId = newSpanId();
  const caseIds = batch.executions.map(() => newSpanId());

  let runEnd = batch.run.startedAt;
  if (batch.run.finishedAt !== undefined) runEnd = batch.run.finishedAt;
  else for (const e of batch.executions) runEnd = Math.max(runEnd, e.startedAt + e.durationMs);
  const runSpan = span({
    name: 'test.run',
    context: ctx(runSpanId),
    startMs: batch.run.startedAt,
    endMs: runEnd,
    attributes: { 'test.run.status': batch.run.status },
    status: batch.run.status === 'failed' ? SpanStatusCode.ERROR : SpanStatusCode.OK,
    resource,
  });

  const parts: ReadableSpan[][] = [];
  // The run span goes in the last part, as an SDK's would (it ends last): the server counts a run
  // as complete once its run span is in, so the gate and the PR summary never judge half a run.
  let current: ReadableSpan[] = [];
  let cases = 0;
  let bytes = 0;
  let partStart = 0;
  batch.executions.forEach((e, i) => {
    const size = estimateBytes(e);
    // A retry refers to its earlier attempt by span id, which the server resolves within one
    // request, so a part never starts between an execution and its retry.
    const retryCrosses = e.retryOfIndex !== undefined && e.retryOfIndex < partStart;
    if (cases > 0 && !retryCrosses && (cases >= MAX_CASES_PER_PART || bytes + size > MAX_BYTES_PER_PART)) {
      parts.push(current);
      current = [];
      cases = 0;
      bytes = 0;
      partStart = i;
    }
    current.push(...caseSpans(e, caseIds[i]!, e.retryOfIndex === undefined ? undefined : caseIds[e.retryOfIndex], ctx, runSpanId, resource, newSpanId));
    cases++;
    bytes += size;
  });
  current.push(runSpan);
  parts.push(current);
  return parts.map((spans) => ProtobufTraceSerializer.serializeRequest(spans) ?? new Uint8Array());
}

function caseSpans(
  e: ExecutionInput,
  spanId: string,
  retryOfSpanId: string | undefined,
  ctx: (spanId: string) => SpanContext,
  runSpanId: string,
  resource: ReadableSpan['resource'],
  newSpanId: () => string,
): ReadableSpan[] {
  // Own keys last: an execution attribute can never shadow the fields the server reads.
  const attributes: Attributes = {
    ...e.attributes,
    'test.title': e.title,
    'test.suite': e.suite,
    'test.file_path': e.filePath,
    'test.status': e.status,
    'test.attempt': e.attempt,
  };
  if (retryOfSpanId !== undefined) attributes['test.retry_of'] = retryOfSpanId;
  if (e.params !== undefined) attributes['test.params'] = JSON.stringify(e.params);
  if (e.artifacts !== undefined && e.artifacts.length > 0) attributes['test.artifacts'] = JSON.stringify(e.artifacts);
  const out: ReadableSpan[] = [
    span({
      name: 'test.case',
      context: ctx(spanId),
      parent: ctx(runSpanId),
      startMs: e.startedAt,
      endMs: e.startedAt + e.durationMs,
      attributes,
      status: e.status === 'fail' ? SpanStatusCode.ERROR : SpanStatusCode.OK,
      statusMessage: e.status === 'fail' ? e.error?.message : undefined,
      events: e.error ? [exceptionEvent(e.error, e.startedAt + e.durationMs)] : [],
      resource,
    }),
  ];
  // Child spans get fresh OTLP ids (the source's may be any string); parents are remapped.
  const ids = new Map<string, string>();
  for (const s of e.spans ?? []) ids.set(s.spanId, newSpanId());
  for (const s of e.spans ?? []) out.push(childSpan(s, ids, spanId, ctx, resource));
  return out;
}

function childSpan(
  s: ExecutionSpan,
  ids: Map<string, string>,
  caseSpanId: string,
  ctx: (spanId: string) => SpanContext,
  resource: ReadableSpan['resource'],
): ReadableSpan {
  const parent = (s.parentSpanId !== undefined ? ids.get(s.parentSpanId) : undefined) ?? caseSpanId;
  return span({
    // The receiver infers the kind from the name and attributes; keep a step recognisable.
    name: s.kind === 'step' && s.name === '' ? 'test.step' : s.name,
    context: ctx(ids.get(s.spanId)!),
    parent: ctx(parent),
    startMs: s.startedAt,
    endMs: s.startedAt + s.durationMs,
    attributes: { ...s.attributes },
    status: s.status === 'error' ? SpanStatusCode.ERROR : s.status === 'ok' ? SpanStatusCode.OK : SpanStatusCode.UNSET,
    statusMessage: s.error?.message,
    events: s.error ? [exceptionEvent(s.error, s.startedAt + s.durationMs)] : [],
    resource,
  });
}

function exceptionEvent(error: ExecutionError, atMs: number): TimedEvent {
  const attributes: Attributes = { 'exception.message': error.message };
  if (error.type) attributes['exception.type'] = error.type;
  if (error.stack) attributes['exception.stacktrace'] = error.stack;
  return { name: 'exception', time: hrTime(atMs), attributes };
}

interface SpanInit {
  name: string;
  context: SpanContext;
  parent?: SpanContext;
  startMs: number;
  endMs: number;
  attributes: Attributes;
  status: SpanStatusCode;
  statusMessage?: string;
  events?: TimedEvent[];
  resource: ReadableSpan['resource'];
}

function span(init: SpanInit): ReadableSpan {
  const end = Math.max(init.endMs, init.startMs);
  return {
    name: init.name,
    kind: SpanKind.INTERNAL,
    spanContext: () => init.context,
    parentSpanContext: init.parent,
    startTime: hrTime(init.startMs),
    endTime: hrTime(end),
    duration: hrTime(end - init.startMs),
    status: init.statusMessage ? { code: init.status, message: init.statusMessage } : { code: init.status },
    attributes: init.attributes,
    links: [],
    events: init.events ?? [],
    ended: true,
    resource: init.resource,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

function hrTime(ms: number): HrTime {
  const whole = Math.floor(ms);
  return [Math.floor(whole / 1000), (whole % 1000) * 1_000_000 + Math.round((ms - whole) * 1_000_000)];
}

function estimateBytes(e: ExecutionInput): number {
  let n = 200 + e.title.length + e.suite.length + e.filePath.length;
  if (e.error) n += e.error.message.length + (e.error.stack?.length ?? 0) + (e.error.type?.length ?? 0);
  if (e.attributes) for (const [k, v] of Object.entries(e.attributes)) n += k.length + String(v).length + 8;
  for (const s of e.spans ?? []) n += 150 + s.name.length + (s.error ? s.error.message.length + (s.error.stack?.length ?? 0) : 0);
  for (const a of e.artifacts ?? []) n += 80 + a.name.length + a.path.length + (a.key?.length ?? 0);
  return n;
}

// OTLP/HTTP trace request decoding: protobuf and JSON bodies both normalize into one
// internal representation (OtlpTraceRequest) that the mapper consumes.
import type protobuf from 'protobufjs';
import { z } from 'zod';
import { STORABLE, TIME_WINDOW_TEXT } from '../../../client/src/contract/storable.js';
import { otlpProtoRoot } from '../../otlp/proto.js';

/** Flattened attribute value: arrays and kvlists are JSON strings, bytes are base64. */
export type AttrValue = string | number | boolean;
export type Attributes = Record<string, AttrValue>;
export type OtlpStatusCode = 'unset' | 'ok' | 'error';

export interface OtlpEvent {
  name: string;
  /** Epoch ms (0 when absent). */
  timeMs: number;
  attributes: Attributes;
}

export interface OtlpSpan {
  /** 32 lowercase hex chars. */
  traceId: string;
  /** 16 lowercase hex chars. */
  spanId: string;
  /** Absent for a root span. */
  parentSpanId: string | undefined;
  name: string;
  /** OTLP SpanKind number (0 unspecified .. 5 consumer). */
  kind: number;
  /** Epoch ms, truncated (0 when absent). */
  startTimeMs: number;
  endTimeMs: number;
  /** end - start in ms with µs precision; 0 if end < start. */
  durationMs: number;
  statusCode: OtlpStatusCode;
  statusMessage: string;
  attributes: Attributes;
  events: OtlpEvent[];
}

export interface OtlpResourceSpans {
  resource: Attributes;
  /** Spans of every scope of this resource, in document order. */
  spans: OtlpSpan[];
}

/** A span left out of the request (OTLP partial success): where it was and why. */
export interface RejectedSpan {
  path: string;
  message: string;
}

export interface OtlpTraceRequest {
  resourceSpans: OtlpResourceSpans[];
  /** Spans refused one by one (invalid ids, ends before it starts); the rest of the request stands. */
  rejected: RejectedSpan[];
}

export class OtlpDecodeError extends Error {
  override readonly name: string = 'OtlpDecodeError';
  /** Dotted location of the offending value, e.g. `resourceSpans.0.scopeSpans.1.spans.3.traceId`. */
  readonly path: string | undefined;
  /** `message` never repeats the path, so callers can render `{ path, message }` issues. */
  constructor(message: string, path?: string) {
    super(message);
    this.path = path;
  }
}

/**
 * A span that cannot be true (an all-zero or malformed id, an end before its start): the OTLP
 * spec has the server reject such spans one by one and report them as a partial success, not
 * refuse the export (docs/contract.md §4).
 */
export class InvalidSpanError extends OtlpDecodeError {
  override readonly name: string = 'InvalidSpanError';
}

// ---------------------------------------------------------------------------------------------
// Raw shape shared by protobufjs toObject output and the zod-validated JSON: both use the
// lowerCamelCase field names; they differ only in how bytes travel (Uint8Array vs strings).

type Bytes = string | Uint8Array;
type Int64 = string | number;
type Opt<T> = T | null | undefined;

interface RawAnyValue {
  stringValue?: Opt<string>;
  boolValue?: Opt<boolean>;
  intValue?: Opt<Int64>;
  doubleValue?: Opt<number | string>;
  arrayValue?: Opt<{ values?: Opt<RawAnyValue[]> }>;
  kvlistValue?: Opt<{ values?: Opt<RawKeyValue[]> }>;
  bytesValue?: Opt<Bytes>;
}
interface RawKeyValue {
  key?: Opt<string>;
  value?: Opt<RawAnyValue>;
}
interface RawEvent {
  timeUnixNano?: Opt<Int64>;
  name?: Opt<string>;
  attributes?: Opt<RawKeyValue[]>;
}
interface RawSpan {
  traceId?: Opt<Bytes>;
  spanId?: Opt<Bytes>;
  parentSpanId?: Opt<Bytes>;
  name?: Opt<string>;
  kind?: Opt<number | string>;
  startTimeUnixNano?: Opt<Int64>;
  endTimeUnixNano?: Opt<Int64>;
  attributes?: Opt<RawKeyValue[]>;
  events?: Opt<RawEvent[]>;
  status?: Opt<{ message?: Opt<string>; code?: Opt<number | string> }>;
}
interface RawRequest {
  resourceSpans?: Opt<
    {
      resource?: Opt<{ attributes?: Opt<RawKeyValue[]> }>;
      scopeSpans?: Opt<{ spans?: Opt<RawSpan[]> }[]>;
    }[]
  >;
}

// ---------------------------------------------------------------------------------------------
// Protobuf

// protobufjs generates the decoder lazily on first use.
const RequestType: protobuf.Type = otlpProtoRoot.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');

// Bytes stay Uint8Array (hexed directly, no base64 round trip); enums stay numbers.
const TO_OBJECT: protobuf.IConversionOptions = { longs: String };

export function decodeOtlpProtobuf(buf: Uint8Array): OtlpTraceRequest {
  let raw: RawRequest;
  try {
    // toObject is typed loosely; the shape is fixed by the .proto files, so RawRequest holds.
    raw = RequestType.toObject(RequestType.decode(buf), TO_OBJECT);
  } catch (err) {
    // protobufjs stops at its own recursion limit (100 nested messages): the same refusal as ours.
    if (err instanceof Error && /max depth exceeded/i.test(err.message)) throw tooDeep('');
    throw new OtlpDecodeError(`invalid protobuf: ${err instanceof Error ? err.message : String(err)}`);
  }
  return guardDepth(() => normalize(raw));
}

// ---------------------------------------------------------------------------------------------
// JSON (OTLP/JSON: lowerCamelCase keys, hex ids, int64 as string or number, enums as int or name)

const int64Schema = z.union([
  z.string().regex(/^-?\d+$/, 'expected an integer'),
  z.number().refine(Number.isInteger, 'expected an integer'),
]);
const uint64Schema = z.union([z.string().regex(/^\d+$/, 'expected an unsigned integer'), z.number().nonnegative()]);
const enumSchema = z.union([z.number().int(), z.string()]);

const anyValueSchema: z.ZodType<RawAnyValue> = z.lazy(() =>
  z.object({
    stringValue: z.string().nullish(),
    boolValue: z.boolean().nullish(),
    intValue: int64Schema.nullish(),
    doubleValue: z.union([z.number(), z.enum(['NaN', 'Infinity', '-Infinity'])]).nullish(),
    arrayValue: z.object({ values: z.array(anyValueSchema).nullish() }).nullish(),
    kvlistValue: z.object({ values: z.array(keyValueSchema).nullish() }).nullish(),
    bytesValue: z.string().nullish(),
  }),
);
const keyValueSchema: z.ZodType<RawKeyValue> = z.lazy(() =>
  z.object({ key: z.string().nullish(), value: anyValueSchema.nullish() }),
);
const attributesSchema = z.array(keyValueSchema).nullish();

const spanSchema = z.object({
  traceId: z.string().nullish(),
  spanId: z.string().nullish(),
  parentSpanId: z.string().nullish(),
  name: z.string().nullish(),
  kind: enumSchema.nullish(),
  startTimeUnixNano: uint64Schema.nullish(),
  endTimeUnixNano: uint64Schema.nullish(),
  attributes: attributesSchema,
  events: z
    .array(z.object({ timeUnixNano: uint64Schema.nullish(), name: z.string().nullish(), attributes: attributesSchema }))
    .nullish(),
  status: z.object({ message: z.string().nullish(), code: enumSchema.nullish() }).nullish(),
});

const requestSchema = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes: attributesSchema }).nullish(),
        scopeSpans: z.array(z.object({ spans: z.array(spanSchema).nullish() })).nullish(),
      }),
    )
    .nullish(),
});

export function decodeOtlpJson(value: unknown): OtlpTraceRequest {
  return guardDepth(() => {
    const parsed = requestSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new OtlpDecodeError(issue?.message ?? 'invalid OTLP/JSON', issue ? issue.path.join('.') : '');
    }
    return normalize(parsed.data);
  });
}

// Nested arrayValue/kvlistValue recurse; a hostile body nested deep enough to exhaust the stack
// is the sender's fault (400), not a server error.
function guardDepth<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof RangeError) throw tooDeep('');
    throw err;
  }
}

/*
 * Attribute values (arrayValue / kvlistValue) may nest as deep as free-form JSON anywhere else:
 * STORABLE.maxJsonDepth levels counting the attribute set itself, as the native route counts its
 * `attributes` object (docs/contract.md §2), whatever the encoding (plainValue).
 */
function tooDeep(path: string): OtlpDecodeError {
  return new OtlpDecodeError(`nested too deeply: at most ${STORABLE.maxJsonDepth} levels of objects and arrays`, path);
}

// ---------------------------------------------------------------------------------------------
// Normalization

const SPAN_KINDS: Record<string, number> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
const STATUS_CODES: Record<string, number> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };
const HEX_RE = /^[0-9a-fA-F]*$/;

function normalize(raw: RawRequest): OtlpTraceRequest {
  const out: OtlpResourceSpans[] = [];
  const rejected: RejectedSpan[] = [];
  const rsList = raw.resourceSpans ?? [];
  for (let r = 0; r < rsList.length; r++) {
    const rs = rsList[r]!;
    const spans: OtlpSpan[] = [];
    const scopes = rs.scopeSpans ?? [];
    for (let s = 0; s < scopes.length; s++) {
      const list = scopes[s]!.spans ?? [];
      for (let i = 0; i < list.length; i++) {
        try {
          spans.push(normalizeSpan(list[i]!));
        } catch (err) {
          // Paths are built only on failure: no per-span string churn on the happy path.
          if (!(err instanceof OtlpDecodeError)) throw err;
          const path = `resourceSpans.${r}.scopeSpans.${s}.spans.${i}.${err.path ?? ''}`;
          if (err instanceof InvalidSpanError) rejected.push({ path, message: err.message });
          else throw new OtlpDecodeError(err.message, path);
        }
      }
    }
    let resource: Attributes;
    try {
      resource = flattenAttributes(rs.resource?.attributes);
    } catch (err) {
      if (!(err instanceof OtlpDecodeError)) throw err;
      throw new OtlpDecodeError(err.message, `resourceSpans.${r}.resource.${err.path ?? ''}`);
    }
    out.push({ resource, spans });
  }
  return { resourceSpans: out, rejected };
}

/** Throws OtlpDecodeError with a span-relative path; the caller prefixes it. */
function normalizeSpan(span: RawSpan): OtlpSpan {
  const traceId = toHexId(span.traceId, 16, 'traceId');
  const spanId = toHexId(span.spanId, 8, 'spanId');
  const parent = span.parentSpanId;
  // All zeros as a parent is what some exporters write for "no parent": a root span, not an invalid one.
  const parentSpanId = parent == null || parent.length === 0 || isAllZero(parent) ? undefined : toHexId(parent, 8, 'parentSpanId');
  const startUs = nanosToMicros(span.startTimeUnixNano);
  const endUs = nanosToMicros(span.endTimeUnixNano);
  // Checked here rather than on the batch, where the request path would be lost.
  if (startUs > MAX_TIME_US) throw new OtlpDecodeError(`${TIME_WINDOW_TEXT} (epoch nanoseconds)`, 'startTimeUnixNano');
  if (endUs > MAX_TIME_US) throw new OtlpDecodeError(`${TIME_WINDOW_TEXT} (epoch nanoseconds)`, 'endTimeUnixNano');
  // A span (a run span above all) that ends before it starts measured nothing we could store truthfully.
  if (endUs > 0 && endUs < startUs) throw new InvalidSpanError('the span ends before it starts (endTimeUnixNano < startTimeUnixNano)', 'endTimeUnixNano');
  const rawEvents = span.events;
  const events: OtlpEvent[] = [];
  if (rawEvents) {
    for (let j = 0; j < rawEvents.length; j++) {
      const e = rawEvents[j]!;
      events.push({
        name: e.name ?? '',
        timeMs: Math.floor(nanosToMicros(e.timeUnixNano) / 1000),
        attributes: flattenAttributes(e.attributes, `events.${j}.`),
      });
    }
  }
  const status = span.status;
  const code = status?.code == null ? 0 : enumValue(status.code, STATUS_CODES, 'status.code');
  return {
    traceId,
    spanId,
    parentSpanId,
    name: span.name ?? '',
    kind: span.kind == null ? 0 : enumValue(span.kind, SPAN_KINDS, 'kind'),
    startTimeMs: Math.floor(startUs / 1000),
    endTimeMs: Math.floor(endUs / 1000),
    durationMs: endUs > startUs ? (endUs - startUs) / 1000 : 0,
    statusCode: code === 2 ? 'error' : code === 1 ? 'ok' : 'unset',
    statusMessage: status?.message ?? '',
    attributes: flattenAttributes(span.attributes, ''),
    events,
  };
}

/** An id of only zero bytes: the OTLP spec's invalid trace or span id. */
function isAllZero(value: Bytes): boolean {
  if (typeof value === 'string') return /^0+$/.test(value);
  for (let k = 0; k < value.length; k++) if (value[k] !== 0) return false;
  return value.length > 0;
}

/** A trace or span id as lowercase hex; a missing, malformed or all-zero one rejects the span (partial success). */
function toHexId(value: Opt<Bytes>, bytes: number, at: string): string {
  if (value == null || value.length === 0) throw new InvalidSpanError('required', at);
  if (typeof value === 'string') {
    // OTLP/JSON carries ids as hex, not base64 (unlike the generic proto3 JSON mapping).
    if (value.length !== bytes * 2 || !HEX_RE.test(value)) {
      throw new InvalidSpanError(`expected ${bytes * 2} hex characters`, at);
    }
  } else if (value.length !== bytes) {
    throw new InvalidSpanError(`expected ${bytes} bytes, got ${value.length}`, at);
  }
  if (isAllZero(value)) throw new InvalidSpanError('all zero: not a valid id (OTLP)', at);
  return typeof value === 'string' ? value.toLowerCase() : Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex');
}

function enumValue(value: number | string, names: Record<string, number>, at: string): number {
  if (typeof value === 'number') return value;
  const n = names[value];
  if (n === undefined) throw new OtlpDecodeError(`unknown enum value "${value}"`, at);
  return n;
}

/** The last storable µs (client/src/contract/storable.ts); 0 stays "absent". */
const MAX_TIME_US = STORABLE.maxTimeMs * 1000 + 999;

// Epoch nanos → µs: µs since 1970 stay below 2^53, so the result is exact.
function nanosToMicros(value: Opt<Int64>): number {
  if (value == null) return 0;
  if (typeof value === 'number') return value > 0 ? Math.floor(value / 1000) : 0;
  return value.length > 3 ? Number(value.slice(0, -3)) : 0;
}

/** `at` is the span-relative prefix of the attributes' path (`events.2.`), used only on failure. */
function flattenAttributes(list: Opt<RawKeyValue[]>, at = ''): Attributes {
  const out: Attributes = {};
  if (!list) return out;
  for (const kv of list) {
    if (kv.key == null || kv.value == null) continue;
    const v = scalarValue(kv.value, 1);
    if (v === TOO_DEEP) throw tooDeep(`${at}attributes.${kv.key}`);
    if (v !== undefined) out[kv.key] = v;
  }
  return out;
}

/** Returned up the walk when a value nests past the limit; the caller names the attribute. */
const TOO_DEEP = Symbol('too deep');

/** `depth`: levels of arrays / kvlists this value sits in, the attribute set counted as one. */
function scalarValue(v: RawAnyValue, depth: number): AttrValue | undefined | typeof TOO_DEEP {
  if (v.stringValue != null) return v.stringValue;
  if (v.boolValue != null) return v.boolValue;
  if (v.intValue != null) return intValue(v.intValue);
  if (v.doubleValue != null) return doubleValue(v.doubleValue);
  if (v.arrayValue != null || v.kvlistValue != null) {
    const plain = plainValue(v, depth + 1);
    return plain === TOO_DEEP ? TOO_DEEP : JSON.stringify(plain);
  }
  if (v.bytesValue != null) return bytesValue(v.bytesValue);
  return undefined;
}

/**
 * Nested form used inside flattened arrays/kvlists; an empty AnyValue becomes null. The walk
 * stops at the depth limit, so a value nested deeper than the stack is refused, not a crash.
 */
function plainValue(v: RawAnyValue, depth: number): unknown {
  if (v.arrayValue != null || v.kvlistValue != null) {
    if (depth > STORABLE.maxJsonDepth) return TOO_DEEP;
    if (v.arrayValue != null) {
      const values = v.arrayValue.values ?? [];
      const arr: unknown[] = new Array<unknown>(values.length);
      for (let k = 0; k < values.length; k++) {
        const x = plainValue(values[k]!, depth + 1);
        if (x === TOO_DEEP) return TOO_DEEP;
        arr[k] = x;
      }
      return arr;
    }
    const obj: Record<string, unknown> = {};
    for (const kv of v.kvlistValue?.values ?? []) {
      if (kv.key == null) continue;
      const x = kv.value == null ? null : plainValue(kv.value, depth + 1);
      if (x === TOO_DEEP) return TOO_DEEP;
      obj[kv.key] = x;
    }
    return obj;
  }
  return scalarValue(v, depth) ?? null;
}

// int64 beyond 2^53 stays a string rather than silently losing digits.
function intValue(v: Int64): AttrValue {
  if (typeof v === 'number') return v;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v;
}

function doubleValue(v: number | string): AttrValue {
  if (typeof v === 'number') return v;
  const n = Number(v);
  return Number.isFinite(n) ? n : v;
}

function bytesValue(v: Bytes): string {
  return typeof v === 'string' ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

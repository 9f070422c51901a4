// A lease as OTLP/HTTP requests for the gateway: each job's run encoded by the reporter's encoder
// (client/src/contract/otlp-encode.ts: a `test.run` span and one `test.case` span per execution, the keys
// src/receivers/otlp/map.ts reads), with ids derived from what we stored, so that a re-send is the
// same bytes and the gateway's idempotency key (map.ts `partKey`: the `service.idempotency_key`
// attribute plus a digest of the part's span ids) repeats: the gateway stores each execution once.
import { createHash } from 'node:crypto';
import type { IngestBatch } from '../../../client/src/contract/batch.js';
import type { WorkItem } from '../../pipeline/work-batch.js';
import { encodeOtlpRun, spanIdSource } from '../../../client/src/contract/otlp-encode.js';

const TRACE_ID_RE = /^[0-9a-f]{32}$/;

function digest(...parts: string[]): Buffer {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\u0000');
  return h.digest();
}

/**
 * The trace a job is forwarded as, which is the run the gateway files it under
 * (domain/records.ts `traceRunIdFor`):
 *  - an OTLP part keeps its trace: the parts of one trace stay one run at the gateway too;
 *  - a JUnit report split in parts is named by its report key, so its parts stay one run;
 *  - any other job is its own run, named by its receipt (stable across redeliveries).
 */
export function forwardTraceId(item: Pick<WorkItem, 'job'>): string {
  const { job } = item;
  const traceId = job.batch.run.traceId;
  if (job.source === 'otlp' && traceId !== undefined && TRACE_ID_RE.test(traceId)) return traceId;
  const part = job.batch.run.reportPart;
  const seed = part ? digest('forward-report', job.projectId, part.key) : digest('forward-receipt', job.projectId, job.receiptId);
  return seed.subarray(0, 16).toString('hex');
}

/**
 * Span ids of one job: the reporter's source (a 32-bit prefix, never 0, and a 32-bit counter)
 * seeded from the job's receipt. Deterministic, so a re-send repeats them; distinct per job, so
 * the parts of one trace do not collide.
 */
export function seededSpanIds(projectId: string, receiptId: string): () => string {
  return spanIdSource(digest('forward-spans', projectId, receiptId));
}

/** One job's run as ExportTraceServiceRequest bodies (several for a large run, run span in the last). */
export function encodeJob(item: Pick<WorkItem, 'job'>): Uint8Array[] {
  const { job } = item;
  const batch: IngestBatch = { ...job.batch, run: { ...job.batch.run, traceId: forwardTraceId(item) } };
  return encodeOtlpRun(batch, seededSpanIds(job.projectId, job.receiptId));
}

export interface ForwardRequest {
  /** Concatenated ExportTraceServiceRequest messages: protobuf merges repeated fields, so this is one request. */
  body: Uint8Array;
  jobs: number;
  executions: number;
}

/**
 * The lease's jobs packed into requests of at most `maxBytes` (one part alone may exceed it). A
 * request never holds two parts of one trace: the gateway maps a request's spans per trace, so two
 * parts together would get one key, and a re-send packed differently (a lease split after a
 * failure) would get two others and be stored twice. Kept apart, every part has its own key
 * whatever the packing.
 */
export function packLease(items: readonly Pick<WorkItem, 'job'>[], maxBytes: number): ForwardRequest[] {
  const out: ForwardRequest[] = [];
  let chunks: Uint8Array[] = [];
  let traces = new Set<string>();
  let bytes = 0;
  let jobs = 0;
  let executions = 0;
  const flush = (): void => {
    if (chunks.length === 0) return;
    out.push({ body: Buffer.concat(chunks), jobs, executions });
    chunks = [];
    traces = new Set();
    bytes = 0;
    jobs = 0;
    executions = 0;
  };
  for (const item of items) {
    const traceId = forwardTraceId(item);
    const parts = encodeJob(item);
    for (const [i, part] of parts.entries()) {
      if (traces.has(traceId) || (chunks.length > 0 && bytes + part.length > maxBytes)) flush();
      chunks.push(part);
      traces.add(traceId);
      bytes += part.length;
      // A job counts once, with its executions, in the request that carries its last part.
      if (i === parts.length - 1) {
        jobs++;
        executions += item.job.batch.executions.length;
      }
    }
  }
  flush();
  return out;
}

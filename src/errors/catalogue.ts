// Errors as values with codes (docs/contract.md §5): `{ error, message?, issues? }`, never a stack trace.
// The one catalogue, below the API layer: the API's routes, the ingest door (src/ingest) and the
// receivers raise these, and the app (src/api/app.ts) and OTLP/gRPC (receivers/otlp/grpc-status.ts)
// answer them.
import type { z } from 'zod';
import { zodIssuesToMessages } from '../../client/src/contract/config/errors.js';
import { INSUFFICIENT_SCOPE, insufficientScopeMessage } from '../../client/src/contract/error-codes.js';

export interface ErrorIssue {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message?: string,
    readonly extra: { issues?: ErrorIssue[]; headers?: Record<string, string>; body?: Record<string, unknown> } = {},
  ) {
    super(message ?? code);
    this.name = 'ApiError';
  }

  toBody(): Record<string, unknown> {
    return {
      error: this.code,
      ...(this.message && this.message !== this.code ? { message: this.message } : {}),
      ...(this.extra.issues ? { issues: this.extra.issues } : {}),
      ...this.extra.body,
    };
  }
}

export function zodIssues(error: z.ZodError, prefix: readonly (string | number)[] = []): ErrorIssue[] {
  const head = prefix.join('.');
  return zodIssuesToMessages(error).map((i) => ({ path: head && i.path ? `${head}.${i.path}` : head || i.path, message: i.message }));
}

export const errors = {
  unauthorized: (message = 'a valid bearer token is required') =>
    new ApiError(401, 'unauthorized', message, { headers: { 'www-authenticate': 'Bearer' } }),
  insufficientScope: (scope: string) => new ApiError(403, INSUFFICIENT_SCOPE, insufficientScopeMessage(scope)),
  notFound: (what = 'not found') => new ApiError(404, 'not_found', what),
  invalidPayload: (issues: ErrorIssue[], message = 'the request body does not match the schema') =>
    new ApiError(400, 'invalid_payload', message, { issues }),
  invalidQuery: (issues: ErrorIssue[]) => new ApiError(400, 'invalid_query', 'invalid query parameters', { issues }),
  payloadTooLarge: (message: string) => new ApiError(413, 'payload_too_large', message),
  unsupportedContentType: (contentType: string, allowed: string[]) =>
    new ApiError(415, 'unsupported_content_type', `expected ${allowed.join(' or ')}`, { body: { contentType } }),
  backpressure: () =>
    new ApiError(503, 'backpressure', 'the ingest queue is full; retry shortly', { headers: { 'retry-after': '1' } }),
  /**
   * 503: the queue's server (NATS JetStream, SERVICE_QUEUE_URL) cannot be reached or did not
   * acknowledge in time. Not `backpressure` (the queue is reachable and full). A publish whose
   * answer was lost may have landed: a retry with the same idempotencyKey gets its receipt.
   */
  queueUnavailable: () =>
    new ApiError(503, 'queue_unavailable', 'the queue server did not acknowledge the batch; retry shortly with the same idempotencyKey', {
      headers: { 'retry-after': '5' },
    }),
  /**
   * 503 from `GET /ready` (readiness, not liveness): the process cannot do its work now, e.g. its
   * queue server (NATS, SERVICE_QUEUE_URL) is unreachable. A load balancer routes around it.
   */
  notReady: (reason: string) => new ApiError(503, 'not_ready', reason, { headers: { 'retry-after': '5' } }),
  /**
   * 503: the door is at a cap (docs/api.md "Limits at the door"): too many connections, or too many
   * request bodies being received at once. Not `backpressure`, which says the queue is full.
   */
  serverBusy: (what: string) =>
    new ApiError(503, 'server_busy', `${what}; retry shortly`, { headers: { 'retry-after': '1' } }),
  /**
   * 503: the process is above a `memory_limiter` processor's soft limit (docs/pipeline.md): new
   * ingest is refused at the door until memory comes back down. Not `backpressure` (the queue is full).
   */
  memoryLimited: (retryAfterSec: number) =>
    new ApiError(503, 'memory_limited', 'the server is above its memory limit and stored nothing; retry shortly', {
      headers: { 'retry-after': String(retryAfterSec) },
    }),
  /** 507: the disk (or the queue's byte cap) is full; nothing was stored, retry once space returns. */
  insufficientStorage: (reason: string) =>
    new ApiError(507, 'insufficient_storage', `the server is out of storage space and stored nothing: ${reason}; retry later`, {
      headers: { 'retry-after': '30' },
    }),
  /**
   * 409: the idempotency key belongs to a job that was parked as dead, so its batch is not stored.
   * Not `deduplicated: true`, which would tell the sender the data is safe: the operator requeues
   * the job (stored once, under this receipt) or drops it (the key is released and the batch may
   * be sent again).
   */
  deadLetter: (receiptId: string) =>
    new ApiError(
      409,
      'dead_letter',
      `this idempotency key's batch (receipt ${receiptId}) failed processing and is parked as a dead job: nothing was stored. An operator can requeue it (POST /v1/admin/dead-jobs/${receiptId}/requeue, or \`flakehouse dead requeue ${receiptId}\`) or drop it (DELETE /v1/admin/dead-jobs/${receiptId}, or \`flakehouse dead drop ${receiptId}\`), after which the batch can be sent again`,
      { body: { receiptId } },
    ),
  /** 403: a cookie-authenticated (dashboard) mutation without the session's x-csrf-token header, or from another origin. */
  csrfFailed: (why: string) => new ApiError(403, 'csrf_failed', `cross-site request refused: ${why}`),
  /** 403: the caller is signed in, but only the admin token may do this. */
  adminRequired: () => new ApiError(403, 'admin_required', 'only the admin token (SERVICE_ADMIN_TOKEN) may do this'),
  /** 403: a project's token (or session) naming another project in x-flakehouse-project. */
  otherProject: (slug: string) => new ApiError(403, 'forbidden', `this token belongs to another project than "${slug}"`),
  /** 400: an admin call that acts on one project without naming it. */
  projectRequired: () =>
    new ApiError(400, 'project_required', 'name the project with the x-flakehouse-project header (its slug): the admin token belongs to no project'),
  rateLimited: (retryAfterSec: number) =>
    new ApiError(429, 'rate_limited', 'too many requests for this project', { headers: { 'retry-after': String(retryAfterSec) } }),
  // The SQL endpoint (/clickhouse): messages in ClickHouse's `Code: N. DB::Exception: … (NAME)` form,
  // which ClickHouse clients parse into their typed errors, and its X-ClickHouse-Exception-Code header.
  /** 400: the engine refused the analyst's query (syntax, unknown column, a limit reached). */
  sqlError: (code: number, name: string, text: string) =>
    new ApiError(400, 'sql_error', text, { headers: { 'x-clickhouse-exception-code': String(code) }, body: { clickhouseCode: code, clickhouseError: name } }),
  /** 403: the query names something this token may not read or do. */
  sqlRefused: (reason: string) =>
    new ApiError(403, 'sql_refused', `Code: 497. DB::Exception: ${reason}. (ACCESS_DENIED)`, { headers: { 'x-clickhouse-exception-code': '497' } }),
  /** 429: the cap on concurrent SQL queries is reached. */
  sqlBusy: (max: number) =>
    new ApiError(429, 'rate_limited', `Code: 202. DB::Exception: too many simultaneous SQL queries (at most ${max}); retry shortly. (TOO_MANY_SIMULTANEOUS_QUERIES)`, {
      headers: { 'retry-after': '1', 'x-clickhouse-exception-code': '202' },
    }),
  /** 501: with a ClickHouse server (SERVICE_CLICKHOUSE_URL) analysts connect to it directly. */
  sqlUnavailable: () =>
    new ApiError(501, 'not_implemented', 'the SQL endpoint serves the embedded store only; with SERVICE_CLICKHOUSE_URL set, connect your ClickHouse client to that server directly'),
  // Answers given before any route runs (src/api/app.ts: Node's clientError, fastify's frameworkErrors).
  badRequest: (message: string) => new ApiError(400, 'bad_request', message),
  requestTimeout: () => new ApiError(408, 'request_timeout', 'the request was not received in time'),
  uriTooLong: (message: string) => new ApiError(414, 'uri_too_long', message),
  headersTooLarge: (maxBytes: number) =>
    new ApiError(431, 'headers_too_large', `the request line and headers exceed ${maxBytes} bytes; send large values in the body`),
  /** 400 with the status fastify gave (a 4xx it raised that no entry above names). */
  clientError: (statusCode: number, message: string) => new ApiError(statusCode, 'bad_request', message),
  /** 500: our own failure; the cause goes to the log, never to the client. */
  internal: () => new ApiError(500, 'internal_error', 'internal error'),
  routeNotFound: (method: string, path: string) => new ApiError(404, 'not_found', `no route for ${method} ${path}`),
  /** 415 from fastify's content-type parsing, in its words. */
  unsupportedMediaType: (message: string) => new ApiError(415, 'unsupported_content_type', message),
  unsupportedContentEncoding: (encoding: string) =>
    new ApiError(415, 'unsupported_content_type', `unsupported content-encoding "${encoding}"; use gzip or none`, { body: { contentEncoding: encoding } }),
  /** 400 invalid_payload for a body that is unusable as a whole (no field to name in `issues`). */
  invalidBody: (message: string) => new ApiError(400, 'invalid_payload', message),
  unsupportedContractVersion: (message: string) =>
    new ApiError(400, 'unsupported_contract_version', message, { issues: [{ path: 'contractVersion', message: 'unsupported major version' }] }),
  /** 400: a JUnit report that is not XML we can read, or holds no test case. */
  unreadableJUnit: (code: 'invalid_junit_xml' | 'empty_report' | 'too_many_testcases', message: string) => new ApiError(400, code, message),
  conflict: (message: string) => new ApiError(409, 'conflict', message),
  /** 501: no object storage on this server (SERVICE_S3_BUCKET unset). */
  artifactsDisabled: () => new ApiError(501, 'artifacts_disabled', 'artifact storage is not configured on this server (SERVICE_S3_BUCKET is unset)'),
  /** 415: artifact `index` of a presign request has a type outside the allow-list. */
  artifactTypeNotAllowed: (contentType: string, index: number, allowed: readonly string[]) =>
    new ApiError(415, 'unsupported_content_type', `artifact content type "${contentType}" is not allowed; allowed: ${allowed.join(', ')}`, {
      issues: [{ path: `artifacts.${index}.contentType`, message: 'content type not allowed' }],
      body: { contentType },
    }),
  /**
   * 502: the artifact bucket (`SERVICE_S3_BUCKET`) did not answer a listing, so an export, which lists the
   * project's objects, is refused before its 200 instead of being cut short after its rows.
   */
  artifactStoreUnavailable: () =>
    new ApiError(502, 'artifact_store_unavailable', 'the artifact store cannot be listed now, so the export was not started; retry later', {
      headers: { 'retry-after': '30' },
    }),
  /** 429: one export per project at a time. */
  exportRunning: () => new ApiError(429, 'rate_limited', 'an export of this project is already running', { headers: { 'retry-after': '10' } }),
  invalidCommitSha: () => new ApiError(400, 'invalid_commit_sha', 'commitSha must be 7 to 40 hexadecimal characters'),
  invalidBaseBranch: () => new ApiError(400, 'invalid_base_branch', 'baseBranch must be 1 to 255 characters of letters, digits, _ . / -'),
};

// Delivers one test run to Flakehouse: what `flakehouse report` and the runner reporters
// (Vitest, Jest, Playwright) share once they have the executions in hand. Resolves settings and
// CI metadata, replays runs buffered by earlier invocations, samples, delivers with retries over
// the chosen transport, buffers on failure and syncs CODEOWNERS and notification routing.
// It never breaks CI: problems are logged as warnings and it throws only when `strict`.
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { AggregateConfigError, ConfigError } from '../contract/config/errors.js';
import { CURRENT_CONTRACT_VERSION, LIMITS, deriveRunStatus, type ExecutionInput, type IngestBatch } from '../contract/batch.js';
import { uploadArtifacts } from './artifacts.js';
import { RunBuffer, type BufferEntry, type BufferedRequest } from './buffer.js';
import { detectCi, type CiDetection } from './ci-detect.js';
import { DEFAULT_RETRY_POLICY, deliver, type DeliveryOutcome, type RetryPolicy } from './deliver.js';
import { newTraceId } from '../contract/trace-id.js';
import { syncCodeowners, syncRouting, type PutJson } from './owners-sync.js';
import { findMergeBase } from './merge-base.js';
import { idempotencyKeyFor, resolveResource, sampledIn } from './run-context.js';
import { lastReportFromResource, writeLastReport } from './last-report.js';
import { loadReporterSettings, type ReporterSettings } from './settings.js';
import type { ReporterRun } from './types.js';

export interface SendOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  strict?: boolean;
  log?: (line: string) => void;
}

export interface SendResult {
  delivered: boolean;
  buffered: boolean;
  replayed: number;
  receiptId?: string;
  acceptedExecutions?: number;
  deduplicated?: boolean;
  /**
   * Not sent, and not a problem: `sampled` (SERVICE_SAMPLE_RATE), `off` (SERVICE_REPORT=off),
   * `not_set_up` (nothing set up on this machine: reportingSkipped).
   */
  skipped?: 'sampled' | 'off' | 'not_set_up';
  idempotencyKey: string;
}

/** SERVICE_REPORT=off (or false, 0, no): this machine sends no results and says nothing about it. */
const REPORT_OFF_VALUES = new Set(['off', 'false', '0', 'no']);

/** The one line a run with nothing set up prints (once per process): where to look, and how to silence it. */
export const NOT_SET_UP_LINE = 'not sending results: no SERVICE_TOKEN and no server set up (README "Sending results"; SERVICE_REPORT=off silences this)';

let toldNotSetUp = false;

/**
 * Why this process sends no results without that being a problem, or undefined when it should send:
 * `off` when SERVICE_REPORT=off says so; `not_set_up` when nothing is set up here — no
 * SERVICE_TOKEN, no server named (service.yml or SERVICE_ENDPOINT) and no CI system recognised —,
 * as on a developer's machine running the tests with a reporter in the runner's config. A token
 * missing where a server is named, or on CI, is a problem and stays a warning.
 */
export function reportingSkipped(settings: Pick<ReporterSettings, 'token' | 'endpointSource'>, env: NodeJS.ProcessEnv): 'off' | 'not_set_up' | undefined {
  if (REPORT_OFF_VALUES.has((env.SERVICE_REPORT ?? '').trim().toLowerCase())) return 'off';
  if (settings.token === undefined && settings.endpointSource === 'default' && detectRunCi(env).provider === 'local') return 'not_set_up';
  return undefined;
}

/** Says NOT_SET_UP_LINE, the first time only in this process (a runner may finish several runs). */
export function tellNotSetUp(log: (line: string) => void): void {
  if (toldNotSetUp) return;
  toldNotSetUp = true;
  log(NOT_SET_UP_LINE);
}

/** Thrown by sendRun only with `strict`: the run was not delivered (or could not be prepared). */
export class ReportDeliveryError extends Error {
  override readonly name = 'ReportDeliveryError';
  constructor(
    message: string,
    readonly result: SendResult,
    /** A settings problem (exit 2) rather than a delivery failure (exit 1). */
    readonly config = false,
  ) {
    super(message);
  }
}

/** At most this many buffered runs are replayed per invocation, so a long outage drains gradually. */
const MAX_REPLAYS_PER_RUN = 20;
/** A buffered run older than this is dropped (with a warning): its CI context is long gone. */
const MAX_BUFFER_AGE_MS = 14 * 24 * 3_600_000;
/** Syncs are small and best-effort: fewer tries than a run. */
const SYNC_RETRY_POLICY: RetryPolicy = { ...DEFAULT_RETRY_POLICY, maxAttempts: 2 };

export async function sendRun(run: ReporterRun, options: SendOptions = {}): Promise<SendResult> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const log = options.log ?? ((line: string) => process.stderr.write(`flakehouse: ${line}\n`));
  const strict = options.strict === true;
  const fail = (message: string, result: SendResult, config = false): SendResult => {
    log(`warning: ${message}`);
    if (strict) throw new ReportDeliveryError(message, result, config);
    return result;
  };

  let settings: ReporterSettings;
  try {
    settings = loadReporterSettings({ env, cwd });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const lines = err instanceof AggregateConfigError ? err.errors.map((e) => e.message) : [err.message];
    return fail(`results not sent, the reporter is misconfigured:\n  ${lines.join('\n  ')}`, emptyResult(''), true);
  }
  // Nothing to send to, and nothing wrong: one short line at most, none of the warnings about a run
  // that is not sent (its commit, its branch, the token). --strict still wants a delivery.
  const traceId = newTraceId();
  const idempotencyKey = idempotencyKeyFor(settings.idempotencyKey ?? traceId, settings.shard);
  const skip = reportingSkipped(settings, env);
  if (skip === 'off' || (skip === 'not_set_up' && !strict)) {
    if (skip === 'not_set_up') tellNotSetUp(log);
    return { ...emptyResult(idempotencyKey), skipped: skip };
  }
  for (const w of settings.warnings) log(`warning: ${w}`);
  if (settings.token === undefined) {
    // Before the run's context is resolved: its warnings (no commit, no branch) are moot for a run not sent.
    return fail('results not sent: SERVICE_TOKEN is not set (create one with `flakehouse token create --project SLUG`)', emptyResult(idempotencyKey), true);
  }

  const ci = detectRunCi(env);
  const rootDir = path.resolve(cwd, run.rootDir ?? '.');
  // Once per report, and git only for a pull request (a base branch is known) with no merge base given.
  const mergeBase =
    run.resource?.mergeBase ?? settings.mergeBase ?? (await findMergeBase({ cwd: rootDir, baseBranch: run.resource?.baseBranch ?? ci.baseBranch }));
  const { resource, warnings } = resolveResource({
    ci,
    commitSha: settings.commitSha,
    branch: settings.branch,
    shard: settings.shard,
    mergeBase,
    ...(settings.ciRunId !== undefined ? { ciRunId: settings.ciRunId } : {}),
    ...(settings.ciJobName !== undefined ? { ciJobName: settings.ciJobName } : {}),
    ...(settings.ciJobMatrix !== undefined ? { ciJobMatrix: settings.ciJobMatrix } : {}),
    overrides: run.resource,
  });
  for (const w of warnings) log(`warning: ${w}`);

  const result = emptyResult(idempotencyKey);
  const batch: IngestBatch = {
    contractVersion: CURRENT_CONTRACT_VERSION,
    idempotencyKey,
    resource,
    run: { status: deriveRunStatus(finalAttempts(run.executions)), startedAt: run.startedAt, finishedAt: run.finishedAt, traceId },
    executions: run.executions,
  };

  const client = new ApiClient(settings.endpoint, settings.token, log);
  const buffer = new RunBuffer(settings.bufferDir);
  try {
    writeLastReport(settings.bufferDir, cwd, lastReportFromResource(resource, settings, Date.now()));
  } catch (err) {
    log(`warning: cannot record this run's commit for \`flakehouse summary\` and \`gate\` in ${settings.bufferDir}: ${(err as Error).message}`);
  }

  const replay = await replayBuffered(buffer, client, settings, log);
  result.replayed = replay.replayed;

  const sampleKey = ci.runId !== undefined ? `${ci.provider}:${ci.runId}` : (settings.idempotencyKey ?? traceId);
  let reachable = true;
  if (!sampledIn(run.executions, settings.sampleRate, sampleKey)) {
    result.skipped = 'sampled';
    log(`passing run not sent: SERVICE_SAMPLE_RATE=${settings.sampleRate} sampled it out (failing and flaky runs are always sent)`);
  } else {
    await uploadArtifactsBeforeDelivery(batch, { client, settings, log, rootDir });
    let requests: BufferedRequest[];
    try {
      requests = await encodeRequests(batch, settings);
    } catch (err) {
      if (!(err instanceof PayloadError)) throw err;
      return fail(`results not sent: ${err.message}`, result);
    }
    // The replay just found the server unreachable: buffer at once rather than wait out the retries again.
    const outcome = replay.unreachable ?? (await client.sendAll(requests));
    if (outcome.ok) {
      result.delivered = true;
      Object.assign(result, receiptOf(outcome.body));
      log(describeDelivery(batch, settings, ci, outcome.body));
    } else if (outcome.retryable) {
      reachable = outcome.status !== undefined;
      const file = buffer.write(bufferEntry(batch, settings, requests, outcome.message));
      result.buffered = true;
      const problem = `results not delivered to ${settings.endpoint} (${outcome.message} after ${outcome.attempts} tries); saved to ${file} and sent again by the next \`flakehouse report\``;
      if (strict) return fail(problem, result);
      log(`warning: ${problem}`);
    } else {
      return finishWithSyncs(fail(`results refused by ${settings.endpoint}: ${outcome.message}`, result), false);
    }
  }
  return finishWithSyncs(result, reachable);

  async function finishWithSyncs(res: SendResult, serverReachable: boolean): Promise<SendResult> {
    // An unreachable server would only cost more retries; the next report syncs instead.
    if (!serverReachable) return res;
    const put: PutJson = (urlPath, body) => client.putJson(urlPath, body);
    for (const sync of [
      await syncCodeowners(put, { explicitFile: settings.codeownersFile, rootDir, cwd }),
      await syncRouting(put, { configFile: settings.configFile, channels: settings.channels, cwd }),
    ]) {
      if (sync) log(sync.line);
    }
    return res;
  }
}

/**
 * The place for artifact upload (screenshots, traces, videos): runs after sampling and before the
 * run is encoded, so an uploader can presign (POST /v1/artifacts/presign), PUT each
 * `executions[].artifacts[].path` and set its `key` on the batch. It must never throw: a failed
 * upload is a warning and the run is delivered without that key (client/src/reporter/artifacts.ts).
 */
async function uploadArtifactsBeforeDelivery(
  batch: IngestBatch,
  ctx: { client: ApiClient; settings: ReporterSettings; log: (line: string) => void; rootDir: string },
): Promise<void> {
  if (ctx.settings.token === undefined || !batch.executions.some((e) => e.artifacts?.some((a) => a.key === undefined))) return;
  const r = await uploadArtifacts({
    idempotencyKey: batch.idempotencyKey,
    executions: batch.executions,
    endpoint: ctx.client.endpoint,
    token: ctx.settings.token,
    rootDir: ctx.rootDir,
    warn: (line) => ctx.log(`warning: ${line}`),
  });
  if (r.uploaded > 0) ctx.log(`uploaded ${r.uploaded} artifact(s)`);
}

// ---------------------------------------------------------------------------------------------

class PayloadError extends Error {}

/** The run as request bodies for the configured transport. */
async function encodeRequests(batch: IngestBatch, settings: ReporterSettings): Promise<BufferedRequest[]> {
  const gzip = settings.compression === 'gzip';
  const body = (bytes: Uint8Array): Pick<BufferedRequest, 'bodyBase64' | 'contentEncoding'> =>
    gzip ? { bodyBase64: gzipSync(bytes).toString('base64'), contentEncoding: 'gzip' } : { bodyBase64: Buffer.from(bytes).toString('base64') };
  if (settings.transport === 'otlp') {
    // Loaded only for this transport: the OpenTelemetry SDK is most of the reporter's start-up.
    const { encodeOtlpRun } = await import('../contract/otlp-encode.js');
    return encodeOtlpRun(batch).map((bytes) => ({ path: '/v1/traces', contentType: 'application/x-protobuf', ...body(bytes) }));
  }
  if (batch.executions.length > LIMITS.maxExecutionsPerBatch) {
    throw new PayloadError(
      `the run has ${batch.executions.length} executions and the json transport carries at most ${LIMITS.maxExecutionsPerBatch}; use SERVICE_TRANSPORT=otlp, which splits large runs`,
    );
  }
  return [{ path: '/v1/ingest', contentType: 'application/json', ...body(Buffer.from(JSON.stringify(batch))) }];
}

function bufferEntry(batch: IngestBatch, settings: ReporterSettings, requests: BufferedRequest[], reason: string): BufferEntry {
  return {
    version: 1,
    idempotencyKey: batch.idempotencyKey,
    endpoint: settings.endpoint,
    project: settings.project ?? null,
    transport: settings.transport,
    executions: batch.executions.length,
    createdAt: new Date().toISOString(),
    reason,
    requests,
  };
}

async function replayBuffered(
  buffer: RunBuffer,
  client: ApiClient,
  settings: ReporterSettings,
  log: (line: string) => void,
): Promise<{ replayed: number; unreachable?: Extract<DeliveryOutcome, { ok: false }> }> {
  let replayed = 0;
  let unreachable: Extract<DeliveryOutcome, { ok: false }> | undefined;
  let elsewhere = 0;
  for (const file of buffer.pending()) {
    if (replayed >= MAX_REPLAYS_PER_RUN) break;
    const claim = buffer.claim(file);
    if (claim === undefined) continue;
    if ('corrupt' in claim) {
      log(`warning: a buffered run could not be read and was set aside: ${claim.corrupt}`);
      continue;
    }
    const { entry } = claim;
    const age = Date.now() - Date.parse(entry.createdAt);
    if (!(age <= MAX_BUFFER_AGE_MS)) {
      buffer.complete(claim);
      log(`warning: dropped a buffered run from ${entry.createdAt} for ${entry.endpoint}: older than ${MAX_BUFFER_AGE_MS / 86_400_000} days`);
      continue;
    }
    if (entry.endpoint !== settings.endpoint || entry.project !== (settings.project ?? null)) {
      // Meant for another server or project: this token may not belong there.
      buffer.release(claim);
      elsewhere++;
      continue;
    }
    const outcome = await client.sendAll(entry.requests);
    if (outcome.ok) {
      buffer.complete(claim);
      replayed++;
      const r = receiptOf(outcome.body);
      log(`replayed a buffered run from ${entry.createdAt} (${entry.executions} executions${r.deduplicated ? ', already stored' : ''})`);
    } else if (outcome.retryable) {
      buffer.release(claim);
      log(`warning: buffered runs are still waiting in ${settings.bufferDir}: ${outcome.message}`);
      if (outcome.status === undefined) unreachable = outcome;
      break; // the server is not taking runs right now; the rest wait too
    } else {
      const where = buffer.reject(claim);
      log(`warning: a buffered run was refused (${outcome.message}) and set aside: ${where}`);
    }
  }
  if (elsewhere > 0) log(`${elsewhere} buffered run(s) in ${settings.bufferDir} are for another endpoint or project and were left in place`);
  return unreachable ? { replayed, unreachable } : { replayed };
}

/** Talks to the server with the project token; every call retries per the policy. */
class ApiClient {
  constructor(
    readonly endpoint: string,
    private readonly token: string,
    private readonly log: (line: string) => void,
  ) {}

  /** Sends each request in order; stops at the first failure (the caller buffers all of them). */
  async sendAll(requests: readonly BufferedRequest[]): Promise<DeliveryOutcome> {
    let merged: DeliveryOutcome | undefined;
    for (const r of requests) {
      const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, 'content-type': r.contentType };
      if (r.contentEncoding) headers['content-encoding'] = r.contentEncoding;
      const outcome = await deliver({ method: 'POST', url: `${this.endpoint}${r.path}`, headers, body: Buffer.from(r.bodyBase64, 'base64') }, DEFAULT_RETRY_POLICY, {
        onRetry: ({ delayMs, reason }) => this.log(`${r.path}: ${reason}; retrying in ${(delayMs / 1000).toFixed(1)} s`),
      });
      if (!outcome.ok) return outcome;
      merged = merged?.ok ? { ...outcome, body: mergeReceipts(merged.body, outcome.body) } : outcome;
    }
    return merged ?? { ok: true, status: 202, body: undefined, attempts: 0 };
  }

  putJson(urlPath: string, body: unknown): Promise<DeliveryOutcome> {
    return deliver(
      {
        method: 'PUT',
        url: `${this.endpoint}${urlPath}`,
        headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      },
      SYNC_RETRY_POLICY,
    );
  }
}

/** Parts of one OTLP run: the first receipt, executions summed, deduplicated only if all were. */
function mergeReceipts(a: unknown, b: unknown): unknown {
  const ra = receiptOf(a);
  const rb = receiptOf(b);
  return {
    receiptId: ra.receiptId ?? rb.receiptId ?? null,
    acceptedExecutions: (ra.acceptedExecutions ?? 0) + (rb.acceptedExecutions ?? 0),
    deduplicated: (ra.deduplicated ?? false) && (rb.deduplicated ?? false),
  };
}

function receiptOf(body: unknown): Pick<SendResult, 'receiptId' | 'acceptedExecutions' | 'deduplicated'> {
  if (typeof body !== 'object' || body === null) return {};
  const b = body as Record<string, unknown>;
  const out: Pick<SendResult, 'receiptId' | 'acceptedExecutions' | 'deduplicated'> = {};
  if (typeof b.receiptId === 'string') out.receiptId = b.receiptId;
  if (typeof b.acceptedExecutions === 'number') out.acceptedExecutions = b.acceptedExecutions;
  if (typeof b.deduplicated === 'boolean') out.deduplicated = b.deduplicated;
  return out;
}

function describeDelivery(batch: IngestBatch, settings: ReporterSettings, ci: CiDetection, body: unknown): string {
  const r = receiptOf(body);
  const where = `${batch.resource.branch}@${batch.resource.commitSha.slice(0, 12)}${ci.provider !== 'local' ? ` (${ci.provider})` : ''}`;
  return `sent ${describeCounts(batch.executions)} of ${where} to ${settings.endpoint} over ${settings.transport}${r.deduplicated ? '; the server already had this run' : ''}`;
}

const STATUS_WORDS: readonly [ExecutionInput['status'], string][] = [
  ['pass', 'passed'],
  ['fail', 'failed'],
  ['flaky', 'flaky'],
  ['skip', 'skipped'],
];

/**
 * `5 executions: 4 tests (3 passed, 1 flaky) + 1 earlier attempt`: the statuses are per test (its
 * final attempt), so they add up to the tests, and the tests plus the earlier attempts add up to
 * the executions.
 */
export function describeCounts(executions: readonly ExecutionInput[]): string {
  const finals = finalAttempts(executions);
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  const byStatus = STATUS_WORDS.map(([status, word]) => [finals.filter((e) => e.status === status).length, word] as const)
    .filter(([n]) => n > 0)
    .map(([n, word]) => `${n} ${word}`);
  const earlier = executions.length - finals.length;
  return `${plural(executions.length, 'execution')}: ${plural(finals.length, 'test')}${byStatus.length > 0 ? ` (${byStatus.join(', ')})` : ''}${earlier > 0 ? ` + ${plural(earlier, 'earlier attempt')}` : ''}`;
}

/**
 * The last attempt of each test: what decides the run's status and the summary. Retry links form
 * a chain (attempt n → n − 1: the runner reporters) or a star (every retry → the first attempt:
 * the JUnit parser), so each test is the set of executions leading back to one first attempt, and
 * its final attempt is the latest of them (as the server counts, src/domain/records.ts).
 */
export function finalAttempts(executions: readonly ExecutionInput[]): ExecutionInput[] {
  if (!executions.some((e) => e.retryOfIndex !== undefined)) return [...executions];
  const rootOf: number[] = [];
  const last = new Map<number, number>();
  executions.forEach((e, i) => {
    const r = e.retryOfIndex;
    const root = r !== undefined && r >= 0 && r < i ? rootOf[r]! : i;
    rootOf.push(root);
    const prev = last.get(root);
    if (prev === undefined || e.attempt >= executions[prev]!.attempt) last.set(root, i);
  });
  return [...last.values()].map((i) => executions[i]!);
}

/** CI detection with the inputs read from disk (GitHub's event payload). */
export function detectRunCi(env: NodeJS.ProcessEnv): CiDetection {
  return detectCi(env, { githubEvent: readGithubEvent(env) });
}

/** GitHub puts the pull request (and its head commit) only in the event payload file. */
function readGithubEvent(env: NodeJS.ProcessEnv): unknown {
  const file = env.GITHUB_EVENT_PATH;
  if (env.GITHUB_ACTIONS !== 'true' || !file) return undefined;
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
  } catch {
    return undefined; // detection falls back to the variables
  }
}

function emptyResult(idempotencyKey: string): SendResult {
  return { delivered: false, buffered: false, replayed: 0, idempotencyKey };
}

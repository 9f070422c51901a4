// Artifact upload for the reporter: the local files named by `executions[].artifacts[].path`
// (runner attachments, JUnit `[[ATTACHMENT|path]]` markers, `--attach GLOB` matches) go straight to
// the object store through presigned PUT URLs (POST /v1/artifacts/presign, docs/contract.md §8), and
// their refs get the stored `key` and `sizeBytes` before the run is sent. Like the rest of the
// reporter it never breaks CI: every problem is a warning and the run goes out without that key.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { z } from 'zod';
import { MAX_ARTIFACT_BYTES, MAX_PRESIGN_ITEMS } from '../contract/artifact-keys.js';
import { UNKNOWN_CONTENT_TYPE, allowedContentType, contentTypeForFile, normalizeContentType, type AllowedContentType } from '../contract/content-types.js';
import type { ArtifactRef, ExecutionInput } from '../contract/batch.js';
import { expandReportPatterns } from './expand-patterns.js';

export interface UploadArtifactsOptions {
  /** The run's idempotency key: the server files the objects under it. */
  idempotencyKey: string;
  /** Refs are updated in place (`key`, `sizeBytes`); refs that already have a key are left alone. */
  executions: ExecutionInput[];
  endpoint: string;
  token: string;
  /** Relative artifact paths resolve against it (default: the working directory). */
  rootDir?: string;
  /** One line per problem (missing file, refused type, failed upload…). */
  warn?: (line: string) => void;
  /** Parallel PUTs (default 4). */
  concurrency?: number;
  /** Give up on a presign call or an upload that makes no progress for this long (default 60 s). */
  timeoutMs?: number;
}

export interface UploadArtifactsResult {
  uploaded: number;
  /** Not attempted: missing, not an allowed type, too large. */
  skipped: number;
  /** Attempted and not stored. */
  failed: number;
  /** The server has artifact storage off (501) or off for this project (404). */
  disabled: boolean;
}

interface Candidate {
  executionIndex: number;
  ref: ArtifactRef;
  file: string;
  /** Unique within the execution: two `screenshot.png` from different folders must not share a key. */
  name: string;
  contentType: string;
  sizeBytes: number;
}

const upload = z.object({ url: z.string().url(), key: z.string().min(1), headers: z.record(z.string(), z.string()) });
const presignResponse = z.object({ items: z.array(upload) });

export async function uploadArtifacts(opts: UploadArtifactsOptions): Promise<UploadArtifactsResult> {
  const result: UploadArtifactsResult = { uploaded: 0, skipped: 0, failed: 0, disabled: false };
  const warn = opts.warn ?? ((line: string) => void process.stderr.write(`flakehouse: warning: ${line}\n`));
  try {
    const candidates = collectCandidates(opts, warn, result);
    const endpoint = opts.endpoint.replace(/\/+$/, '');
    const timeoutMs = opts.timeoutMs ?? 60_000;
    // Presign per chunk right before its uploads, so no URL waits out its 15 minutes in a queue.
    for (let start = 0; start < candidates.length; start += MAX_PRESIGN_ITEMS) {
      const chunk = candidates.slice(start, start + MAX_PRESIGN_ITEMS);
      const answer = await presign(endpoint, opts.token, opts.idempotencyKey, chunk, timeoutMs);
      if (answer.kind === 'off' || answer.kind === 'stop') {
        warn(`${answer.message}; ${candidates.length - start} artifact(s) of this run not uploaded`);
        result.disabled = answer.kind === 'off';
        result.failed += answer.kind === 'stop' ? candidates.length - start : 0;
        result.skipped += answer.kind === 'off' ? candidates.length - start : 0;
        break;
      }
      if (answer.kind === 'error') {
        warn(`${answer.message}; ${chunk.length} artifact(s) not uploaded`);
        result.failed += chunk.length;
        continue;
      }
      await forEachLimited(chunk, opts.concurrency ?? 4, async (c, i) => {
        const target = answer.items[i]!;
        try {
          const status = await putFile(target.url, target.headers, c.file, c.sizeBytes, timeoutMs);
          if (status < 200 || status >= 300) throw new Error(`the object store answered ${status}`);
          c.ref.key = target.key;
          c.ref.sizeBytes = c.sizeBytes;
          // What the object is stored as, so the page shows the type a browser will get.
          c.ref.contentType = c.contentType;
          result.uploaded++;
        } catch (err) {
          warn(`artifact ${c.file} not uploaded: ${err instanceof Error ? err.message : String(err)}`);
          result.failed++;
        }
      });
    }
  } catch (err) {
    // Never reached by design; a reporter bug here must still not cost the run.
    warn(`artifact upload stopped: ${err instanceof Error ? err.message : String(err)}`);
  }
  return result;
}

function collectCandidates(opts: UploadArtifactsOptions, warn: (line: string) => void, result: UploadArtifactsResult): Candidate[] {
  const rootDir = opts.rootDir ?? process.cwd();
  const out: Candidate[] = [];
  opts.executions.forEach((e, executionIndex) => {
    const taken = new Set<string>();
    for (const ref of e.artifacts ?? []) {
      if (ref.key !== undefined) continue;
      const file = path.resolve(rootDir, ref.path);
      const skip = (why: string): void => {
        warn(`artifact ${file} skipped: ${why}`);
        result.skipped++;
      };
      const stat = fs.statSync(file, { throwIfNoEntry: false });
      if (!stat?.isFile()) {
        skip('no such file');
        continue;
      }
      const contentType = allowedContentType(ref.contentType) ?? fallbackContentType(ref.contentType, file);
      if (!contentType) {
        skip(`content type ${JSON.stringify(ref.contentType)} is not accepted`);
        continue;
      }
      if (stat.size > MAX_ARTIFACT_BYTES) {
        skip(`${stat.size} bytes is over the ${MAX_ARTIFACT_BYTES}-byte (50 MiB) limit`);
        continue;
      }
      const name = uniqueName(ref.name, taken);
      out.push({ executionIndex, ref, file, name, contentType, sizeBytes: stat.size });
    }
  });
  return out;
}

/**
 * The accepted type for a runner's type outside the allow-list: octet-stream is what a runner says
 * when it does not know, and the file name may; any other text (Playwright's `error-context` is
 * `text/markdown`, CSV, logs) goes as text/plain, which a browser shows as it is.
 */
function fallbackContentType(contentType: string, file: string): AllowedContentType | null {
  const t = normalizeContentType(contentType);
  if (t === UNKNOWN_CONTENT_TYPE) return contentTypeForFile(file);
  return t.startsWith('text/') ? 'text/plain' : null;
}

/** `shot.png`, `shot-2.png`, `shot-3.png`… */
function uniqueName(name: string, taken: Set<string>): string {
  let candidate = name;
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  for (let n = 2; taken.has(candidate); n++) candidate = `${stem}-${n}${ext}`;
  taken.add(candidate);
  return candidate;
}

type PresignAnswer =
  | { kind: 'ok'; items: z.infer<typeof upload>[] }
  /** Storage off: uploads stop for the run. */
  | { kind: 'off'; message: string }
  /** The token cannot presign: no later call would do better. */
  | { kind: 'stop'; message: string }
  /** This chunk failed; the next may not. */
  | { kind: 'error'; message: string };

async function presign(endpoint: string, token: string, idempotencyKey: string, chunk: Candidate[], timeoutMs: number): Promise<PresignAnswer> {
  const url = `${endpoint}/v1/artifacts/presign`;
  const body = {
    idempotencyKey,
    artifacts: chunk.map((c) => ({ executionIndex: c.executionIndex, name: c.name, contentType: c.contentType, sizeBytes: c.sizeBytes })),
  };
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    return { kind: 'error', message: `cannot reach ${url} (${err instanceof Error ? err.message : String(err)})` };
  }
  const text = await res.text().catch(() => '');
  const code = errorCode(text);
  if (res.status === 501 || res.status === 404) {
    const why = res.status === 501 ? 'the server has no artifact storage' : 'artifacts are turned off for this project';
    return { kind: 'off', message: `artifact uploads are off for this run: ${why} (${res.status}${code ? ` ${code}` : ''})` };
  }
  if (res.status === 401 || res.status === 403) {
    return { kind: 'stop', message: `artifact uploads refused: ${res.status}${code ? ` ${code}` : ''} (the token needs the ingest scope)` };
  }
  if (!res.ok) return { kind: 'error', message: `presign answered ${res.status}${code ? ` ${code}` : ''}` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = presignResponse.safeParse(json);
  if (!parsed.success || parsed.data.items.length !== chunk.length) return { kind: 'error', message: 'presign answered with an unexpected body' };
  return { kind: 'ok', items: parsed.data.items };
}

function errorCode(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string') return (body as { error: string }).error;
  } catch {
    // not JSON: the status says enough
  }
  return undefined;
}

/**
 * PUTs exactly `size` bytes of the file, streamed (up to 50 MiB never sits in memory). node:http
 * rather than fetch: the signed URL needs a plain Content-Length body, never a chunked one.
 */
function putFile(url: string, headers: Record<string, string>, file: string, size: number, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === 'https:' ? https.request : http.request;
    const req = send(target, { method: 'PUT', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no progress for ${Math.round(timeoutMs / 1000)} s`)));
    req.on('error', reject);
    if (size === 0) {
      req.end();
      return;
    }
    let sent = 0;
    const stream = fs.createReadStream(file, { start: 0, end: size - 1 });
    stream.on('data', (chunk) => {
      sent += chunk.length;
    });
    stream.on('error', (err) => req.destroy(err));
    // A file that shrank after the presign would leave the store waiting for bytes that never come.
    stream.on('end', () => {
      if (sent < size) req.destroy(new Error('the file shrank while it was being uploaded'));
    });
    stream.pipe(req);
  });
}

async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

// ---------------------------------------------------------------------------------------------
// `flakehouse report --attach GLOB`

/**
 * Attaches the files matched by `--attach` patterns (globs relative to `cwd`, files, or
 * directories meaning every file below) to the executions they name; returns how many refs were
 * added. Files that name no test, or are not of an accepted type, are skipped with a warning.
 */
export function attachMatchingFiles(executions: ExecutionInput[], patterns: readonly string[], opts: { cwd: string; warn: (line: string) => void }): number {
  const expanded = patterns.map((p) => {
    const stat = fs.statSync(path.resolve(opts.cwd, p), { throwIfNoEntry: false });
    return stat?.isDirectory() ? `${p.replace(/[\\/]+$/, '')}/**/*` : p;
  });
  const { files, unmatched } = expandReportPatterns(expanded, opts.cwd);
  for (const p of unmatched) opts.warn(`--attach ${JSON.stringify(p)} matched no file`);
  let added = 0;
  for (const file of files) {
    const name = path.basename(file);
    const contentType = contentTypeForFile(name);
    if (!contentType) {
      opts.warn(`--attach: ${file} skipped: not an accepted artifact type`);
      continue;
    }
    const targets = executionsNamedBy(executions, path.relative(opts.cwd, file));
    if (targets.length === 0) {
      opts.warn(`--attach: ${file} skipped: its path names no test of this run`);
      continue;
    }
    for (const i of targets) {
      const e = executions[i]!;
      if (e.artifacts?.some((a) => path.resolve(opts.cwd, a.path) === file)) continue;
      (e.artifacts ??= []).push({ name, contentType, path: file });
      added++;
    }
  }
  return added;
}

function words(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
}

/**
 * Which executions a file belongs to, by its path: the tests whose title appears in it as whole
 * words (`shots/cart-applies-a-coupon-failed.png` names "applies a coupon"), the longest title
 * winning; between tests of that title, those whose file name also appears; of each test, its
 * failed attempts, else its last one. Screenshot and video tools name their files this way.
 */
export function executionsNamedBy(executions: readonly ExecutionInput[], filePath: string): number[] {
  const hay = ` ${words(filePath)} `;
  let best = 0;
  let matched: number[] = [];
  executions.forEach((e, i) => {
    const t = words(e.title);
    if (t === '' || t.length < best || !hay.includes(` ${t} `)) return;
    if (t.length > best) {
      best = t.length;
      matched = [];
    }
    matched.push(i);
  });
  const byTest = new Map<string, number[]>();
  for (const i of matched) {
    const e = executions[i]!;
    const id = `${e.filePath}\u0000${e.suite}\u0000${e.title}`;
    byTest.set(id, [...(byTest.get(id) ?? []), i]);
  }
  let tests = [...byTest.values()];
  if (tests.length > 1) {
    const stemNamed = tests.filter((idx) => {
      const stem = words(path.basename(executions[idx[0]!]!.filePath).split('.')[0] ?? '');
      return stem !== '' && hay.includes(` ${stem} `);
    });
    if (stemNamed.length > 0) tests = stemNamed;
  }
  return tests.flatMap((idx) => {
    const failed = idx.filter((i) => executions[i]!.status === 'fail' || executions[i]!.status === 'flaky');
    return failed.length > 0 ? failed : [idx[idx.length - 1]!];
  });
}

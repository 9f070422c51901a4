// Artifact rules shared by the server (presign, download links) and the reporter (what it uploads):
// the size and count bounds and object keys (docs/contract.md §8); the content-type allow-list is in
// client/src/contract/content-types.ts. Pure.
import { createHash } from 'node:crypto';

export const MAX_ARTIFACT_BYTES = 50 * 1024 * 1024;
export const MAX_PRESIGN_ITEMS = 200;
/** Presigned PUT URLs live 15 minutes: long enough for a slow CI upload, short enough to leak little. */
export const UPLOAD_URL_TTL_SECONDS = 900;
/** Download URLs are minted on every page view, so they can be short. */
export const DOWNLOAD_URL_TTL_SECONDS = 300;

const MAX_SEGMENT_CHARS = 120;
const SAFE_CHAR = /[A-Za-z0-9._-]/;

/**
 * A safe, injective object-key segment: letters, digits, `.`, `_`, `-`, at most ~130 characters,
 * never `.` or `..`. A value that is already safe is kept as it is (keys stay readable); any
 * other gets its unsafe characters replaced by `_` and a short hash of the original before the
 * extension, so `a b.png` and `a_b.png` cannot overwrite each other.
 */
export function seg(value: string): string {
  let safe = '';
  for (const ch of value) safe += SAFE_CHAR.test(ch) ? ch : '_';
  const unchanged = safe === value && safe.length <= MAX_SEGMENT_CHARS && safe !== '' && !/^\.+$/.test(safe);
  if (unchanged) return safe;
  const hash = createHash('sha256').update(value).digest('hex').slice(0, 10);
  const dot = safe.lastIndexOf('.');
  // Keep a short extension so the object still downloads as what it is.
  const ext = dot > 0 && safe.length - dot <= 10 ? safe.slice(dot) : '';
  const stem = safe
    .slice(0, safe.length - ext.length)
    .slice(0, MAX_SEGMENT_CHARS)
    .replace(/^\.+/, '');
  return `${stem === '' ? '' : `${stem}-`}${hash}${ext}`;
}

export function projectPrefix(projectId: string): string {
  return `proj/${projectId}/`;
}

/** `proj/<projectId>/run/<seg(idempotencyKey)>/<executionIndex>/<seg(name)>` (docs/contract.md §8). */
export function artifactKey(projectId: string, idempotencyKey: string, executionIndex: number, name: string): string {
  return `${projectPrefix(projectId)}run/${seg(idempotencyKey)}/${executionIndex}/${seg(name)}`;
}

/**
 * Whether a stored ref's key may be signed for this project: under its own prefix, and made only
 * of plain segments. Refs come from ingest payloads, so a key naming another project's prefix, or
 * climbing out of ours with `..` (which an HTTP client would normalise away), gets no URL.
 */
export function isProjectKey(key: string, projectId: string): boolean {
  const prefix = projectPrefix(projectId);
  if (!key.startsWith(prefix) || key.length > 1024) return false;
  const rest = key.slice(prefix.length).split('/');
  return rest.every((s) => s !== '' && s !== '.' && s !== '..' && !s.includes('\\'));
}

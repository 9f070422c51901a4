// Artifact content types: the allow-list the server presigns for (docs/contract.md §8) and the one
// extension → type table that the JUnit receiver, the reporters and the uploader all type files by.
// Pure.

export const ALLOWED_CONTENT_TYPES = [
  'image/png',
  'image/jpeg',
  'image/webp',
  'video/webm',
  'video/mp4',
  'application/zip',
  'application/json',
  'text/plain',
  'text/html',
] as const;
export type AllowedContentType = (typeof ALLOWED_CONTENT_TYPES)[number];

/** What a file of unknown type is labelled: the uploader types it by name again or skips it. */
export const UNKNOWN_CONTENT_TYPE = 'application/octet-stream';

const ALLOWED = new Set<string>(ALLOWED_CONTENT_TYPES);

/** `Image/PNG; charset=x` → `image/png`: compared lowercased with parameters cut. */
export function normalizeContentType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

/** The allowed type `contentType` names, or null when it is not on the list. */
export function allowedContentType(contentType: string): AllowedContentType | null {
  const t = normalizeContentType(contentType);
  return ALLOWED.has(t) ? (t as AllowedContentType) : null;
}

// Only types on the allow-list: a file is typed so that it can be uploaded and shown.
const TYPE_BY_EXTENSION: Readonly<Record<string, AllowedContentType>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  webm: 'video/webm',
  mp4: 'video/mp4',
  zip: 'application/zip',
  json: 'application/json',
  har: 'application/json',
  txt: 'text/plain',
  log: 'text/plain',
  md: 'text/plain',
  html: 'text/html',
  htm: 'text/html',
};

/** The accepted type of a file by its extension; null for anything else (a `.gif` is not sent as text). */
export function contentTypeForFile(fileName: string): AllowedContentType | null {
  const dot = fileName.lastIndexOf('.');
  return dot < 0 ? null : (TYPE_BY_EXTENSION[fileName.slice(dot + 1).toLowerCase()] ?? null);
}

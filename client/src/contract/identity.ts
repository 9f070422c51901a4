// Test identity keys (docs/architecture.md "Identity, scoring, clustering"): a fingerprint that survives cosmetic differences
// between reporters (path separators, leading ./, case of the path, surrounding blanks).
import { createHash } from 'node:crypto';
import { stableUuid } from './ids.js';

/** Anything but printable ASCII (which is its own NFC) may need composing. */
const NOT_PRINTABLE_ASCII_RE = /[^ -~]/;

/**
 * The canonical text of a string that takes part in a test's identity: Unicode NFC, so `café`
 * typed as one code point (U+00E9) or as `e` + U+0301 (macOS file names, some runners) is one
 * test. Applied once at the door (storable.ts sanitizeBatch), so the queue holds canonical text.
 * Printable ASCII is its own NFC: skipped without calling into ICU.
 */
export function canonicalText(s: string): string {
  return NOT_PRINTABLE_ASCII_RE.test(s) ? s.normalize('NFC') : s;
}

export function normalizeTestPath(path: string): string {
  return path
    .trim()
    .replace(/\\/g, '/')
    .replace(/^(\.\/)+/, '')
    .replace(/^\/+/, '')
    .toLowerCase();
}

/** sha256 of key-sorted JSON, 16 hex chars; '' when there are no params. */
export function paramsHash(params: Record<string, unknown> | undefined): string {
  if (!params || Object.keys(params).length === 0) return '';
  return createHash('sha256').update(canonicalJson(params)).digest('hex').slice(0, 16);
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj)
      .sort()
      .filter((k) => obj[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export interface TestKey {
  filePath: string;
  suite: string;
  title: string;
  params?: Record<string, unknown>;
}

/**
 * The fingerprint's input: equal keys are the same test. Cheap (no hashing unless params are set).
 * Joined, not a template literal: V8 keeps a template's result as a tree of its pieces (~7 nodes
 * of 32 B here), and the daemon keeps a key per test in memory.
 */
export function testKey(key: TestKey): string {
  return [normalizeTestPath(key.filePath), key.suite.trim(), key.title.trim(), paramsHash(key.params)].join('\u0000');
}

export function fingerprint(key: TestKey): string {
  return createHash('sha256').update(testKey(key)).digest('hex');
}

/** Identity ids are stable hashes rendered as UUIDs: the same test always gets the same id. */
export function testIdentityId(projectId: string, fp: string): string {
  return stableUuid('test', projectId, fp);
}

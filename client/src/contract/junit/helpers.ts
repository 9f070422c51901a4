// Small pure helpers for the JUnit parser: text buffers, numbers, timestamps, attachments.
import type { ArtifactRef } from '../batch.js';
import { impossibleTimestamp, parseTimestamp } from '../time.js';
import { STORABLE } from '../storable.js';
import { contentTypeForFile } from '../content-types.js';

export const MAX_MESSAGE_CHARS = 4_000;
export const MAX_STACK_CHARS = 32_000;
export const MAX_PROPERTY_CHARS = 4_000;
export const MAX_PROPERTIES = 50;
export const MAX_ARTIFACTS = 100;

/**
 * Collects text chunks without quadratic string concatenation. Leading whitespace is dropped
 * as it arrives and collection stops past `limit`, so a huge stack trace costs no more memory
 * than what we keep.
 */
export class TextBuffer {
  private readonly parts: string[] = [];
  private length = 0;

  constructor(private readonly limit: number = Number.POSITIVE_INFINITY) {}

  add(chunk: string): void {
    if (this.length >= this.limit) return;
    let text = chunk;
    if (this.length === 0) {
      text = text.trimStart();
      if (text === '') return;
    }
    this.parts.push(text);
    this.length += text.length;
  }

  /** The collected text, trimmed. */
  text(): string {
    return this.parts.join('').trim();
  }
}

export function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text;
}

export function firstNonEmptyLine(text: string): string | undefined {
  for (const line of text.split(/\r?\n/, 200)) {
    const trimmed = line.trim();
    if (trimmed !== '') return trimmed;
  }
  return undefined;
}

/**
 * JUnit `time` is seconds as a decimal; anything unusable becomes 0 rather than failing the report.
 * Unusable includes a number too large to store (over ~49.7 days, UInt32 ms): real reports carry
 * such values (container-structure-test writes nanoseconds), and the sender cannot fix them.
 * A decimal comma (`1,5`, written by tools formatting with a German or French locale) is a
 * decimal: the JUnit schema's `time` is an xs:decimal, which has no digit grouping, so a lone
 * comma between digits can only be the decimal separator — `1,500` is 1.5 s, not 1500 s
 * (docs/contract.md §3). A value with both a comma and a point (`1,234.5`) is not a decimal.
 */
export function secondsToMs(value: string | undefined): number {
  if (value === undefined) return 0;
  const text = value.trim();
  const seconds = DECIMAL_COMMA.test(text) ? Number(text.replace(',', '.')) : text === '' ? Number.NaN : Number(text);
  const ms = Math.round(seconds * 1000);
  return Number.isFinite(ms) && ms > 0 && ms <= STORABLE.maxUInt32 ? ms : 0;
}

/** Digits, one comma, digits: a decimal written with a decimal comma. */
const DECIMAL_COMMA = /^[+-]?\d+,\d+$/;

const ZONELESS_ISO = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/;

/** The text a suite timestamp is read as: zoneless and " UTC" forms made explicit UTC ISO-8601. */
function junitTimestampText(value: string): string {
  const text = value.trim().replace(/\s+(?:UTC|GMT)$/i, 'Z');
  return ZONELESS_ISO.test(text) ? `${text.replace(' ', 'T')}Z` : text;
}

/**
 * Suite timestamps are often written without a zone ("2021-06-13T20:50:21", surefire, jest-junit)
 * or with a trailing " UTC" (TestNG); both mean UTC, and Date.parse would read the former as local time.
 */
export function parseJUnitTimestamp(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseTimestamp(junitTimestampText(value));
  // Some tools write the epoch (1970-01-01) as a placeholder; such a run belongs at "now", not 1970.
  // One past the storable window (year 2100 on) is as unusable, and treated alike.
  return ms !== undefined && ms >= PLACEHOLDER_BEFORE && ms <= STORABLE.maxTimeMs ? ms : undefined;
}

/**
 * Why a `timestamp` attribute names a date that does not exist (`2026-02-30`), else undefined.
 * Such a report is refused: reading it as March 2 (the JS parser) or as "now" would both store a
 * time the report never said.
 */
export function impossibleJUnitTimestamp(value: string | undefined): string | undefined {
  return value === undefined ? undefined : impossibleTimestamp(junitTimestampText(value));
}

/** 2000-01-01: no real CI report is older. */
const PLACEHOLDER_BEFORE = 946_684_800_000;

/**
 * A reported file's type by its name. Unknown ones are labelled text/plain, as JUnit attachments
 * always were (test/unit/junit-parse.test.ts pins it); the reporters say octet-stream instead.
 */
export function guessContentType(fileName: string): string {
  return contentTypeForFile(fileName) ?? 'text/plain';
}

const ATTACHMENT = /\[\[ATTACHMENT\|([^\]\r\n]+)\]\]/g;

/** Adds an artifact for a file path reported by the test, once per path. */
export function addArtifact(rawPath: string, into: ArtifactRef[]): void {
  const path = rawPath.trim();
  if (path === '' || into.length >= MAX_ARTIFACTS || into.some((a) => a.path === path)) return;
  const name = path.split(/[\\/]/).pop() || path;
  into.push({ name, contentType: guessContentType(name), path });
}

/** Jenkins attachments convention: `[[ATTACHMENT|/abs/path/file.png]]` in system-out/system-err. */
export function extractAttachments(output: string, into: ArtifactRef[]): void {
  if (!output.includes('[[ATTACHMENT|')) return;
  for (const match of output.matchAll(ATTACHMENT)) addArtifact(match[1] ?? '', into);
}

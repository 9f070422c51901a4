// Timestamps at the door: ISO-8601 text or epoch milliseconds. The JS date parser rolls impossible
// calendar values over (`2026-02-30` becomes March 2), so ISO dates and times are checked field
// by field first: a date that does not exist is refused, never moved (issue 28).

/** ISO-8601 date with an optional time and zone, as clients and JUnit writers send it. */
const ISO_RE = /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?)?\s*(?:[Zz]|[+-](\d{2})(?::?(\d{2}))?)?$/;
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

function daysInMonth(year: number, month: number): number {
  // Day 0 of the next month is the last day of this one (proleptic Gregorian, as Date.UTC).
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Why an ISO-8601-looking text cannot be a real instant (`February 2026 has 28 days`), or
 * undefined when its fields are possible or the text is not ISO-shaped (then the parser decides).
 */
export function impossibleTimestamp(text: string): string | undefined {
  const m = ISO_RE.exec(text.trim());
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12) return `month ${m[2]} does not exist`;
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) return `${MONTHS[month - 1]} ${year} has ${days} days, not day ${m[3]}`;
  if (m[4] !== undefined) {
    const hour = Number(m[4]);
    const minute = Number(m[5]);
    const second = m[6] === undefined ? 0 : Number(m[6]);
    // 24:00:00 is ISO-8601's end of the day (the next midnight), which the parser reads as such.
    const endOfDay = hour === 24 && minute === 0 && second === 0 && !/[.,]\d*[1-9]/.test(text);
    if (hour > 23 && !endOfDay) return `hour ${m[4]} does not exist`;
    if (minute > 59) return `minute ${m[5]} does not exist`;
    if (second > 59) return `second ${m[6]} does not exist (leap seconds are not representable)`;
  }
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8] ?? 0) > 59)) return `zone offset ${text.trim().slice(-6)} does not exist`;
  return undefined;
}

export type TimestampResult = { ok: true; ms: number } | { ok: false; reason: string };

const EXPECTED = 'expected an ISO-8601 timestamp or epoch milliseconds';

/** Parses a timestamp, saying why when it cannot: not a timestamp at all, or an impossible date. */
export function readTimestamp(value: unknown): TimestampResult {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? { ok: true, ms: Math.trunc(value) } : { ok: false, reason: EXPECTED };
  if (typeof value !== 'string' || value.trim() === '') return { ok: false, reason: EXPECTED };
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return { ok: true, ms: Number(trimmed) };
  const impossible = impossibleTimestamp(trimmed);
  if (impossible !== undefined) return { ok: false, reason: `not a calendar date: ${impossible}` };
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? { ok: false, reason: EXPECTED } : { ok: true, ms };
}

/** Parses an ISO-8601 string or epoch milliseconds; returns undefined when it is neither (or names an impossible date). */
export function parseTimestamp(value: unknown): number | undefined {
  const r = readTimestamp(value);
  return r.ok ? r.ms : undefined;
}

/** ISO-8601 UTC with milliseconds, the format of every timestamp we send out. */
export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

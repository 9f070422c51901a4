/** Parses an ISO-8601 string or epoch milliseconds; returns undefined when it is neither. */
export function parseTimestamp(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.trunc(value) : undefined;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? undefined : ms;
}

/** ISO-8601 UTC with milliseconds, the format of every timestamp we send out. */
export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

// Time values as ClickHouse reads them; shared by every repository and processor that writes rows.

/**
 * A DateTime64(3) value as `YYYY-MM-DD hh:mm:ss.sss` (UTC): the one text form every input format
 * reads unambiguously (short epoch numbers are taken for dates by the text parser).
 */
export function chTime(ms: number): string {
  const t = Number.isFinite(ms) ? Math.min(Math.max(0, Math.trunc(ms)), 253_402_300_799_999) : 0;
  // Since 2001 an epoch second has 10 digits, which the text parser reads as a timestamp: the cheap form.
  if (t >= 1_000_000_000_000 && t < 9_999_999_999_999) {
    const frac = t % 1000;
    return `${(t - frac) / 1000}.${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}`;
  }
  const iso = new Date(t).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
}

// The "last N days" tabs some pages put above their numbers; the default period has no query parameter.
import { withQuery, type Location } from '../router.js';

export function periodDays(loc: Location, ranges: readonly number[], fallback: number): number {
  const asked = Number(loc.query.get('days'));
  return ranges.includes(asked) ? asked : fallback;
}

export function PeriodTabs({ loc, ranges, days, fallback }: { loc: Location; ranges: readonly number[]; days: number; fallback: number }) {
  return (
    <nav class="tabs" aria-label="Period">
      {ranges.map((d) => (
        <a key={d} href={withQuery(loc, { days: d === fallback ? null : d })} aria-current={d === days ? 'page' : undefined}>
          last {d} days
        </a>
      ))}
    </nav>
  );
}

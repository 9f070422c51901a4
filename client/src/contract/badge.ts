// README badges (docs/contract.md §6): what each variant says about a project, drawn as a shields.io
// "flat" SVG or as shields.io endpoint JSON. Pure: the route gathers the facts.

export const BADGE_VARIANTS = ['health', 'flakes', 'quarantined', 'worst'] as const;
export type BadgeVariant = (typeof BADGE_VARIANTS)[number];
export const BADGE_FORMATS = ['svg', 'json'] as const;
export type BadgeFormat = (typeof BADGE_FORMATS)[number];

/** shields.io's named colours, so `.json` and `.svg` agree. */
export const BADGE_COLORS = {
  brightgreen: '#4c1',
  green: '#97ca00',
  yellowgreen: '#a4a61d',
  yellow: '#dfb317',
  orange: '#fe7d37',
  red: '#e05d44',
  lightgrey: '#9f9f9f',
} as const;
export type BadgeColor = keyof typeof BADGE_COLORS;

export interface Badge {
  label: string;
  message: string;
  color: BadgeColor;
}

/** What the badges of one project are drawn from. */
export interface BadgeFacts {
  /** Share of graded executions (not skipped) that passed over the last `HEALTH_WINDOW_DAYS`; null without any. */
  passRate: number | null;
  /** Flaky candidates that are not quarantined (what /v1/flaky lists as candidates). */
  flaky: number;
  quarantined: number;
  /** The highest-scoring flaky candidate that is not quarantined. */
  worst: { suite: string; title: string; score: number } | null;
}

export const HEALTH_WINDOW_DAYS = 7;

/** `/badge/<token>/flakes.svg` → `{ variant: 'flakes', format: 'svg' }`; null for anything else. */
export function parseBadgeFile(file: string): { variant: BadgeVariant; format: BadgeFormat } | null {
  const m = /^([a-z]+)\.([a-z]+)$/.exec(file);
  if (!m) return null;
  const variant = BADGE_VARIANTS.find((v) => v === m[1]);
  const format = BADGE_FORMATS.find((f) => f === m[2]);
  return variant && format ? { variant, format } : null;
}

export const UNKNOWN_BADGE: Badge = { label: 'flakehouse', message: 'unknown', color: 'lightgrey' };

export const BADGE_LABELS: Record<BadgeVariant, string> = {
  health: 'test health',
  flakes: 'flaky tests',
  quarantined: 'quarantined tests',
  worst: 'flakiest test',
};

export function badgeFor(variant: BadgeVariant, f: BadgeFacts): Badge {
  const label = BADGE_LABELS[variant];
  switch (variant) {
    case 'health': {
      if (f.passRate === null) return { label, message: 'no runs', color: 'lightgrey' };
      const pct = f.passRate * 100;
      // Floor, not round: 99.96% must not read "100%" while something still fails.
      const text = pct >= 100 ? '100' : (Math.floor(pct * 10) / 10).toFixed(1);
      const color: BadgeColor = pct >= 99 ? 'brightgreen' : pct >= 97 ? 'green' : pct >= 95 ? 'yellowgreen' : pct >= 90 ? 'yellow' : pct >= 80 ? 'orange' : 'red';
      return { label, message: `${text}% passing`, color };
    }
    case 'flakes': {
      const n = f.flaky;
      return { label, message: n === 0 ? 'none' : String(n), color: n === 0 ? 'brightgreen' : n <= 2 ? 'yellow' : n <= 9 ? 'orange' : 'red' };
    }
    case 'quarantined': {
      const n = f.quarantined;
      return { label, message: String(n), color: n === 0 ? 'brightgreen' : n <= 4 ? 'yellow' : 'orange' };
    }
    case 'worst': {
      if (!f.worst) return { label, message: 'none', color: 'brightgreen' };
      const name = f.worst.suite ? `${f.worst.suite} › ${f.worst.title}` : f.worst.title;
      return { label, message: `${truncate(name, 48)} (${f.worst.score.toFixed(2)})`, color: f.worst.score >= 0.9 ? 'red' : 'orange' };
    }
  }
}

function truncate(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** shields.io endpoint badge (https://shields.io/badges/endpoint-badge). */
export function shieldsJson(b: Badge, cacheSeconds: number): { schemaVersion: 1; label: string; message: string; color: BadgeColor; cacheSeconds: number } {
  return { schemaVersion: 1, label: b.label, message: b.message, color: b.color, cacheSeconds };
}

// Advance widths of Verdana 11px (shields' font), close enough to size the boxes; `textLength`
// makes the renderer fit the text to the box whatever font it has.
const NARROW = new Map<string, number>(
  Object.entries({
    ' ': 3.9, '!': 4.3, "'": 2.9, '(': 4.5, ')': 4.5, ',': 3.6, '-': 4.5, '.': 3.6, '/': 4.5, ':': 4.5, ';': 4.5, '|': 4.5,
    f: 3.8, i: 3.0, j: 3.8, l: 3.0, r: 4.7, t: 4.3, I: 4.6, J: 5.0,
  }),
);
const WIDE = new Map<string, number>(Object.entries({ m: 10.7, w: 9.0, M: 9.3, W: 10.9, '%': 10.5, '@': 11, '#': 9, '&': 7.7 }));

export function textWidth(text: string): number {
  let w = 0;
  for (const ch of text) {
    const known = NARROW.get(ch) ?? WIDE.get(ch);
    if (known !== undefined) w += known;
    else if (/[0-9]/.test(ch)) w += 7.0;
    else if (/[A-Z]/.test(ch)) w += 7.6;
    else if (/[a-z]/.test(ch)) w += 6.6;
    else w += ch.charCodeAt(0) > 0x2000 ? 9 : 7;
  }
  return Math.round(w * 10) / 10;
}

function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/** A shields.io "flat" badge: grey label box, coloured message box. */
export function badgeSvg(b: Badge): string {
  const pad = 10;
  const lw = Math.ceil(textWidth(b.label)) + pad;
  const mw = Math.ceil(textWidth(b.message)) + pad;
  const w = lw + mw;
  const label = xml(b.label);
  const message = xml(b.message);
  const fill = BADGE_COLORS[b.color];
  const text = (x: number, t: string, tw: number): string =>
    `<text aria-hidden="true" x="${x}" y="15" fill="#010101" fill-opacity=".3" textLength="${tw}">${t}</text>` +
    `<text x="${x}" y="14" textLength="${tw}">${t}</text>`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${label}: ${message}">` +
    `<title>${label}: ${message}</title>` +
    `<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>` +
    `<clipPath id="r"><rect width="${w}" height="20" rx="3" fill="#fff"/></clipPath>` +
    `<g clip-path="url(#r)"><rect width="${lw}" height="20" fill="#555"/><rect x="${lw}" width="${mw}" height="20" fill="${fill}"/><rect width="${w}" height="20" fill="url(#s)"/></g>` +
    `<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="11">` +
    text(lw / 2, label, lw - pad) +
    text(lw + mw / 2, message, mw - pad) +
    `</g></svg>`
  );
}

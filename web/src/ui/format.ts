// How numbers and times read on every page.
export function pct(x: number | null | undefined, digits = 0): string {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  return `${(x * 100).toFixed(digits)}%`;
}

export function score(x: number | null | undefined): string {
  if (x === null || x === undefined) return '–';
  return x.toFixed(2);
}

export function num(x: number | null | undefined): string {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  return x.toLocaleString('en-US', { maximumFractionDigits: 2 });
}

export function when(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '–';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toISOString().replace('T', ' ').replace(/:\d\d\.\d+Z$|:\d\dZ$/, ' UTC');
}

export function ago(iso: string | number | null | undefined, now = Date.now()): string {
  if (iso === null || iso === undefined || iso === '') return 'never';
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return String(iso);
  const s = Math.round((now - t) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/**
 * A duration as people read it: "397 ms", "21.9 s", "6 m 37 s", "1 h 2 m", "2 d 3 h" (two units at
 * most, the smaller one left out when it is 0: "6 m", "1 h").
 */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '–';
  if (ms < 0) return `-${duration(-ms)}`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 59_950) return `${(ms / 1000).toFixed(1)} s`;
  const two = (big: number, bigUnit: string, small: number, smallUnit: string): string => (small === 0 ? `${big} ${bigUnit}` : `${big} ${bigUnit} ${small} ${smallUnit}`);
  const s = Math.round(ms / 1000);
  if (s < 3600) return two(Math.floor(s / 60), 'm', s % 60, 's');
  const m = Math.round(ms / 60_000);
  if (m < 24 * 60) return two(Math.floor(m / 60), 'h', m % 60, 'm');
  const h = Math.round(ms / 3_600_000);
  return two(Math.floor(h / 24), 'd', h % 24, 'h');
}

export function shortSha(sha: string): string {
  return sha.length > 10 ? sha.slice(0, 10) : sha;
}

/** A run's CI job as people read it: "e2e (node 20, os ubuntu)"; null when the run named none. */
export function ciJob(name: string | null | undefined, matrix: Record<string, string> | null | undefined): string | null {
  const cells = Object.entries(matrix ?? {}).map(([k, v]) => `${k} ${v}`);
  if (!name && cells.length === 0) return null;
  return cells.length ? `${name ?? 'job'} (${cells.join(', ')})` : (name ?? null);
}

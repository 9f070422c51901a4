// TabSeparated encoding for inserts: ClickHouse parses it about twice as fast as JSONEachRow,
// and building it is no slower. Rows are encoded in slices with a yield between them so a large
// lease never holds the event loop (and the ingest acks behind it) for long.

const NEEDS_ESCAPE = /[\\\t\n\r\0]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' };

export function tsvValue(v: unknown): string {
  if (v === null || v === undefined) return '\\N';
  if (typeof v === 'string') return NEEDS_ESCAPE.test(v) ? v.replace(/[\\\t\n\r\0]/g, (c) => ESCAPES[c]!) : v;
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '0';
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (Array.isArray(v)) return tsvValue(`[${v.map((x) => (typeof x === 'string' ? `'${x.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : String(x))).join(',')}]`);
  return tsvValue(JSON.stringify(v));
}

export function tsvLine(row: Record<string, unknown>, columns: readonly string[]): string {
  let line = tsvValue(row[columns[0]!]);
  for (let i = 1; i < columns.length; i++) line += `\t${tsvValue(row[columns[i]!])}`;
  return line;
}

const SLICE = 2000;

/** Encodes rows, yielding to the event loop every `SLICE` rows. */
export async function encodeTsv(rows: readonly Record<string, unknown>[], columns: readonly string[]): Promise<string> {
  const parts: string[] = [];
  for (let start = 0; start < rows.length; start += SLICE) {
    const end = Math.min(rows.length, start + SLICE);
    const lines = new Array<string>(end - start);
    for (let i = start; i < end; i++) lines[i - start] = tsvLine(rows[i]!, columns);
    parts.push(lines.join('\n'));
    if (end < rows.length) await new Promise<void>((r) => setImmediate(r));
  }
  return parts.join('\n');
}

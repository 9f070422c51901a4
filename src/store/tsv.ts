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

/**
 * Columns whose values never need escaping (ids, enums, numbers, times) can be marked `plain`:
 * they skip the escape scan, which is most of the encoding cost.
 */
export interface TsvColumns {
  names: readonly string[];
  plain?: ReadonlySet<string>;
}

export function tsvLine(row: Record<string, unknown>, columns: readonly string[], plain?: readonly boolean[]): string {
  let line = '';
  for (let i = 0; i < columns.length; i++) {
    const v = row[columns[i]!];
    const text = plain?.[i] === true && (typeof v === 'string' || typeof v === 'number') ? String(v) : tsvValue(v);
    line = i === 0 ? text : `${line}\t${text}`;
  }
  return line;
}

const SLICE = 2000;

/** Encodes rows, yielding to the event loop every `SLICE` rows. */
export async function encodeTsv(rows: readonly Record<string, unknown>[], columns: readonly string[], plainColumns?: ReadonlySet<string>): Promise<string> {
  const plain = plainColumns ? columns.map((c) => plainColumns.has(c)) : undefined;
  const parts: string[] = [];
  for (let start = 0; start < rows.length; start += SLICE) {
    const end = Math.min(rows.length, start + SLICE);
    const lines = new Array<string>(end - start);
    for (let i = start; i < end; i++) lines[i - start] = tsvLine(rows[i]!, columns, plain);
    parts.push(lines.join('\n'));
    if (end < rows.length) await new Promise<void>((r) => setImmediate(r));
  }
  return parts.join('\n');
}

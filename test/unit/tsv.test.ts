import { describe, expect, it } from 'vitest';
import { encodeTsv, tsvLine, tsvValue } from '../../src/store/tsv.js';

describe('TabSeparated encoding', () => {
  it('escapes the characters TabSeparated gives meaning to', () => {
    expect(tsvValue('a\tb\nc\\d\re\0f')).toBe('a\\tb\\nc\\\\d\\re\\0f');
    expect(tsvValue('plain text, "quoted" and ünïcödé')).toBe('plain text, "quoted" and ünïcödé');
  });

  it('writes nulls as \\N, numbers and booleans as text, arrays as ClickHouse literals', () => {
    expect(tsvValue(null)).toBe('\\N');
    expect(tsvValue(undefined)).toBe('\\N');
    expect(tsvValue(42)).toBe('42');
    expect(tsvValue(Number.NaN)).toBe('0');
    expect(tsvValue(true)).toBe('1');
    expect(tsvValue(['ingest', "it's"])).toBe("['ingest','it\\\\'s']");
  });

  it('skips the escape scan only for plain columns, and still writes their nulls as \\N', () => {
    const row = { a: 'x\ty', b: 'x\ty', c: null };
    expect(tsvLine(row, ['a', 'b', 'c'], [false, true, true])).toBe('x\\ty\tx\ty\t\\N');
  });

  it('encodes many rows in slices, in order', async () => {
    const rows = Array.from({ length: 4500 }, (_, i) => ({ n: i, s: `r${i}` }));
    const text = await encodeTsv(rows, ['n', 's']);
    const lines = text.split('\n');
    expect(lines).toHaveLength(4500);
    expect(lines[0]).toBe('0\tr0');
    expect(lines[4499]).toBe('4499\tr4499');
  });
});

import { describe, expect, it } from 'vitest';
import { encodeTsv, tsvValue } from '../../src/store/tsv.js';

const text = async (rows: Record<string, unknown>[], columns: string[], plain?: Set<string>): Promise<string> => new TextDecoder().decode(await encodeTsv(rows, columns, plain));

describe('TabSeparated encoding', () => {
  it('escapes the characters TabSeparated gives meaning to', async () => {
    expect(tsvValue('a\tb\nc\\d\re\0f')).toBe('a\\tb\\nc\\\\d\\re\\0f');
    expect(tsvValue('plain text, "quoted" and ünïcödé')).toBe('plain text, "quoted" and ünïcödé');
    expect(await text([{ s: 'a\tb\nc\\d\re\0f' }], ['s'])).toBe('a\\tb\\nc\\\\d\\re\\0f');
  });

  it('writes nulls as \\N, numbers and booleans as text, arrays as ClickHouse literals', async () => {
    expect(tsvValue(null)).toBe('\\N');
    expect(tsvValue(undefined)).toBe('\\N');
    expect(tsvValue(42)).toBe('42');
    expect(tsvValue(Number.NaN)).toBe('0');
    expect(tsvValue(true)).toBe('1');
    expect(tsvValue(['ingest', "it's"])).toBe("['ingest','it\\\\'s']");
    const row = { a: null, b: undefined, n: 42.5, nan: Number.NaN, t: true, f: false, arr: ['ingest', "it's"], o: { k: 'v\tw' } };
    expect(await text([row], Object.keys(row))).toBe(`\\N\t\\N\t42.5\t0\t1\t0\t['ingest','it\\\\'s']\t{"k":"v\\\\tw"}`);
  });

  it('skips the escapes only for plain columns, and still writes their nulls as \\N', async () => {
    const row = { a: 'x\ty', b: 'x\ty', c: null };
    expect(await text([row], ['a', 'b', 'c'], new Set(['b', 'c']))).toBe('x\\ty\tx\ty\t\\N');
  });

  it('writes the UTF-8 TextEncoder writes: two-, three- and four-byte characters, a lone surrogate as U+FFFD', async () => {
    const values = ['ünïcödé', '日本語のテスト', 'emoji 😀 and 𝄞', 'lone \ud800 high', 'lone \udc00 low', 'high at the end \ud83d', 'tab\tafter ü'];
    const rows = values.map((s) => ({ s }));
    const bytes = await encodeTsv(rows, ['s']);
    expect(Buffer.from(bytes).equals(Buffer.from(new TextEncoder().encode(values.map((v) => tsvValue(v)).join('\n'))))).toBe(true);
  });

  it('encodes many rows in slices, in order, and each body owns its bytes', async () => {
    const rows = Array.from({ length: 4500 }, (_, i) => ({ n: i, s: `r${i}` }));
    const first = await encodeTsv(rows, ['n', 's']);
    const lines = new TextDecoder().decode(first).split('\n');
    expect(lines).toHaveLength(4500);
    expect(lines[0]).toBe('0\tr0');
    expect(lines[4499]).toBe('4499\tr4499');
    // The next encoding reuses the writer's buffer: the first body must not change under it.
    const copy = Buffer.from(first);
    const second = await encodeTsv([{ n: 'overwritten', s: 'x' }], ['n', 's']);
    expect(new TextDecoder().decode(second)).toBe('overwritten\tx');
    expect(Buffer.from(first).equals(copy)).toBe(true);
    expect(first.buffer).not.toBe(second.buffer);
    expect(first.byteOffset).toBe(0);
    expect(first.buffer.byteLength).toBe(first.byteLength);
  });

  it('two encodings at once do not share a buffer', async () => {
    const a = Array.from({ length: 5000 }, (_, i) => ({ v: `a${i}` }));
    const b = Array.from({ length: 5000 }, (_, i) => ({ v: `b${i}` }));
    const [ea, eb] = await Promise.all([encodeTsv(a, ['v']), encodeTsv(b, ['v'])]);
    expect(new TextDecoder().decode(ea).split('\n')).toEqual(a.map((r) => r.v));
    expect(new TextDecoder().decode(eb).split('\n')).toEqual(b.map((r) => r.v));
  });
});

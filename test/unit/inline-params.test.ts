// inlineParams against the reference it replaced: the client's own formatter (formatQueryParams) for
// the bound text and the literal around it. Equal text wherever the reference escapes nothing the
// domain's sqlString leaves as is (tab, newline, carriage return, which a literal may hold raw:
// store-read-query.test.ts reads those back from chDB exactly).
import { formatQueryParams } from '@clickhouse/client/dist/common/data_formatter/format_query_params.js';
import { describe, expect, it } from 'vitest';
import { inlineParams } from '../../src/store/inline-params.js';

function reference(value: unknown, type: string): string {
  const text = typeof value === 'string' ? value : formatQueryParams({ value, wrapStringInQuotes: false, printNullAsKeyword: false });
  return `CAST(${formatQueryParams({ value: text, wrapStringInQuotes: true, printNullAsKeyword: false })} AS ${type})`;
}

describe('inlineParams', () => {
  const cases: [string, unknown][] = [
    ['Array(String)', []],
    ['Array(String)', ['a']],
    ['Array(UUID)', ['0190e7c6-1b7d-7d2e-9a55-0f0d1e2c3b4a', '0190e7c6-1b7d-7d2e-9a55-0f0d1e2c3b4b']],
    ['Array(String)', ["it's", 'back\\slash', 'trailing\\', "\\'", '', 'nul\0byte', '{v:String}', 'ünïcödé ✓ 𝄞']],
    ['Array(String)', ['plain', "one 'quoted'"]],
    ['Array(UInt32)', [1, 2, 3]],
    ['Nullable(UInt32)', null],
    ['Int64', -1_700_000_000_000],
    ['String', "'; DROP TABLE kept; --"],
  ];
  for (const [type, value] of cases) {
    it(`writes ${JSON.stringify(value)} as ${type} as the client's formatter does`, () => {
      expect(inlineParams(`SELECT {v:${type}}`, { v: value })).toBe(`SELECT ${reference(value, type)}`);
    });
  }

  it('writes 20,000 fingerprints as the formatter does', () => {
    const fps = Array.from({ length: 20_000 }, (_, i) => i.toString(16).padStart(64, '0'));
    expect(inlineParams('{v:Array(String)}', { v: fps })).toBe(reference(fps, 'Array(String)'));
  });
});

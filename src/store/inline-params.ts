// A query's `{name:Type}` parameters written into its SQL, for the reads that must not go through
// chDB's bound-query path (client.ts `readQuery`: chdb-node runs every bound query of the process
// one at a time, so a request's read would wait behind the pipeline's).
//
// Each value becomes `CAST('<text>' AS Type)`, which the server parses per type as it parses a
// bound parameter: <text> is a string itself, any other value as the ClickHouse client formats it
// for a bound parameter (numbers, `\N`, `['a','b']`). The literal is quoted by the client's own
// formatter (formatQueryParams), which escapes both characters that can end or change a literal
// (`'` and `\`). The type comes from our SQL, never from a value, and values are not scanned again.
import { formatQueryParams } from '@clickhouse/client/dist/common/data_formatter/format_query_params.js';

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g;

/** `sql` with every `{name:Type}` replaced by its value as a typed literal; a missing value throws. */
export function inlineParams(sql: string, params: Readonly<Record<string, unknown>> = {}): string {
  return sql.replace(PLACEHOLDER, (_whole, name: string, type: string) => {
    if (!Object.hasOwn(params, name)) throw new Error(`query parameter ${name} has no value`);
    const value = params[name];
    return `CAST(${sqlString(typeof value === 'string' ? value : boundText(value))} AS ${type})`;
  });
}

/** A value, not a string, as the text of a bound parameter (null as `\N`, arrays as `['a','b']`). */
function boundText(value: unknown): string {
  return formatQueryParams({ value, wrapStringInQuotes: false, printNullAsKeyword: false });
}

/** Any text as a single-quoted ClickHouse string literal that reads back as exactly that text. */
export function sqlString(text: string): string {
  return formatQueryParams({ value: text, wrapStringInQuotes: true, printNullAsKeyword: false });
}

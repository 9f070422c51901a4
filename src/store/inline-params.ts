// A query's `{name:Type}` parameters written into its SQL, for the reads that must not go through
// chDB's bound-query path (client.ts `readQuery`: chdb-node runs every bound query of the process
// one at a time, so a request's read would wait behind the pipeline's).
//
// Each value becomes `CAST('<text>' AS Type)`, which the server parses per type as it parses a
// bound parameter: <text> is a string itself, any other value as the ClickHouse client formats it
// for a bound parameter (numbers, `\N`, `['a','b']`). The literal escapes both characters that can
// end or change it (`'` and `\`, src/domain/sql-policy.ts `sqlString`). The type comes from our
// SQL, never from a value, and values are not scanned again. An array of strings (a request's
// 20,000 fingerprints) is written here, each element as a literal, in one pass: the client's
// formatter builds strings a character at a time, ~0.5 s on this thread for such an array and as
// long again for the literal around it.
import { formatQueryParams } from '@clickhouse/client/dist/common/data_formatter/format_query_params.js';
import { sqlString } from '../domain/sql-policy.js';

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g;

/** `sql` with every `{name:Type}` replaced by its value as a typed literal; a missing value throws. */
export function inlineParams(sql: string, params: Readonly<Record<string, unknown>> = {}): string {
  return sql.replace(PLACEHOLDER, (_whole, name: string, type: string) => {
    if (!Object.hasOwn(params, name)) throw new Error(`query parameter ${name} has no value`);
    const value = params[name];
    if (isPlainStrings(value)) return `CAST(${plainStringsLiteral(value)} AS ${type})`;
    return `CAST(${sqlString(typeof value === 'string' ? value : boundText(value))} AS ${type})`;
  });
}

/** Strings none of which holds a quote or a backslash: ids, fingerprints, paths. */
function isPlainStrings(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string' && !v.includes("'") && !v.includes('\\'));
}

/** sqlString(boundText(value)) for plain strings, in one join: each element's quotes are the only ones to escape. */
function plainStringsLiteral(value: readonly string[]): string {
  return value.length === 0 ? "'[]'" : `'[\\'${value.join("\\',\\'")}\\']'`;
}

/** A value, not a string, as the text of a bound parameter (null as `\N`, arrays as `['a','b']`). */
function boundText(value: unknown): string {
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return `[${value.map(sqlString).join(',')}]`;
  return formatQueryParams({ value, wrapStringInQuotes: false, printNullAsKeyword: false });
}

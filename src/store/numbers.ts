// Converting what the store returns, apart from the client (./client.ts) so repositories and row
// mappers that processors and exporters load do not load the client and its database drivers
// (test/unit/import-boundaries.test.ts).

/** chDB returns 64-bit integers as JSON numbers and a server as strings: convert at the edge. */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return Number(value);
  if (typeof value === 'bigint') return Number(value);
  return 0;
}

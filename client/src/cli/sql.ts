// `flakehouse sql "SELECT …" [--format table|csv|tsv|json|jsonl|<ClickHouse format>] [--admin]`: one
// query against the SQL endpoint (SERVICE_ENDPOINT + /clickhouse) with SERVICE_TOKEN (a token with
// the sql scope) or, with --admin, the admin token. Without a query it reads one from stdin.
// `flakehouse sql --schema`: the tables the token may read, with their columns and types.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { parseArgs } from 'node:util';
import { readServerAddress } from '../contract/config/server-address.js';
import { loadServiceConfig } from '../reporter/service-config.js';
import { INSUFFICIENT_SCOPE } from '../contract/error-codes.js';
import { readRefusal } from './refusal.js';
import type { CliIo } from './io.js';
import { UsageError } from './usage-error.js';

export const SQL_USAGE = 'usage: flakehouse sql ["SELECT …" | --schema] [--format table|csv|tsv|json|jsonl|FORMAT] [--admin] [--database DB]';

/** What --schema asks: the readable tables' columns (the endpoint filters system.columns to them). */
export const SCHEMA_QUERY = 'SELECT table, name AS column, type FROM system.columns WHERE database = currentDatabase() ORDER BY table, position';

/** Short names; anything else is passed on as a ClickHouse format name. */
const FORMATS: Record<string, string> = { table: 'TabSeparatedWithNames', csv: 'CSVWithNames', tsv: 'TabSeparatedWithNames', json: 'JSON', jsonl: 'JSONEachRow' };

export async function sqlCommand(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: Pick<CliIo, 'stdin' | 'stdout'>): Promise<number> {
  let parsed: { values: { format?: string; admin?: boolean; database?: string; schema?: boolean }; positionals: string[] };
  try {
    parsed = parseArgs({
      args,
      options: { format: { type: 'string', short: 'f' }, admin: { type: 'boolean' }, database: { type: 'string' }, schema: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${SQL_USAGE}`);
  }
  const { values, positionals } = parsed;
  const format = values.format ?? 'table';
  if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(format)) throw new UsageError(`sql: --format ${format} is not a format name\n${SQL_USAGE}`);
  let query = positionals.join(' ').trim();
  if (values.schema) {
    if (query !== '') throw new UsageError(`sql: --schema takes no query\n${SQL_USAGE}`);
    query = SCHEMA_QUERY;
  } else if (query === '') {
    if (io.stdin.isTTY) throw new UsageError(`sql: give a query, or pipe one on stdin\n${SQL_USAGE}`);
    query = (await readAll(io.stdin)).trim();
    if (query === '') throw new UsageError('sql: stdin held no query');
  }

  const settings = readServerAddress(env, cwd);
  const service = loadServiceConfig({ env, cwd });
  const base = (env.SERVICE_ENDPOINT || service.config.endpoint || `http://127.0.0.1:${settings.port || 8080}`).replace(/\/+$/, '');
  let authorization: string;
  if (values.admin) {
    let admin = settings.adminToken;
    const file = path.join(settings.dataDir, 'admin-token');
    if (!admin && existsSync(file)) admin = readFileSync(file, 'utf8').trim();
    if (!admin) throw new UsageError(`sql: no admin token: set SERVICE_ADMIN_TOKEN (or run the server once so it writes ${file})`);
    authorization = `Basic ${Buffer.from(`admin:${admin}`).toString('base64')}`;
  } else {
    if (!env.SERVICE_TOKEN) throw new UsageError('sql: set SERVICE_TOKEN to a project token with the sql scope (or pass --admin)');
    authorization = `Bearer ${env.SERVICE_TOKEN}`;
  }

  const params = new URLSearchParams({ database: values.database ?? settings.database, default_format: FORMATS[format] ?? format });
  let res: Response;
  try {
    res = await fetch(`${base}/clickhouse?${params.toString()}`, { method: 'POST', headers: { authorization, 'content-type': 'text/plain' }, body: query });
  } catch (err) {
    throw new Error(`sql: cannot reach the server at ${base}: ${err instanceof Error ? err.message : String(err)}. Is \`flakehouse serve\` running?`);
  }
  if (res.status !== 200 || !res.body) throw new Error(await refusal(res));
  // A FORMAT clause in the query wins over --format: the table view is only for what it asked.
  const answered = res.headers.get('x-clickhouse-format');
  if (format === 'table' && answered === 'TabSeparatedWithNames') {
    io.stdout.write(alignedTable(await res.text()));
    return 0;
  }
  await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), io.stdout, { end: false });
  return 0;
}

/** TabSeparatedWithNames as an aligned table: a header, a rule, the rows, their count. */
export function alignedTable(tsv: string): string {
  const lines = tsv.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  if (lines.length === 0) return '';
  const rows = lines.map((l) => l.split('\t').map(unescapeTsv));
  const header = rows[0]!;
  const body = rows.slice(1);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return `${[line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n')}\n(${body.length} ${body.length === 1 ? 'row' : 'rows'})\n`;
}

/** TabSeparated escapes; newlines and tabs in a value are shown escaped so each row stays one line. */
function unescapeTsv(value: string): string {
  return value.replace(/\\(.)/g, (_m, c: string) => (c === '\\' ? '\\' : c === "'" ? "'" : c === 'N' ? 'NULL' : `\\${c}`));
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function refusal(res: Response): Promise<string> {
  const r = await readRefusal(res);
  if (r.status === 401) return `sql: the server refused the credentials (${r.message})`;
  if (r.status === 403 && r.code === INSUFFICIENT_SCOPE) return `sql: SERVICE_TOKEN lacks the sql scope; create one with \`flakehouse token create --project SLUG --scopes sql\``;
  return `sql: ${r.status} ${r.code}: ${r.message}`;
}

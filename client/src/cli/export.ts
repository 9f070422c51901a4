// `flakehouse export [--out FILE] [--json]`: streams GET /v1/export (SERVICE_ENDPOINT, SERVICE_TOKEN
// with the read scope) into a file, then checks the file is whole: a manifest first, a summary last
// whose counts match the rows in it. The file appears only then (written as FILE.partial first),
// so a cut-short download never passes for an export.
import { createReadStream, createWriteStream, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { parseArgs } from 'node:util';
import { createGunzip } from 'node:zlib';
import { readServerAddress } from '../contract/config/server-address.js';
import { loadServiceConfig } from '../reporter/service-config.js';
import { readRefusal } from './refusal.js';
import type { CliIo } from './io.js';
import { UsageError } from './usage-error.js';

export const EXPORT_USAGE = 'usage: flakehouse export [--out FILE] [--json]';

interface Summary {
  rows: number;
  artifacts: number;
  counts: Record<string, number>;
}

export async function exportCommand(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  let values: { out?: string; json?: boolean };
  try {
    ({ values } = parseArgs({ args, options: { out: { type: 'string', short: 'o' }, json: { type: 'boolean' } }, strict: true }));
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${EXPORT_USAGE}`);
  }
  const token = env.SERVICE_TOKEN;
  if (!token) throw new UsageError('export: set SERVICE_TOKEN to a project token with the read scope');
  const service = loadServiceConfig({ env, cwd });
  const base = (service.config.endpoint || `http://127.0.0.1:${readServerAddress(env, cwd).port || 8080}`).replace(/\/+$/, '');

  let res: Response;
  try {
    res = await fetch(`${base}/v1/export`, { headers: { authorization: `Bearer ${token}` } });
  } catch (err) {
    throw new Error(`export: cannot reach the server at ${base}: ${causeOf(err)}. Is \`flakehouse serve\` running?`);
  }
  if (res.status !== 200 || !res.body) throw new Error(await refusal(res));

  const file = path.resolve(cwd, values.out ?? fileNameOf(res.headers.get('content-disposition')) ?? 'service-export.ndjson.gz');
  const partial = `${file}.partial`;
  const check = new ExportCheck();
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(partial, { mode: 0o600 }));
    // Checked from the file, so what is checked is what was written.
    await pipeline(createReadStream(partial), createGunzip(), check.writable());
    check.finish();
  } catch (err) {
    rmSync(partial, { force: true });
    throw new Error(`export: the download failed, nothing was written: ${causeOf(err)}`);
  }
  const bytes = statSync(partial).size;
  renameSync(partial, file);
  const summary = check.summary!;
  if (values.json) {
    io.stdout.write(`${JSON.stringify({ file, bytes, project: check.project, ...summary })}\n`);
    return 0;
  }
  io.stdout.write(`exported project ${check.project} to ${path.relative(cwd, file) || file} (${formatBytes(bytes)})\n`);
  const width = Math.max(...Object.keys(summary.counts).map((k) => k.length), 'artifacts'.length);
  for (const [name, n] of Object.entries(summary.counts)) io.stdout.write(`  ${name.padEnd(width)}  ${n.toLocaleString('en-US').padStart(12)}\n`);
  io.stdout.write(`  ${'artifacts'.padEnd(width)}  ${summary.artifacts.toLocaleString('en-US').padStart(12)}\n`);
  io.stdout.write(`  ${summary.rows.toLocaleString('en-US')} rows in all\n`);
  return 0;
}

/** Checks an export is whole: a manifest first, rows of listed datasets, a summary last whose counts are the rows seen. */
class ExportCheck {
  project = '';
  summary: Summary | undefined;
  private readonly seen = new Map<string, number>();
  private datasets = new Set<string>();
  private lines = 0;
  private last = '';
  private tail = '';

  writable(): Writable {
    return new Writable({
      write: (chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void) => {
        try {
          this.scan(chunk.toString('utf8'));
          cb();
        } catch (err) {
          cb(err as Error);
        }
      },
    });
  }

  finish(): void {
    if (this.tail !== '') this.line(this.tail);
    if (this.lines === 0) throw new Error('the export is empty');
    const summary = parseLine(this.last);
    // A failure after the server's 200 ends the file with an error line instead (docs/export.md).
    if (summary?.type === 'error') throw new Error(`the server stopped the export early (${String(summary.error)}): ${String(summary.message)}`);
    if (summary?.type !== 'summary') throw new Error('the export ends without its summary line (cut short)');
    const counts = (summary.counts ?? {}) as Record<string, number>;
    for (const name of new Set([...Object.keys(counts), ...this.seen.keys()])) {
      if ((counts[name] ?? 0) !== (this.seen.get(name) ?? 0)) {
        throw new Error(`dataset ${name}: the summary counts ${counts[name] ?? 0} rows, the file holds ${this.seen.get(name) ?? 0}`);
      }
    }
    this.summary = { rows: Number(summary.rows), artifacts: Number(summary.artifacts), counts };
  }

  private scan(text: string): void {
    const parts = (this.tail + text).split('\n');
    this.tail = parts.pop()!;
    for (const l of parts) this.line(l);
  }

  private line(l: string): void {
    this.lines++;
    if (this.lines === 1) {
      const manifest = parseLine(l);
      if (manifest?.type !== 'manifest') throw new Error('the export does not start with a manifest line');
      this.project = String(manifest.project ?? manifest.projectId);
      this.datasets = new Set(Array.isArray(manifest.datasets) ? manifest.datasets.map(String) : []);
      return;
    }
    // Rows are most lines: their dataset is read off the fixed prefix ClickHouse writes, not parsed.
    const prefix = '{"type":"row","dataset":"';
    if (l.startsWith(prefix)) {
      const name = l.slice(prefix.length, l.indexOf('"', prefix.length));
      if (!this.datasets.has(name)) throw new Error(`a row of dataset ${name}, which the manifest does not list`);
      this.seen.set(name, (this.seen.get(name) ?? 0) + 1);
    }
    this.last = l;
  }
}

function parseLine(l: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(l);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

async function refusal(res: Response): Promise<string> {
  const r = await readRefusal(res);
  const detail = `${r.status} ${r.code}${r.ours && r.message ? `: ${r.message}` : ''}`;
  if (r.status === 401) return `export: the server refused SERVICE_TOKEN (${detail})`;
  if (r.status === 403) return `export: SERVICE_TOKEN lacks the read scope (${detail}); create one with \`flakehouse token create --scopes read\``;
  return `export: the server answered ${detail}`;
}

/** `attachment; filename="service-x-2026-11-22.ndjson.gz"` → the bare name (never a path). */
function fileNameOf(disposition: string | null): string | undefined {
  const m = /filename="([^"/\\]+)"/.exec(disposition ?? '');
  return m ? m[1] : undefined;
}

function causeOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

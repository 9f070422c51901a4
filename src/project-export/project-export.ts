// A project's export as NDJSON lines (docs/contract.md §6): a manifest, one line per row of every
// dataset, the artifact inventory, a closing summary with per-dataset counts.
//
// Row lines are written by ClickHouse itself: each dataset is one SELECT whose JSONEachRow output
// already is `{"type":"row","dataset":…,"data":{…}}`, streamed block by block (Store.stream), so
// rows never become JS objects and memory does not grow with the table.
import type { OpenedStore, Store } from '../store/client.js';
import type { ArtifactInventory } from './artifacts.js';
import { DATASETS, type Dataset } from './datasets.js';

export const EXPORT_FORMAT_VERSION = 1;

export interface PlannedDataset {
  name: string;
  columns: string[];
  sql: string;
}

export interface ExportPlan {
  projectId: string;
  slug: string;
  datasets: PlannedDataset[];
}

/**
 * Rows are read in storage order with one thread, a block at a time: each block is one streamed
 * chunk, and the engine's memory grows with the chunk (≈ ten times it), so blocks are small. With
 * the new analyzer, a WHERE makes MergeTree read whole granules (8,192 rows: 7 MB of JSON per
 * executions chunk) whatever max_block_size says; the old one honours it (measured on 1M
 * executions: +200 MB resident with 7 MB chunks, +88 MB with 0.9 MB ones). JSON is plain: ISO
 * times, numbers unquoted (the 64-bit ones exported are counts and durations, far below 2^53),
 * `/` unescaped, invalid UTF-8 replaced.
 */
function readSettings(blockRows: number): string {
  return [
    'max_threads = 1',
    `max_block_size = ${blockRows}`,
    'allow_experimental_analyzer = 0',
    "date_time_output_format = 'iso'",
    'output_format_json_quote_64bit_integers = 0',
    'output_format_json_quote_denormals = 0',
    'output_format_json_named_tuples_as_objects = 1',
    'output_format_json_escape_forward_slashes = 0',
    'output_format_json_validate_utf8 = 1',
  ].join(', ');
}

/** Rows per block: ~1 MB of JSON for an execution row (~0.9 KB). */
export const DEFAULT_BLOCK_ROWS = 1024;

/** The project's slug and one SELECT per dataset whose table exists; null for an unknown project. */
export async function planExport(store: Store, projectId: string, datasets: readonly Dataset[] = DATASETS): Promise<ExportPlan | null> {
  const project = await store.query<{ slug: string }>(
    `SELECT slug FROM ${store.table('projects')} FINAL WHERE id = {projectId:UUID} AND deleted = 0 LIMIT 1`,
    { projectId },
  );
  if (!project[0]) return null;
  const columns = await store.query<{ table: string; name: string; type: string }>(
    `SELECT table, name, type FROM system.columns WHERE database = {db:String} AND table IN {tables:Array(String)}`,
    { db: store.database, tables: datasets.map((d) => d.table) },
  );
  const types = new Map<string, Map<string, string>>();
  for (const c of columns) {
    const t = types.get(c.table) ?? new Map<string, string>();
    t.set(c.name, c.type);
    types.set(c.table, t);
  }
  const planned: PlannedDataset[] = [];
  for (const d of datasets) {
    const tableTypes = types.get(d.table);
    if (!tableTypes) continue; // a table a later migration adds; an older schema simply has none
    planned.push({ name: d.name, columns: d.columns.map((c) => c.name), sql: datasetSql(store, d, tableTypes) });
  }
  return { projectId, slug: project[0].slug, datasets: planned };
}

function datasetSql(store: Store, d: Dataset, types: ReadonlyMap<string, string>): string {
  const fields = d.columns.map((c) => {
    const type = c.type ?? types.get(c.name);
    // An allow-listed column the table lacks is a mistake in datasets.ts, not something to skip.
    if (type === undefined) throw new Error(`export: ${d.table}.${c.name} is allow-listed but not in the table`);
    return { expr: c.expr, type: `\`${c.name}\` ${plainType(type)}` };
  });
  // A named tuple is written as an object: `data` is the row with exactly the allow-listed keys.
  const data = `CAST(tuple(${fields.map((f) => f.expr).join(', ')}) AS Tuple(${fields.map((f) => f.type).join(', ')}))`;
  const where = [`\`${d.projectColumn}\` = {projectId:UUID}`, ...(d.where ? [d.where] : [])].join(' AND ');
  return (
    `SELECT 'row' AS type, '${d.name}' AS dataset, ${data} AS data ` +
    `FROM ${store.table(d.table)}${d.final ? ' FINAL' : ''} WHERE ${where} SETTINGS ${readSettings(d.blockRows ?? DEFAULT_BLOCK_ROWS)}`
  );
}

/** `SimpleAggregateFunction(sum, UInt64)` holds a plain UInt64 (read FINAL, it is the merged value). */
function plainType(type: string): string {
  const m = /^SimpleAggregateFunction\(\s*[^,]+,\s*(.+)\)$/.exec(type);
  return m ? m[1]! : type;
}

export interface ExportSummary {
  rows: number;
  artifacts: number;
  counts: Record<string, number>;
}

export interface ExportOptions {
  /** Lists the bucket; null when artifact storage is off (the export then has no artifact lines). */
  artifacts: ArtifactInventory | null;
  /** The project's prefix in the bucket. */
  artifactPrefix: string;
  signal?: AbortSignal;
  now?: Date;
}

/** The export's bytes, uncompressed. Yields ClickHouse's chunks as they come; pulls lazily. */
export async function* exportLines(store: OpenedStore, plan: ExportPlan, opts: ExportOptions): AsyncGenerator<Buffer> {
  yield line({
    type: 'manifest',
    version: EXPORT_FORMAT_VERSION,
    projectId: plan.projectId,
    project: plan.slug,
    exportedAt: (opts.now ?? new Date()).toISOString(),
    datasets: plan.datasets.map((d) => d.name),
    columns: Object.fromEntries(plan.datasets.map((d) => [d.name, d.columns])),
    artifactInventory: opts.artifacts !== null,
  });
  const summary: ExportSummary = { rows: 0, artifacts: 0, counts: {} };
  for (const d of plan.datasets) {
    let n = 0;
    for await (const chunk of store.stream(d.sql, { projectId: plan.projectId }, opts.signal)) {
      // JSON escapes newlines inside strings, so each newline ends exactly one row.
      n += countNewlines(chunk);
      yield chunk;
    }
    summary.counts[d.name] = n;
    summary.rows += n;
  }
  if (opts.artifacts) {
    // Objects are small lines: batched into ~64 KB writes rather than one chunk each.
    let batch = '';
    for await (const o of opts.artifacts.list(opts.artifactPrefix, opts.signal)) {
      batch += `${JSON.stringify({ type: 'artifact', key: o.key, size: o.size, lastModified: o.lastModified })}\n`;
      summary.artifacts++;
      if (batch.length >= 65_536) {
        yield Buffer.from(batch);
        batch = '';
      }
    }
    if (batch) yield Buffer.from(batch);
  }
  yield line({ type: 'summary', ...summary });
}

/**
 * The line that ends an export cut short by a failure after the 200 went out (the artifact store
 * failing mid-listing, ClickHouse failing mid-dataset): the client, which already has the rows
 * before it, learns why there is no summary line.
 */
export function exportErrorLine(code: string, message: string): Buffer {
  return line({ type: 'error', error: code, message });
}

function line(value: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(value)}\n`);
}

function countNewlines(chunk: Buffer): number {
  let n = 0;
  for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n++;
  return n;
}

// SIGHUP on a running `flakehouse serve --pipeline FILE`: an invalid file is refused with its path
// in the log and the running graph kept; a valid change is swapped in and logged, and the next
// batch is processed by it. The production default: the pipeline on its own thread.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeBatch } from '../helpers/daemon.js';
import { bootstrapToken, startServerProcess, type ServerProcess } from '../helpers/process.js';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const DEFAULT = readFileSync(path.join(REPO_ROOT, 'pipelines/default.yaml'), 'utf8');
const dir = mkdtempSync(path.join(tmpdir(), 'fh-e2e-reload-'));
const dataDir = path.join(dir, 'data');
const file = path.join(dir, 'pipeline.yaml');
let server: ServerProcess | undefined;

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.kill9();
  rmSync(dir, { recursive: true, force: true });
});

async function until<T>(what: string, f: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await f();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}:\n${server?.output() ?? ''}`);
}

/** Log lines (pino JSON) with `msg`. */
function logLines(msg: string): Record<string, unknown>[] {
  return server!
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === msg);
}

describe('SIGHUP reloads the pipeline file', () => {
  it('refuses an invalid file naming it, then swaps in a valid change', async () => {
    writeFileSync(file, DEFAULT);
    server = await startServerProcess({ SERVICE_DATA_DIR: dataDir, SERVICE_PIPELINE_THREAD: 'true', LOG_LEVEL: 'info' }, 90_000, [], ['--pipeline', file]);
    const token = bootstrapToken(dataDir);

    writeFileSync(file, DEFAULT.replace('processors: [normalize, identity,', 'processors: [normalize, nosuchprocessor, identity,'));
    process.kill(server.child.pid!, 'SIGHUP');
    const refused = await until('the refusal', () => logLines('pipeline reload refused')[0]);
    expect(refused.level).toBe(50);
    expect(String(refused.error)).toContain(path.basename(file));
    expect(String(refused.error)).toContain('service.pipelines.executions.processors');
    expect(server.child.exitCode).toBeNull();

    writeFileSync(
      file,
      DEFAULT.replace('processors:\n  normalize: {}\n', 'processors:\n  normalize: {}\n  filter:\n    executions:\n      exclude: [{ title: "/^dropme/" }]\n').replace(
        'processors: [normalize, identity,',
        'processors: [normalize, filter, identity,',
      ),
    );
    process.kill(server.child.pid!, 'SIGHUP');
    const reloaded = await until('the reload', () => logLines('pipeline reloaded')[0]);
    expect(reloaded.file).toBe(file);

    // The next batch goes through the new filter.
    const at = Date.parse('2026-11-20T10:00:00Z');
    const body = nativeBatch({
      resource: { branch: 'reloaded' },
      executions: ['kept', 'dropme'].map((title, i) => ({ filePath: 'a.test.ts', suite: 'A', title, status: 'pass', startedAt: at + i, durationMs: 1 })),
    });
    const res = await fetch(`${server.url}/v1/ingest`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(202);
    const get = async (p: string): Promise<any> => (await fetch(`${server!.url}${p}`, { headers: { authorization: `Bearer ${token}` } })).json();
    const run = await until('the run', async () => ((await get('/v1/runs?branch=reloaded')) as { items: { id: string }[] }).items[0]);
    const detail = (await get(`/v1/runs/${run.id}`)) as { executions: { title: string }[] };
    expect(detail.executions.map((e) => e.title)).toEqual(['kept']);

    expect(await server.stop()).toBe(0);
  }, 180_000);
});

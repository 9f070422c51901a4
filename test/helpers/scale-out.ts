// What the scale-out tests on a real nats-server share (test/e2e/scale-out*.test.ts): temp dirs and
// processes removed after the file, and the few HTTP calls they make to ingest and worker processes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import type { ServerProcess } from './process.js';

/** A file's temp dirs and server processes, ended (kill -9) and removed in its afterAll. */
export function scaleOutScratch(tag: string): { tempDir: (name: string) => string; processes: ServerProcess[] } {
  const dirs: string[] = [];
  const processes: ServerProcess[] = [];
  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) await p.kill9();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    tempDir: (name) => {
      const dir = mkdtempSync(path.join(tmpdir(), `fh-${tag}-${name}-`));
      dirs.push(dir);
      return dir;
    },
    processes,
  };
}

export async function post(url: string, token: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}/v1/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => null) };
}

export async function get(url: string, token: string, pathAndQuery: string): Promise<any> {
  const res = await fetch(`${url}${pathAndQuery}`, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
}

export async function listRuns(url: string, token: string, branch: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const page = await get(url, token, `/v1/runs?branch=${branch}&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/** A new ingest token of the first project, made on a worker with the admin token. */
export async function createIngestToken(workerUrl: string, admin: string): Promise<{ id: string; token: string }> {
  const projects = await get(workerUrl, admin, '/v1/admin/projects');
  const projectSlug = (projects.items ?? projects)[0].slug as string;
  const res = await fetch(`${workerUrl}/v1/admin/projects/${projectSlug}/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ scopes: ['ingest'] }),
  });
  return (await res.json()) as { id: string; token: string };
}

/** Polls `f` until it answers; on time-out the error carries `explain()` (a process's log, say). */
export async function waitFor<T>(what: string, f: () => Promise<T | undefined | false>, timeoutMs: number, explain?: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${explain ? `\n${explain()}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

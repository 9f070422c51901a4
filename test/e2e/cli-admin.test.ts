// A new user's path: `flakehouse serve` as a process prints a token; the project and token commands
// (run in-process, test/helpers/process.ts) work against that running server; project B's token never sees project A's runs.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nativeBatch } from '../helpers/daemon.js';
import { runCli, startServerProcess, type CliResult, type ServerProcess } from '../helpers/process.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-e2e-cli-'));
let server: ServerProcess | undefined;

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const cli = (args: string[], env: Record<string, string>): Promise<CliResult> => runCli(args, { env });

describe('flakehouse serve + project/token commands', () => {
  it('prints a bootstrap token once, and the admin commands manage projects and tokens', async () => {
    server = await startServerProcess({ SERVICE_DATA_DIR: dataDir });
    const printed = /SERVICE_TOKEN=(fh_[0-9a-f]{48})/.exec(server.output());
    expect(printed).not.toBeNull();
    const token = printed![1]!;
    expect(readFileSync(path.join(dataDir, 'bootstrap-token'), 'utf8').trim()).toBe(token);
    expect(statSync(path.join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600);

    const env = { SERVICE_DATA_DIR: dataDir, SERVICE_ENDPOINT: server.url };
    const created = await cli(['project', 'create', 'team-b', '--json'], env);
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ slug: 'team-b' });
    expect((await cli(['project', 'create', 'team-b'], env)).code).toBe(1); // 409 conflict, explained

    const minted = await cli(['token', 'create', '--project', 'team-b', '--scopes', 'ingest,read', '--json'], env);
    expect(minted.code).toBe(0);
    const b = JSON.parse(minted.stdout) as { id: string; token: string; scopes: string[] };
    expect(b.token).toMatch(/^fh_[0-9a-f]{48}$/);
    expect(b.scopes).toEqual(['ingest', 'read']);
    expect((await cli(['token', 'create', '--project', 'team-b', '--scopes', 'admin'], env)).code).toBe(2);

    // A's run is invisible to B.
    const post = await fetch(`${server.url}/v1/ingest`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(nativeBatch({ n: 2 })),
    });
    expect(post.status).toBe(202);
    // Until the run is listed (a generous ceiling: a busy machine is slow, not wrong).
    let runId = '';
    const deadline = Date.now() + 60_000;
    while (!runId && Date.now() < deadline) {
      const list = (await (await fetch(`${server.url}/v1/runs`, { headers: { authorization: `Bearer ${token}` } })).json()) as { items: { id: string }[] };
      runId = list.items[0]?.id ?? '';
      if (!runId) await new Promise((r) => setTimeout(r, 25));
    }
    expect(runId).not.toBe('');
    const asB = await fetch(`${server.url}/v1/runs/${runId}`, { headers: { authorization: `Bearer ${b.token}` } });
    expect(asB.status).toBe(404);
    const listB = (await (await fetch(`${server.url}/v1/runs`, { headers: { authorization: `Bearer ${b.token}` } })).json()) as { items: unknown[] };
    expect(listB.items).toEqual([]);

    // Revoked: 401 from then on.
    expect((await cli(['token', 'revoke', b.id], env)).code).toBe(0);
    const revoked = await fetch(`${server.url}/v1/runs`, { headers: { authorization: `Bearer ${b.token}` } });
    expect(revoked.status).toBe(401);

    // A restart on the same data dir prints no new token.
    expect(await server.stop()).toBe(0);
    server = await startServerProcess({ SERVICE_DATA_DIR: dataDir });
    expect(server.output()).not.toMatch(/SERVICE_TOKEN=/);
    const again = await fetch(`${server.url}/v1/runs`, { headers: { authorization: `Bearer ${token}` } });
    expect(again.status).toBe(200);
  }, 120_000);
});

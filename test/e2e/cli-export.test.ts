// `flakehouse export` for real: the daemon as a process, the command in-process; the file it writes is
// gunzipped and read back. Refusals (no token, a bad token, no read scope, no server) are clear
// errors with exit codes, and leave no file behind.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch } from '../helpers/daemon.js';
import { bootstrapToken, runCli, startServerProcess, type CliResult, type ServerProcess } from '../helpers/process.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-e2e-export-'));
const workDir = mkdtempSync(path.join(tmpdir(), 'fh-e2e-export-out-'));
let server: ServerProcess;
let token: string;

const cli = (args: string[], env: Record<string, string>): Promise<CliResult> => runCli(args, { cwd: workDir, env });

function readExport(file: string): Record<string, unknown>[] {
  const text = gunzipSync(readFileSync(file)).toString('utf8');
  return text
    .slice(0, -1)
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

beforeAll(async () => {
  server = await startServerProcess({ SERVICE_DATA_DIR: dataDir });
  token = bootstrapToken(dataDir);
  const post = await fetch(`${server.url}/v1/ingest`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(nativeBatch({ n: 3 })),
  });
  expect(post.status).toBe(202);
  // Processed once the run is listed (a generous ceiling: a busy machine is slow, not wrong).
  const deadline = Date.now() + 60_000;
  for (;;) {
    const list = (await (await fetch(`${server.url}/v1/runs`, { headers: { authorization: `Bearer ${token}` } })).json()) as { items: unknown[] };
    if (list.items.length > 0) break;
    if (Date.now() > deadline) throw new Error(`the run was not listed within 60 s:\n${server.output()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}, 120_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(workDir, { recursive: true, force: true });
});

describe('flakehouse export', () => {
  it('writes the export to --out and prints the counts of the summary', async () => {
    const r = await cli(['export', '--out', 'project.ndjson.gz'], { SERVICE_ENDPOINT: server.url, SERVICE_TOKEN: token });
    const file = path.join(workDir, 'project.ndjson.gz'); // relative to the working directory
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^exported project default to project\.ndjson\.gz \(\d+(\.\d)? (B|KiB)\)\n/);
    expect(r.stdout).toMatch(/^ {2}executions +3$/m);
    expect(r.stdout).toMatch(/^ {2}runs +1$/m);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(existsSync(`${file}.partial`)).toBe(false);

    const lines = readExport(file);
    expect(lines[0]).toMatchObject({ type: 'manifest', version: 1, project: 'default' });
    const summary = lines.at(-1)!;
    expect(summary).toMatchObject({ type: 'summary', counts: { runs: 1, executions: 3, tokens: 1 } });
    expect(lines.filter((l) => l.type === 'row')).toHaveLength(summary.rows as number);
    expect(readFileSync(file).toString('latin1')).not.toContain(token);
  });

  it('names the file after the project and the day without --out, and answers JSON with --json', async () => {
    const r = await cli(['export', '--json'], { SERVICE_ENDPOINT: server.url, SERVICE_TOKEN: token });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { file: string; bytes: number; project: string; rows: number; counts: Record<string, number> };
    expect(path.basename(out.file)).toBe(`service-default-${new Date().toISOString().slice(0, 10)}.ndjson.gz`);
    expect(path.dirname(out.file)).toBe(workDir);
    expect(out.bytes).toBe(statSync(out.file).size);
    expect(out).toMatchObject({ project: 'default', counts: { executions: 3 } });
    expect(readExport(out.file).at(-1)).toMatchObject({ rows: out.rows, counts: out.counts });
  });

  it('explains a refusal: no token (2), an unknown token (401), a token without read (403), no server', async () => {
    const before = readdirSync(workDir).sort();
    const none = await cli(['export', '--out', 'x.gz'], { SERVICE_ENDPOINT: server.url });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/SERVICE_TOKEN/);

    const unknown = await cli(['export', '--out', 'x.gz'], { SERVICE_ENDPOINT: server.url, SERVICE_TOKEN: `fh_${'0'.repeat(48)}` });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/refused SERVICE_TOKEN \(401 unauthorized/);

    const admin = readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
    const minted = (await (
      await fetch(`${server.url}/v1/admin/projects/default/tokens`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ scopes: ['ingest'] }),
      })
    ).json()) as { token: string };
    const ingestOnly = await cli(['export', '--out', 'x.gz'], { SERVICE_ENDPOINT: server.url, SERVICE_TOKEN: minted.token });
    expect(ingestOnly.code).toBe(1);
    expect(ingestOnly.stderr).toMatch(/lacks the read scope \(403 insufficient_scope/);

    const down = await cli(['export', '--out', 'x.gz'], { SERVICE_ENDPOINT: 'http://127.0.0.1:9', SERVICE_TOKEN: token });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach the server at http:\/\/127\.0\.0\.1:9/);
    expect(readdirSync(workDir).sort()).toEqual(before);
  });
});

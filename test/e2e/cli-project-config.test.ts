// `flakehouse config --json --project SLUG` against a `flakehouse serve` process: the project's
// settings layer comes from the running server's admin API, and from storage once the server is down; each key
// names its source (default | file | settings | env).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, runCliProcess, startServerProcess, type CliResult, type ServerProcess } from '../helpers/process.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'fh-e2e-projcfg-'));
let server: ServerProcess | undefined;

afterAll(async () => {
  if (server && server.child.exitCode === null) await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const cli = (args: string[], env: Record<string, string>): Promise<CliResult> => runCli(args, { cwd: dataDir, env });
// Offline, the command opens the server's storage: chDB takes one data directory per process, and
// this test process has its own open.
const cliProcess = (args: string[], env: Record<string, string>): Promise<CliResult> => runCliProcess(args, { cwd: dataDir, env });

describe('flakehouse config --project', () => {
  it('shows the settings layer online (admin API) and offline (storage), with sources', async () => {
    writeFileSync(path.join(dataDir, 'service.yml'), 'flaky:\n  minSamples: 7\n');
    server = await startServerProcess({ SERVICE_DATA_DIR: dataDir });
    const adminToken = readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim();
    const patch = await fetch(`${server.url}/v1/admin/projects/default/settings`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ flaky: { threshold: 0.65 }, quarantine: { enabled: true, cooldownRuns: 4 }, retention: { rawDays: 14 } }),
    });
    expect(patch.status).toBe(200);

    const env = { SERVICE_DATA_DIR: dataDir, SERVICE_ENDPOINT: server.url, SERVICE_QUARANTINE_COOLDOWN_RUNS: '9' };
    const online = await cli(['config', '--json', '--project', 'default'], env);
    expect(online.code, online.stderr).toBe(0);
    const a = JSON.parse(online.stdout);
    expect(a.project).toMatchObject({ slug: 'default', settingsFrom: 'api', retention: { executionDays: 14, artifactDays: null } });
    expect(a.config.flaky).toEqual({ threshold: 0.65, minSamples: 7 });
    expect(a.config.quarantine).toEqual({ enabled: true, cooldownRuns: 9 });
    expect(a.sources).toMatchObject({
      'flaky.threshold': 'settings',
      'flaky.minSamples': 'file',
      'quarantine.enabled': 'settings',
      'quarantine.cooldownRuns': 'env',
      'retention.rawDays': 'settings',
      'ai.rca': 'default',
    });
    // Without --project: no settings layer.
    const plain = JSON.parse((await cli(['config', '--json'], env)).stdout);
    expect(plain.sources['flaky.threshold']).toBe('default');
    expect(plain.project).toBeUndefined();

    expect(await server.stop()).toBe(0);
    const offline = await cliProcess(['config', '--json', '--project', 'default'], env);
    expect(offline.code, offline.stderr).toBe(0);
    const b = JSON.parse(offline.stdout);
    expect(b.project.settingsFrom).toBe('storage');
    expect(b.config).toEqual(a.config);
    expect(b.sources).toEqual(a.sources);

    const missing = await cliProcess(['config', '--json', '--project', 'nope'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('project "nope" not found');
  }, 120_000);
});

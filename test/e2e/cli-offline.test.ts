// The `flakehouse` commands that need no server; the binary itself as a child process, from its
// build and from the sources.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli, runCliProcess, type CliResult } from '../helpers/process.js';

const TOKEN = 'fh_live_0123456789abcdefSECRETSECRET';

let dir: string;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'flakehouse-cli-'));
});

afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

/** The environment minus anything that configures Flakehouse, so the host's settings cannot leak in. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('SERVICE_') || k === 'LOG_LEVEL' || k === 'POLL_INTERVAL_MS' || k.startsWith('NODE_OPTIONS')) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function cli(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<CliResult> {
  return runCli(args, { cwd: opts.cwd, env: cleanEnv(opts.env), timeoutMs: 60_000 });
}

/** As `cli`, as its own process (bin/flakehouse.js). */
function cliProcess(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<CliResult> {
  return runCliProcess(args, { cwd: opts.cwd, env: cleanEnv(opts.env), timeoutMs: 60_000 });
}

async function subdir(name: string, files: Record<string, string> = {}): Promise<string> {
  const d = path.join(dir, name);
  await fs.mkdir(d, { recursive: true });
  for (const [file, text] of Object.entries(files)) await fs.writeFile(path.join(d, file), text);
  return d;
}

describe('flakehouse CLI (offline commands)', () => {
  it('validate: the default pipeline file is valid', async () => {
    const cwd = await subdir('validate-default');
    const res = await cli(['validate'], { cwd });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toBe('pipelines/default.yaml: valid (executions, events)\n');
  });

  it('validate FILE: an unknown key exits 2 naming the file and the path', async () => {
    const text = (await fs.readFile(path.join(REPO_ROOT, 'pipelines/default.yaml'), 'utf8')).replace('verbosity: basic', 'verbosityy: basic');
    expect(text).toContain('verbosityy');
    const cwd = await subdir('validate-bad', { 'bad.yaml': text });
    const res = await cli(['validate', 'bad.yaml'], { cwd });
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('bad.yaml: exporters.debug.verbosityy: unknown key');
    expect(res.stderr).not.toContain('not defined');
  });

  it('validate FILE: a pipeline without identity exits 2 naming the path, what is missing and who provides it', async () => {
    const text = (await fs.readFile(path.join(REPO_ROOT, 'pipelines/default.yaml'), 'utf8'))
      .replace('[normalize, identity, clustering', '[normalize, clustering')
      .replace(/^ {2}identity: \{\}.*\n/m, '');
    expect(text).not.toContain('identity: {}');
    const cwd = await subdir('validate-no-identity', { 'no-identity.yaml': text });
    const res = await cli(['validate', 'no-identity.yaml'], { cwd });
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('no-identity.yaml: service.pipelines.executions.processors: identity is missing: ');
    expect(res.stderr).toContain('which identity provides');
  });

  it('validate FILE: ${env:NAME} is read from the environment; unset, it is refused at its path', async () => {
    const text = (await fs.readFile(path.join(REPO_ROOT, 'pipelines/default.yaml'), 'utf8')).replace('verbosity: basic', 'verbosity: ${env:FH_DEBUG_VERBOSITY}');
    const cwd = await subdir('validate-env', { 'env.yaml': text });
    const ok = await cli(['validate', 'env.yaml'], { cwd, env: { FH_DEBUG_VERBOSITY: 'detailed' } });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const unset = await cli(['validate', 'env.yaml'], { cwd });
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain('env.yaml: exporters.debug.verbosity: environment variable FH_DEBUG_VERBOSITY is not set');
  });

  it('config --json: file, redacted token, layered values and their sources', async () => {
    const cwd = await subdir('config-json', { 'service.yml': 'project: web\nflaky:\n  threshold: 0.7\n' });
    const res = await cli(['config', '--json'], { cwd, env: { SERVICE_FLAKY_MIN_SAMPLES: '9', SERVICE_TOKEN: TOKEN } });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).not.toContain(TOKEN);
    expect(res.stdout).not.toContain('SECRET');
    const out = JSON.parse(res.stdout);
    expect(await fs.realpath(out.file)).toBe(await fs.realpath(path.join(cwd, 'service.yml')));
    expect(out.token.present).toBe(true);
    expect(out.token.value).not.toBe(TOKEN);
    expect(out.config.project).toBe('web');
    expect(out.config.flaky).toEqual({ threshold: 0.7, minSamples: 9 });
    expect(out.sources['flaky.threshold']).toBe('file');
    expect(out.sources['flaky.minSamples']).toBe('env');
    expect(out.sources['project']).toBe('file');
    expect(out.sources['quarantine.enabled']).toBe('default');
  });

  it('config (text): shows the token as set without printing it', async () => {
    const cwd = await subdir('config-text');
    const res = await cli(['config'], { cwd, env: { SERVICE_TOKEN: TOKEN, SERVICE_FLAKY_THRESHOLD: '0.9' } });
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('config file: (none');
    expect(res.stdout).toMatch(/SERVICE_TOKEN: set \(/);
    expect(res.stdout).not.toContain(TOKEN);
    expect(res.stdout).not.toContain('SECRET');
    expect(res.stdout).toMatch(/flaky\.threshold = 0\.9 {2}\(env\)/);
  });

  it('config --json: a token in service.yml exits 2 pointing at SERVICE_TOKEN', async () => {
    const cwd = await subdir('config-token', { 'service.yml': 'token: x\n' });
    const res = await cli(['config', '--json'], { cwd });
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain('service.yml: token: ');
    expect(res.stderr).toContain('SERVICE_TOKEN');
  });

  it('runs from the sources through tsx as it does from the build (the image has no build)', async () => {
    const cwd = await subdir('from-sources', { 'service.yml': 'project: web\n' });
    const fromSources = await cliProcess(['config', '--json'], { cwd, env: { FLAKEHOUSE_CLI_FROM_SOURCES: '1' } });
    expect(fromSources.stderr).toBe('');
    expect(fromSources.code).toBe(0);
    expect(fromSources.stdout).toBe((await cliProcess(['config', '--json'], { cwd })).stdout);
    const validate = await cliProcess(['validate'], { cwd, env: { FLAKEHOUSE_CLI_FROM_SOURCES: '1' } });
    expect(validate.code).toBe(0);
    expect(validate.stdout).toBe('pipelines/default.yaml: valid (executions, events)\n');
  });

  it('an unknown command exits 2 with the usage', async () => {
    const cwd = await subdir('unknown');
    const res = await cliProcess(['frobnicate'], { cwd });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('unknown command "frobnicate"');
    expect(res.stderr).toContain('usage: flakehouse');
  });
});

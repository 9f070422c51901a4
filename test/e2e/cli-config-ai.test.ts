// `flakehouse config` shows `ai.rca` as the instance applies it: without an AI provider RCA is off,
// whatever the layers say, and the printout must not tell an operator otherwise.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from '../helpers/process.js';

let cwd: string;

beforeAll(async () => {
  cwd = await fs.mkdtemp(path.join(os.tmpdir(), 'flakehouse-config-ai-'));
});

afterAll(async () => {
  await fs.rm(cwd, { recursive: true, force: true });
});

/** Only PATH and what a case sets: the host's SERVICE_* and AI keys cannot leak in. */
function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeoutMs: 60_000 });
}

describe('flakehouse config: ai.rca', () => {
  it('without SERVICE_AI_PROVIDER shows ai.rca = false and why, not the configured true', async () => {
    const text = await cli(['config']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).not.toMatch(/ai\.rca = true/);
    expect(text.stdout).toContain('ai.rca = false  (default: true; off: no AI provider, SERVICE_AI_PROVIDER is not set)');

    const json = await cli(['config', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const out = JSON.parse(json.stdout);
    // The layers as configured stay as they are; what the instance applies is beside them.
    expect(out.config.ai.rca).toBe(true);
    expect(out.sources['ai.rca']).toBe('default');
    expect(out.effective).toEqual({ 'ai.rca': { value: false, reason: 'off: no AI provider, SERVICE_AI_PROVIDER is not set' } });
  });

  it('with a provider shows the configured value, in either direction', async () => {
    const on = await cli(['config'], { SERVICE_AI_PROVIDER: 'ollama' });
    expect(on.code, on.stderr).toBe(0);
    expect(on.stdout).toMatch(/ai\.rca = true {2}\(default\)\n/);
    const json = JSON.parse((await cli(['config', '--json'], { SERVICE_AI_PROVIDER: 'ollama' })).stdout);
    expect(json.effective).toEqual({});

    const off = await cli(['config'], { SERVICE_AI_RCA: 'false' });
    expect(off.stdout).toMatch(/ai\.rca = false {2}\(env\)\n/);
  });
});

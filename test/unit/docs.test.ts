// The README and the example config stay true to the code.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVER_ENV_VARS } from '../../src/config/daemon-env.js';
import { SERVICE_ENV_OVERRIDES, loadServiceConfig } from '../../src/config/service-yml.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('README', () => {
  it('documents every environment variable the code reads', () => {
    const fromCode = new Set<string>();
    for (const f of [...sourceFiles(path.join(ROOT, 'src')), ...sourceFiles(path.join(ROOT, 'client/src'))]) {
      for (const m of readFileSync(f, 'utf8').matchAll(/\b(SERVICE_[A-Z0-9_]+|LOG_LEVEL|POLL_INTERVAL_MS)\b/g)) fromCode.add(m[1]!);
    }
    fromCode.delete('SERVICE_ENV_OVERRIDES'); // a constant's name, not a variable
    for (const v of SERVER_ENV_VARS) fromCode.add(v.name);
    for (const v of SERVICE_ENV_OVERRIDES) fromCode.add(v.name);
    const missing = [...fromCode].filter((name) => !README.includes(`\`${name}\``));
    expect(missing).toEqual([]);
    expect(fromCode.size).toBeGreaterThan(30);
  });

  it('shows the two set-up commands', () => {
    expect(README).toContain('npm ci && npm start');
    expect(README).toContain('npm test');
  });
});

describe('config/service.example.yml', () => {
  it('is a valid service.yml equal to the defaults', () => {
    const file = loadServiceConfig({ env: { SERVICE_CONFIG: path.join(ROOT, 'config/service.example.yml') }, cwd: ROOT });
    const defaults = loadServiceConfig({ env: {}, cwd: path.join(ROOT, 'test') });
    expect(file.file).toMatch(/service\.example\.yml$/);
    expect(file.config).toEqual(defaults.config);
  });
});

// Layering (defaults < file < settings < env, retention: settings over env), the settings
// document schema, PATCH semantics, and a project's resolved config, all pure.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyPatch, resolveLayers } from '../../client/src/contract/config-layers.js';
import type { ConfigError } from '../../client/src/contract/config/errors.js';
import { loadServiceConfig } from '../../src/config/service-yml.js';
import { parseSettings, patchSettings, projectSettingsPatchSchema, projectSettingsSchema, resolveProjectConfig } from '../../client/src/contract/config/project-settings.js';

const dir = mkdtempSync(path.join(tmpdir(), 'fh-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('resolveLayers', () => {
  const layers = {
    default: { flaky: { threshold: 0.8, minSamples: 5 }, ignore: [], retention: {} },
    file: { flaky: { threshold: 0.6 }, ignore: ['a/**', 'b/**'], retention: { rawDays: 90 } },
    settings: { flaky: { minSamples: 9 }, ignore: ['c/**'], retention: { rawDays: 7 } },
    env: { flaky: { threshold: 0.95 }, retention: { rawDays: 30, artifactDays: 60 } },
  };

  it('merges deep per key, replaces arrays, and names each leaf’s layer', () => {
    const { value, sources } = resolveLayers(layers);
    expect(value.flaky).toEqual({ threshold: 0.95, minSamples: 9 });
    expect(value.ignore).toEqual(['c/**']);
    expect(sources).toMatchObject({ 'flaky.threshold': 'env', 'flaky.minSamples': 'settings', ignore: 'settings' });
  });

  it('lets a project’s retention beat the environment’s global default, key by key', () => {
    const { value, sources } = resolveLayers(layers);
    expect(value.retention).toEqual({ rawDays: 7, artifactDays: 60 });
    expect(sources['retention.rawDays']).toBe('settings');
    expect(sources['retention.artifactDays']).toBe('env');
    // Without a project window, the env default beats the file.
    const noSettings = resolveLayers({ ...layers, settings: {} });
    expect(noSettings.value.retention).toEqual({ rawDays: 30, artifactDays: 60 });
    expect(noSettings.sources['retention.rawDays']).toBe('env');
  });

  it('falls back to defaults with source "default"', () => {
    const { value, sources } = resolveLayers({ ...layers, file: {}, settings: {}, env: {} });
    expect(value.flaky).toEqual({ threshold: 0.8, minSamples: 5 });
    expect(sources['flaky.threshold']).toBe('default');
    expect(sources.ignore).toBe('default');
    expect(sources['retention.rawDays']).toBeUndefined();
  });
});

describe('applyPatch', () => {
  it('deep-merges objects, replaces arrays, and null removes a key (inherit again)', () => {
    const base = { flaky: { threshold: 0.5, minSamples: 3 }, ignore: ['a/**'], tracker: { enabled: true } };
    const out = applyPatch(base, { flaky: { threshold: null, minSamples: 4 }, ignore: ['b/**', 'c/**'], tracker: null, cost: { ciMinute: 1 } });
    expect(out).toEqual({ flaky: { minSamples: 4 }, ignore: ['b/**', 'c/**'], cost: { ciMinute: 1 } });
    expect(base.flaky.threshold).toBe(0.5); // the input is not changed
    expect(applyPatch({ flaky: { threshold: 0.5 } }, { flaky: { threshold: null } })).toEqual({});
  });
});

describe('project settings schema', () => {
  it('accepts every policy key and rejects unknown keys naming the path', () => {
    const doc = {
      flaky: { threshold: 0.7, minSamples: 3 },
      quarantine: { enabled: true, cooldownRuns: 5 },
      ai: { rca: false, dailyTokenBudget: 1000 },
      ignore: ['e2e/**'],
      retention: { rawDays: 7, artifactDays: 14 },
      artifacts: { enabled: false },
      notifications: { channels: [{ kind: 'webhook', target: 'https://hooks.example.com/x', events: ['flaky_detected'] }] },
      cost: { ciMinute: 0.01, developerHour: 100, investigationMinutes: 20 },
      tracker: { enabled: true, afterDays: 2, recoveryDays: 5 },
    };
    expect(parseSettings(doc)).toEqual(doc);
    const r = projectSettingsSchema.safeParse({ flaky: { treshold: 0.5 }, project: 'x' });
    expect(r.success).toBe(false);
    const err = (() => {
      try {
        parseSettings({ flaky: { treshold: 0.5 }, project: 'x' });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected an error');
    })();
    expect(err.message).toContain('settings: flaky.treshold: unknown key');
    expect(err.message).toContain('settings: project: unknown key');
  });

  it('names the path of a bad value, a bad glob and a duplicate channel', () => {
    expect(() => parseSettings({ flaky: { threshold: 2 } })).toThrow('settings: flaky.threshold: expected a number between 0 and 1, got 2');
    expect(() => parseSettings({ retention: { rawDays: 0 } })).toThrow('settings: retention.rawDays: expected an integer ≥ 1, got 0');
    expect(() => parseSettings({ ignore: ['ok/**', ''] })).toThrow('settings: ignore.1:');
    const ch = { kind: 'slack', target: 'https://hooks.slack.com/services/T/B/X' };
    expect(() => parseSettings({ notifications: { channels: [ch, ch] } })).toThrow('settings: notifications.channels.1: duplicate of channel 0');
  });

  it('drops empty sections so the document holds only what was set', () => {
    expect(parseSettings({ flaky: {}, tracker: { enabled: false } })).toEqual({ tracker: { enabled: false } });
  });

  it('PATCH: null is allowed only in a patch, and the merged document is validated', () => {
    expect(projectSettingsSchema.safeParse({ flaky: { threshold: null } }).success).toBe(false);
    const patch = projectSettingsPatchSchema.parse({ flaky: { threshold: null }, quarantine: { enabled: true } });
    expect(patchSettings({ flaky: { threshold: 0.5, minSamples: 2 } }, patch)).toEqual({ flaky: { minSamples: 2 }, quarantine: { enabled: true } });
    expect(projectSettingsPatchSchema.safeParse({ flaky: { treshold: null } }).success).toBe(false);
  });
});

describe('resolveProjectConfig', () => {
  it('puts settings between service.yml and the environment, with each key’s source', () => {
    writeFileSync(path.join(dir, 'service.yml'), 'flaky:\n  threshold: 0.6\n  minSamples: 7\nquarantine:\n  cooldownRuns: 10\n');
    const base = loadServiceConfig({ env: { SERVICE_QUARANTINE_ENABLED: 'false', SERVICE_EXECUTION_RETENTION_DAYS: '30' }, cwd: dir });
    const r = resolveProjectConfig(base, { flaky: { threshold: 0.5 }, quarantine: { enabled: true }, retention: { rawDays: 7, artifactDays: 3 } });
    expect(r.config.flaky).toEqual({ threshold: 0.5, minSamples: 7 });
    expect(r.config.quarantine).toEqual({ enabled: false, cooldownRuns: 10 }); // env wins over settings
    expect(r.sources).toMatchObject({
      'flaky.threshold': 'settings',
      'flaky.minSamples': 'file',
      'quarantine.enabled': 'env',
      'quarantine.cooldownRuns': 'file',
      'retention.rawDays': 'settings',
      'ai.rca': 'default',
    });
    // Artifacts are kept at least as long as executions.
    expect(r.retention).toEqual({ executionDays: 7, artifactDays: 7 });
    // Without settings: the env's global default, no artifact window.
    expect(resolveProjectConfig(base, null).retention).toEqual({ executionDays: 30, artifactDays: null });
    expect(resolveProjectConfig(loadServiceConfig({ env: {}, cwd: dir }), null).retention).toEqual({ executionDays: null, artifactDays: null });
  });
});

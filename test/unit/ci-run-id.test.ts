// SERVICE_CI_RUN_ID: the CI run for a CI system we do not detect (or a script's own), sent as the
// run's ciRunId when detection found none — without a commit, runs of one CI run are the same code
// to the scorer. Issue 38.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectCi } from '../../client/src/reporter/ci-detect.js';
import { resolveResource } from '../../client/src/reporter/run-context.js';
import { loadReporterSettings } from '../../client/src/reporter/settings.js';

describe('SERVICE_CI_RUN_ID', () => {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'fh-ci-run-id-'));

  it('is read, checked and shown', () => {
    expect(loadReporterSettings({ env: { SERVICE_CI_RUN_ID: 'nightly-4711' }, cwd }).ciRunId).toBe('nightly-4711');
    expect(loadReporterSettings({ env: {}, cwd }).ciRunId).toBeUndefined();
    expect(() => loadReporterSettings({ env: { SERVICE_CI_RUN_ID: 'x'.repeat(201) }, cwd })).toThrow(/SERVICE_CI_RUN_ID/);
  });

  it('is the run id when the CI system gives none; a detected one wins', () => {
    expect(resolveResource({ ci: detectCi({}), ciRunId: 'nightly-4711' }).resource.ciRunId).toBe('nightly-4711');
    const gh = detectCi({ GITHUB_ACTIONS: 'true', GITHUB_RUN_ID: '987', GITHUB_RUN_ATTEMPT: '2' });
    expect(resolveResource({ ci: gh, ciRunId: 'nightly-4711' }).resource.ciRunId).toBe('987');
  });
});

// The reporter's merge base (client/src/reporter/merge-base.ts) from a real git repository: the remote-tracking
// base branch first, the local one as fallback, nothing when there is no base branch or no answer;
// and SERVICE_MERGE_BASE as a setting.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../client/src/contract/config/errors.js';
import { findMergeBase } from '../../client/src/reporter/merge-base.js';
import { loadReporterSettings } from '../../client/src/reporter/settings.js';
import { makeForkedRepo, type ForkedRepo } from '../helpers/git-fork.js';

let tmp: string;
let repo: ForkedRepo;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fh-merge-base-'));
  fs.mkdirSync(path.join(tmp, 'repo'));
  repo = makeForkedRepo(path.join(tmp, 'repo'));
});

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('findMergeBase', () => {
  it('is the commit the branch forked from, asked of origin/<base> before the stale local <base>', async () => {
    expect(repo.fork).not.toBe(repo.staleMain);
    expect(await findMergeBase({ cwd: repo.dir, baseBranch: 'main' })).toBe(repo.fork);
    // From a subdirectory of the checkout too (a runner's root inside the repository).
    fs.mkdirSync(path.join(repo.dir, 'packages', 'web'), { recursive: true });
    expect(await findMergeBase({ cwd: path.join(repo.dir, 'packages', 'web'), baseBranch: 'main' })).toBe(repo.fork);
  });

  it('falls back to the local branch when there is no remote-tracking one', async () => {
    expect(await findMergeBase({ cwd: repo.dir, baseBranch: 'trunk' })).toBe(repo.fork);
  });

  it('is absent without a base branch, for an unknown one, outside a checkout, or past the timeout', async () => {
    expect(await findMergeBase({ cwd: repo.dir, baseBranch: undefined })).toBeUndefined();
    expect(await findMergeBase({ cwd: repo.dir, baseBranch: '' })).toBeUndefined();
    expect(await findMergeBase({ cwd: repo.dir, baseBranch: 'no-such-branch' })).toBeUndefined();
    // Read by git as an option, were it passed on.
    expect(await findMergeBase({ cwd: repo.dir, baseBranch: '--all' })).toBeUndefined();
    const elsewhere = fs.mkdtempSync(path.join(tmp, 'plain-'));
    expect(await findMergeBase({ cwd: elsewhere, baseBranch: 'main' })).toBeUndefined();
    expect(await findMergeBase({ cwd: repo.dir, baseBranch: 'main', timeoutMs: 0 })).toBeUndefined();
  });
});

describe('SERVICE_MERGE_BASE', () => {
  it('is read as a commit sha (lowercased); anything else names the variable', () => {
    const cwd = fs.mkdtempSync(path.join(tmp, 'settings-'));
    expect(loadReporterSettings({ env: { SERVICE_MERGE_BASE: 'ABCDEF1234' }, cwd }).mergeBase).toBe('abcdef1234');
    expect(loadReporterSettings({ env: {}, cwd }).mergeBase).toBeUndefined();
    let refused: unknown;
    try {
      loadReporterSettings({ env: { SERVICE_MERGE_BASE: 'origin/main' }, cwd });
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).message).toBe('env: SERVICE_MERGE_BASE: expected 7 to 40 hex characters, got "origin/main"');
  });
});

// The merge base of a pull request's run: the commit its branch forked from the base branch,
// `git merge-base HEAD origin/<base>` (else `git merge-base HEAD <base>`), read from the local
// checkout so the server can judge evidence by code version. Best effort and cheap: it never
// fetches (a shallow CI clone simply has no answer), gives up after a short timeout, and any
// failure means "unknown", so the field is left out and the report goes on as before.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repositoryRootOf } from './last-report.js';

/** Both git calls together: a report must never wait on a slow repository. */
export const MERGE_BASE_TIMEOUT_MS = 2_000;

const SHA_RE = /^[0-9a-f]{7,40}$/;

export interface MergeBaseOptions {
  /** Directory inside the checkout (the tests' root). */
  cwd: string;
  /** The PR's base branch; without one the run is not a pull request and has no merge base. */
  baseBranch: string | undefined;
  timeoutMs?: number;
}

/** The merge base as lowercase hex, or undefined when it cannot be known cheaply. */
export async function findMergeBase(opts: MergeBaseOptions): Promise<string | undefined> {
  const base = opts.baseBranch?.trim();
  // A name starting with `-` would be read by git as an option; git refuses other bad names itself.
  if (!base || base.startsWith('-') || base.includes('\0')) return undefined;
  // Not a checkout: no need to start git to learn that.
  if (!fs.existsSync(path.join(repositoryRootOf(opts.cwd), '.git'))) return undefined;
  const deadline = Date.now() + (opts.timeoutMs ?? MERGE_BASE_TIMEOUT_MS);
  // The remote-tracking branch first: in CI the local base branch is usually absent or stale.
  for (const ref of [`origin/${base}`, base]) {
    const left = deadline - Date.now();
    if (left <= 0) return undefined;
    const sha = await gitMergeBase(opts.cwd, ref, left);
    if (sha !== undefined) return sha;
  }
  return undefined;
}

function gitMergeBase(cwd: string, ref: string, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['merge-base', 'HEAD', ref],
      // GIT_OPTIONAL_LOCKS=0: a read must not take locks another git process in CI may want.
      { cwd, timeout: timeoutMs, killSignal: 'SIGKILL', windowsHide: true, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0' } },
      (error, stdout) => {
        // Unknown ref, no common ancestor, shallow history, no git, timeout: all mean "unknown".
        if (error) return resolve(undefined);
        const sha = stdout.trim().toLowerCase();
        resolve(SHA_RE.test(sha) ? sha : undefined);
      },
    );
  });
}

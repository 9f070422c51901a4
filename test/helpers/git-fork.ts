// A real git repository shaped like a pull request's checkout in CI, for the merge-base tests:
//
//   c1 ── c2 ── c3        origin/main and the local-only branch `trunk` (c3)
//   │      └── f1         feature = HEAD, forked from c2
//   main (stale: c1)
//
// `git merge-base HEAD origin/main` is c2 while `git merge-base HEAD main` is c1, so a test can
// tell which ref was asked; `trunk` exists only locally (no origin/trunk), for the fallback.
import { execFileSync } from 'node:child_process';

export interface ForkedRepo {
  dir: string;
  /** Where feature forked from the base branch: the merge base a PR run should report. */
  fork: string;
  /** The stale local `main`: what asking `main` instead of `origin/main` would give. */
  staleMain: string;
}

export function makeForkedRepo(dir: string): ForkedRepo {
  // No user or system config: identity and signing are fixed here, whatever the machine has.
  const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: dir, env, encoding: 'utf8' }).trim();
  const commit = (message: string): string => {
    git('commit', '-q', '--allow-empty', '--no-gpg-sign', '-m', message);
    return git('rev-parse', 'HEAD');
  };
  git('init', '-q', '-b', 'main');
  const c1 = commit('c1');
  const c2 = commit('c2');
  const c3 = commit('c3');
  git('update-ref', 'refs/remotes/origin/main', c3);
  git('branch', 'trunk', c3);
  git('checkout', '-q', '-b', 'feature', c2);
  commit('f1');
  git('branch', '-f', 'main', c1);
  return { dir, fork: c2, staleMain: c1 };
}

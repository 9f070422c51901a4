// A git repository of one commit for the CLI's tests (`flakehouse run` reads the commit and the base
// branch from git): the given files committed on `main` by a local identity, unsigned.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function commitRepo(dir: string, files: Record<string, string>, message: string): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: dir, encoding: 'utf8' });
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 'dev@example.com');
  git('config', 'user.name', 'Dev');
  git('config', 'commit.gpgsign', 'false');
  git('add', ...Object.keys(files));
  git('commit', '-q', '-m', message);
}

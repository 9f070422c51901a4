// bin/built-cli.js decides whether `flakehouse` runs the CLI build or the sources: a build is used
// only while it started after the newest change under src/ (an edit, an added or a removed file).
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freshBuild, newestMtime } from '../../bin/built-cli.js';

const T0 = new Date('2026-11-20T10:00:00Z');
const at = (s: number): Date => new Date(T0.getTime() + s * 1000);

let root: string;
let src: string;
let dist: string;

/** Sets a path's mtime `s` seconds after T0. */
function age(p: string, s: number): void {
  utimesSync(p, at(s), at(s));
}

function build(name: string, startedS: number): string {
  const dir = path.join(dist, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'built-at'), '');
  age(path.join(dir, 'built-at'), startedS);
  writeFileSync(path.join(dist, 'current'), `${name}\n`);
  return dir;
}

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'fh-built-cli-'));
  src = path.join(root, 'src');
  dist = path.join(root, 'dist');
  mkdirSync(path.join(src, 'cli'), { recursive: true });
  writeFileSync(path.join(src, 'cli/main.ts'), '');
  writeFileSync(path.join(src, 'daemon.ts'), '');
  for (const p of ['cli/main.ts', 'daemon.ts', 'cli', '.']) age(path.join(src, p), 0);
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('freshBuild', () => {
  it('is undefined without a build, or when `current` names a missing one', () => {
    expect(freshBuild(src, dist)).toBeUndefined();
    mkdirSync(dist);
    writeFileSync(path.join(dist, 'current'), 'build-gone\n');
    expect(freshBuild(src, dist)).toBeUndefined();
  });

  it('is the current build while it started after every source', () => {
    build('build-old', 5);
    const dir = build('build-new', 10);
    expect(freshBuild(src, dist)).toBe(dir);
  });

  it('is undefined once a source is edited after the build started', () => {
    build('build-a', 10);
    age(path.join(src, 'cli/main.ts'), 11);
    expect(newestMtime(src)).toBe(at(11).getTime());
    expect(freshBuild(src, dist)).toBeUndefined();
  });

  it('is undefined once a source is added or removed (its directory changes)', () => {
    build('build-a', 10);
    writeFileSync(path.join(src, 'cli/new.ts'), '');
    age(path.join(src, 'cli/new.ts'), 0);
    age(path.join(src, 'cli'), 12);
    expect(freshBuild(src, dist)).toBeUndefined();

    build('build-b', 20);
    expect(freshBuild(src, dist)).toBe(path.join(dist, 'build-b'));
    unlinkSync(path.join(src, 'daemon.ts'));
    age(src, 21);
    expect(freshBuild(src, dist)).toBeUndefined();
  });
});

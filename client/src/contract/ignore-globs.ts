// service.yml `ignore`: glob patterns of test files to drop before identity resolution
// (docs/architecture.md "Identity, scoring, clustering"). Matching is done by `picomatch` (the glob engine
// behind micromatch/fast-glob/vite), with these choices on top of its defaults:
//
// - picomatch glob semantics: `*` and `?` stay within one path segment, `**` spans segments
//   (`e2e/legacy/**`, `**/*.snap.test.ts`), braces `{a,b}` and extglobs `+(a|b)` work.
// - A glob without a `/` (`*.snap.test.ts`) matches the file name at any depth (picomatch
//   `basename`), as people expect from an ignore list.
// - A glob ending in `/` (`e2e/legacy/`) means everything below that directory.
// - A leading `./` or `/` in a glob is dropped: globs are relative to the repository root.
//   `\` in a glob escapes the next character (`**/\[id\].test.ts`); paths, not globs, get `\` → `/`.
// - Dotfiles/dot-directories are matched like any other name (`dot`).
// - Case-insensitive by default, because test identity folds the path's case
//   (normalizeTestPath): two paths that are the same test must be ignored alike.
// - Ordered negation, gitignore-style: a glob starting with `!` re-includes files that an
//   earlier glob excluded; the last glob that matches decides.
import { createRequire } from 'node:module';

/** The subset of picomatch's options used here (picomatch ships no type declarations). */
export interface PicomatchOptions {
  dot?: boolean;
  nocase?: boolean;
  basename?: boolean;
  nobrace?: boolean;
  noextglob?: boolean;
}

export interface Picomatch {
  (glob: string, options?: PicomatchOptions): (path: string) => boolean;
  makeRe(glob: string, options?: PicomatchOptions): RegExp;
}

function loadPicomatch(): Picomatch {
  const requireCjs = createRequire(import.meta.url);
  // The posix entry point never treats `\` as a path separator (we normalise paths ourselves).
  const mod: unknown = requireCjs('picomatch/posix');
  if (typeof mod !== 'function' || typeof (mod as { makeRe?: unknown }).makeRe !== 'function') {
    throw new Error('picomatch: unexpected module shape');
  }
  return mod as Picomatch;
}

export const picomatch: Picomatch = loadPicomatch();

/**
 * Repository-relative form of a file path for pattern matching: `\` → `/`, surrounding blanks,
 * leading `./` and `/` removed, repeated slashes collapsed. Case is kept (matchers decide).
 */
export function normalizeRepoPath(path: string): string {
  return path
    .trim()
    .replace(/\\/g, '/')
    .replace(/\/{2,}/g, '/')
    .replace(/^(?:\.\/|\/)+/, '');
}

export interface IgnoreOptions {
  /** Default false: matching folds case like test identity does. */
  caseSensitive?: boolean;
}

/**
 * Compile service.yml `ignore` globs once; the returned predicate says whether a test file is
 * excluded. Blank globs are skipped; an empty list ignores nothing. Throws on a glob picomatch
 * cannot compile (validate config at load time by calling this once).
 */
export function compileIgnore(globs: readonly string[], options: IgnoreOptions = {}): (filePath: string) => boolean {
  const nocase = options.caseSensitive !== true;
  const matchers: { negated: boolean; test: (path: string) => boolean }[] = [];
  for (const raw of globs) {
    let glob = raw.trim();
    const negated = glob.startsWith('!');
    if (negated) glob = glob.slice(1).trim();
    glob = glob.replace(/^(?:\.\/|\/)+/, ''); // `\` stays picomatch's escape character
    if (glob.endsWith('/')) glob = `${glob.replace(/\/+$/, '')}/**`;
    if (glob === '' || glob === '/**') continue;
    let test: (path: string) => boolean;
    try {
      // picomatch's `basename` applies to every glob given it, so only set it for slash-less ones.
      test = picomatch(glob, { dot: true, nocase, basename: !glob.includes('/') });
    } catch (err) {
      throw new Error(`invalid ignore glob ${JSON.stringify(raw)}: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
    matchers.push({ negated, test });
  }
  if (matchers.length === 0) return () => false;
  const hasNegation = matchers.some((m) => m.negated);
  if (!hasNegation) {
    return (filePath) => {
      const path = normalizeRepoPath(filePath);
      for (const m of matchers) if (m.test(path)) return true;
      return false;
    };
  }
  return (filePath) => {
    const path = normalizeRepoPath(filePath);
    for (let i = matchers.length - 1; i >= 0; i--) {
      const m = matchers[i]!;
      if (m.test(path)) return !m.negated;
    }
    return false;
  };
}

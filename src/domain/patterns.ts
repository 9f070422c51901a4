// Patterns of the operator processors' configs (filter): a string is either a regular expression
// written `/…/flags` or a wildcard. Two wildcard flavours, because the fields differ:
//
// - file paths use the `ignore` globs (./ignore-globs.ts, picomatch): `*` stays within a path
//   segment, `**` spans segments, a slash-less glob matches the file name at any depth, and
//   matching folds case as test identity does;
// - every other text (suite, title, branch, attribute values) uses a plain wildcard: `*` is any
//   text, `/` included (so `dependabot/*` matches `dependabot/npm_and_yarn/x`), `?` one character,
//   the rest literal and case-sensitive. Titles and branches are not paths; a path glob would make
//   `*` stop at every `/` in "GET /users/:id".
import { compileIgnore } from '../../client/src/contract/ignore-globs.js';

export type TextMatcher = (value: string) => boolean;

const REGEX_LITERAL = /^\/(.+)\/([a-z]*)$/s;

/** The regular expression of a `/…/flags` pattern, or undefined when the pattern is a wildcard. Throws on a bad one. */
function regexOf(pattern: string): RegExp | undefined {
  const m = REGEX_LITERAL.exec(pattern);
  if (!m) return undefined;
  // `g` and `y` make `test` stateful (lastIndex): the same value would match every other time.
  if (/[gy]/.test(m[2]!)) throw new Error(`regular expression flags g and y are not allowed in ${pattern}`);
  try {
    return new RegExp(m[1]!, m[2]);
  } catch (err) {
    throw new Error(`invalid regular expression ${pattern}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** A text pattern: `/…/flags`, or a wildcard where `*` is any text and `?` one character. Throws on a bad regex. */
export function compileTextPattern(pattern: string): TextMatcher {
  const re = regexOf(pattern);
  if (re) return (value) => re.test(value);
  if (!/[*?]/.test(pattern)) return (value) => value === pattern;
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  const wild = new RegExp(`^${source}$`, 's');
  return (value) => wild.test(value);
}

/** A file pattern: `/…/flags` (tested against the path as stored), or an `ignore` glob. Throws on a bad one. */
export function compileFilePattern(pattern: string): TextMatcher {
  const re = regexOf(pattern);
  if (re) return (value) => re.test(value);
  if (pattern.trim().startsWith('!')) throw new Error(`a file pattern cannot be negated (${pattern}); use include instead`);
  return compileIgnore([pattern]);
}

/** Why a pattern cannot be compiled, or undefined when it can (for config validation). */
export function patternProblem(pattern: string, compile: (p: string) => TextMatcher): string | undefined {
  try {
    compile(pattern);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

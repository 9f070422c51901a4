// GitHub CODEOWNERS: parse the file and find the owners of a test file. Pure, no I/O.
//
// Semantics follow GitHub's documentation (and the reference behaviour of hmarr/codeowners):
// - One rule per line: `<pattern> <owner>...`; `#` starts a comment (also after the owners);
//   blank lines are skipped; `\#` at the start of a pattern is a literal `#`, `\ ` an escaped
//   blank, `\*`/`\?` literal wildcards.
// - Owners are `@user`, `@org/team` or an e-mail address. A pattern without owners is valid and
//   un-owns the files it matches (a later, owner-less rule overrides an earlier owner).
// - Invalid lines are skipped and reported with their 1-based line number, never thrown: an
//   invalid owner, negation (`!pattern`), character ranges (`[abc]`), `***`, a dangling `\`.
// - Patterns are gitignore-style: a leading `/` anchors to the repository root; a pattern with a
//   `/` in the middle is anchored too; a pattern without one matches at any depth; a trailing `/`
//   matches everything below that directory; `*` and `?` stay within one path segment and `**`
//   spans segments; a pattern matching a directory also matches everything below it, except when
//   its last segment is a lone `*` (`docs/*` owns `docs/a.md` but not `docs/build/b.md`).
// - The LAST matching rule wins.
// - Case: GitHub matches case-sensitively, but Flakehouse test identities fold the path's case
//   (normalizeTestPath), so matching is case-insensitive by default; pass
//   `{ caseSensitive: true }` for GitHub's exact behaviour on original-case paths.
//
// Glob → regex compilation is done by picomatch (see ignore-globs.ts); this module only translates
// the gitignore/CODEOWNERS conventions into picomatch globs (wildcard-free patterns get equivalent
// plain string tests). Each rule list is compiled once (cached per array), and rules are indexed
// by a literal part every match needs — a leading directory, a path segment name or a file-name
// suffix — so a lookup only tests the rules that can match (50k paths × 500 rules: ~0.1-0.2 s).
import { normalizeRepoPath, picomatch, type PicomatchOptions } from '../../client/src/contract/ignore-globs.js';

export interface CodeownersRule {
  /** The pattern as written in the file (escapes kept). */
  pattern: string;
  /** Owners in file order, de-duplicated; empty = the matched files have no owner. */
  owners: string[];
  /** 1-based line number in the file. */
  line: number;
}

export interface CodeownersError {
  line: number;
  message: string;
}

export interface ParsedCodeowners {
  rules: CodeownersRule[];
  errors: CodeownersError[];
}

export interface CodeownersOptions {
  /** Default false (see the module comment). */
  caseSensitive?: boolean;
}

export interface CodeownersMatcher {
  /** The last rule matching the path, or null. */
  match(path: string): CodeownersRule | null;
  /** Owners of the last matching rule; [] when no rule matches or that rule has no owners. */
  ownersFor(path: string): string[];
}

const USER_RE = /^@[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?$/;
const TEAM_RE = /^@[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?\/[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?$/;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@.]+$/;

/** True for an owner GitHub accepts: `@user`, `@org/team` or an e-mail address. */
export function isValidOwner(owner: string): boolean {
  return USER_RE.test(owner) || TEAM_RE.test(owner) || EMAIL_RE.test(owner);
}

/** Split a line into blank-separated tokens; `\` escapes the next character (kept in the token). */
function tokenize(line: string): string[] {
  const tokens: string[] = [];
  let cur = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '\\' && i + 1 < line.length) {
      cur += c + line[i + 1]!;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\f' || c === '\v') {
      if (cur !== '') tokens.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  if (cur !== '') tokens.push(cur);
  return tokens;
}

export function parseCodeowners(text: string): ParsedCodeowners {
  const rules: CodeownersRule[] = [];
  const errors: CodeownersError[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/);
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const trimmed = lines[i]!.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const tokens = tokenize(trimmed);
    const pattern = tokens[0]!;
    const compiled = compilePattern(pattern, false);
    if ('error' in compiled) {
      errors.push({ line: lineNo, message: compiled.error });
      continue;
    }
    const owners: string[] = [];
    let badOwner: string | null = null;
    for (const token of tokens.slice(1)) {
      if (token.startsWith('#')) break; // inline comment
      if (!isValidOwner(token)) {
        badOwner = token;
        break;
      }
      if (!owners.includes(token)) owners.push(token);
    }
    if (badOwner !== null) {
      errors.push({
        line: lineNo,
        message: `invalid owner ${JSON.stringify(badOwner)}: expected @user, @org/team or an e-mail address`,
      });
      continue;
    }
    rules.push({ pattern, owners, line: lineNo });
  }
  return { rules, errors };
}

interface CompiledPattern {
  /** Tests a normalised path (lowercased first when matching case-insensitively). */
  test: (path: string) => boolean;
  /**
   * A necessary condition for a match, used to index rules (null: test against every path):
   * `prefix`: key is the path or one of its directories (anchored pattern starting with literal
   * segments: `/src/billing/`, `apps/web/*.ts`; key = those segments);
   * `segment`: some path segment equals key (`**` + `/name`, `name/`, `**` + `/name/*.ts`);
   * `ext`: some path segment ends with `.` + key (`*.js` → js, `*.test.ts` → test.ts).
   */
  index: { kind: 'prefix' | 'segment' | 'ext'; key: string } | null;
}

interface Segment {
  /** picomatch glob text of the segment. */
  glob: string;
  /** The segment's text when it has no wildcard, else null. */
  literal: string | null;
  /** Its wildcard-free runs, for a cheap `includes` pre-filter. */
  pieces: string[];
}

const ALNUM = /[A-Za-z0-9]/;
const SLASH = 47;

/**
 * Translate one CODEOWNERS pattern into a path test (the parser compiles to validate). Globs go
 * through picomatch; wildcard-free patterns (most CODEOWNERS lines: `/src/billing/`, `apps/`,
 * `logs`) get plain string tests with the same meaning, and wildcard patterns are guarded
 * by a substring pre-filter, because picomatch's regexes are general but not cheap.
 */
function compilePattern(rawPattern: string, caseSensitive: boolean): CompiledPattern | { error: string } {
  const shown = JSON.stringify(rawPattern);
  if (rawPattern.startsWith('!')) return { error: `negated pattern ${shown}: "!" is not supported in CODEOWNERS` };
  // Insensitive matching lowercases both sides (cheaper than regex `i`). Escapes survive: only
  // non-alphanumeric characters are escaped in the glob text below.
  const pattern = caseSensitive ? rawPattern : rawPattern.toLowerCase();
  // Split on unescaped `/`; each segment becomes picomatch glob text with every literal character
  // except letters and digits escaped, so picomatch's extra syntax (braces, extglobs) stays literal.
  const segs: Segment[] = [];
  let glob = '';
  let literal: string | null = '';
  let piece = '';
  let pieces: string[] = [];
  const endPiece = (): void => {
    if (piece !== '') pieces.push(piece);
    piece = '';
  };
  const flush = (): void => {
    endPiece();
    segs.push({ glob, literal, pieces });
    glob = '';
    literal = '';
    pieces = [];
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === undefined) return { error: `pattern ${shown} ends with a dangling "\\"` };
      glob += ALNUM.test(next) ? next : `\\${next}`;
      if (literal !== null) literal += next;
      piece += next;
      i++;
    } else if (c === '/') {
      flush();
    } else if (c === '*' || c === '?') {
      glob += c;
      literal = null;
      endPiece();
    } else if (c === '[') {
      return { error: `pattern ${shown}: character ranges ("[...]") are not supported in CODEOWNERS` };
    } else {
      glob += ALNUM.test(c) ? c : `\\${c}`;
      if (literal !== null) literal += c;
      piece += c;
    }
  }
  flush();
  if (segs.some((s) => s.glob.includes('***'))) return { error: `pattern ${shown}: "***" is not a valid wildcard` };

  const anchoredAtRoot = segs[0]!.glob === '';
  let dirOnly = segs.length > 1 && segs[segs.length - 1]!.glob === '';
  const parts = segs.filter((s) => s.glob !== '');
  if (parts.length === 0) return { error: `pattern ${shown} matches no file` };
  // `dir/**` is the same as `dir/`: everything below, not `dir` itself.
  if (parts.length > 1 && parts[parts.length - 1]!.glob === '**') {
    parts.pop();
    dirOnly = true;
  }
  // No slash except a trailing one: match at any depth.
  const anchored = anchoredAtRoot || parts.length > 1;
  if (!anchored && parts[0]!.glob !== '**') parts.unshift({ glob: '**', literal: null, pieces: [] });
  const first = parts[0]!;
  const literalHead: string[] = [];
  for (const p of parts) {
    if (p.literal === null) break;
    literalHead.push(p.literal);
  }
  const prefixIndex = literalHead.length > 0 ? { kind: 'prefix' as const, key: literalHead.join('/') } : null;

  // Wildcard-free: `a/b` (the path itself or below it), `a/b/` (below it only).
  if (parts.every((p) => p.literal !== null)) {
    const lit = parts.map((p) => p.literal).join('/');
    const below = `${lit}/`;
    const test = dirOnly
      ? (p: string) => p.startsWith(below)
      : (p: string) => p.startsWith(lit) && (p.length === lit.length || p.charCodeAt(lit.length) === SLASH);
    return { test, index: prefixIndex };
  }
  // `**/name` and `**/name/` (also written `name`, `name/`): a path segment equal to `name`.
  const tail = parts[1];
  if (parts.length === 2 && first.glob === '**' && tail !== undefined && tail.literal !== null) {
    const name = tail.literal;
    const dir = `/${name}/`;
    const test = dirOnly
      ? (p: string) => p.startsWith(dir.slice(1)) || p.includes(dir)
      : (p: string) => p === name || p.startsWith(dir.slice(1)) || p.includes(dir) || p.endsWith(dir.slice(0, -1));
    return { test, index: { kind: 'segment', key: name } };
  }

  const base = parts.map((p) => p.glob).join('/');
  const last = parts[parts.length - 1]!.glob;
  let globs: string[];
  if (base === '**') globs = ['**'];
  else if (dirOnly) globs = [`${base}/**/*`];
  else if (last === '*') globs = [base];
  else globs = [base, `${base}/**/*`];
  const opts: PicomatchOptions = { dot: true, nobrace: true, noextglob: true };
  let re: RegExp;
  try {
    const res = globs.map((g) => picomatch.makeRe(g, opts));
    re = res.length === 1 ? res[0]! : new RegExp(res.map((r) => r.source).join('|'), res[0]!.flags);
  } catch (err) {
    return { error: `pattern ${shown}: ${err instanceof Error ? err.message : String(err)}` };
  }
  const needles = parts.flatMap((p) => p.pieces);
  const test = (p: string): boolean => {
    for (const n of needles) if (!p.includes(n)) return false;
    return re.test(p);
  };
  let index: CompiledPattern['index'] = prefixIndex;
  if (index === null && first.glob === '**') {
    let longest = '';
    for (const p of parts) if (p.literal !== null && p.literal.length > longest.length) longest = p.literal;
    const lastPart = parts[parts.length - 1]!;
    if (longest !== '') index = { kind: 'segment', key: longest };
    else if (parts.length === 2 && /^\*[^*?]+$/.test(lastPart.glob)) {
      const suffix = lastPart.pieces[0] ?? '';
      const dot = suffix.indexOf('.');
      if (dot >= 0 && dot < suffix.length - 1) index = { kind: 'ext', key: suffix.slice(dot + 1) };
    }
  }
  return { test, index };
}

function addTo(map: Map<string, number[]>, key: string, idx: number): void {
  const list = map.get(key);
  if (list) list.push(idx);
  else map.set(key, [idx]);
}

/** Compile a rule list once; rule order matters (last match wins). Throws on an invalid pattern. */
export function compileCodeowners(rules: readonly CodeownersRule[], options: CodeownersOptions = {}): CodeownersMatcher {
  const caseSensitive = options.caseSensitive === true;
  const compiled: ((path: string) => boolean)[] = [];
  // Rule indices (ascending) by the index of their pattern; `others` must be tried on every path.
  const byPrefix = new Map<string, number[]>();
  const bySegment = new Map<string, number[]>();
  const byExt = new Map<string, number[]>();
  const others: number[] = [];
  rules.forEach((rule, idx) => {
    const c = compilePattern(rule.pattern, caseSensitive);
    if ('error' in c) throw new Error(`CODEOWNERS line ${rule.line}: ${c.error}`);
    compiled.push(c.test);
    if (c.index === null) others.push(idx);
    else addTo(c.index.kind === 'prefix' ? byPrefix : c.index.kind === 'segment' ? bySegment : byExt, c.index.key, idx);
  });

  const match = (rawPath: string): CodeownersRule | null => {
    const normalised = normalizeRepoPath(rawPath);
    if (normalised === '') return null;
    const path = caseSensitive ? normalised : normalised.toLowerCase();
    const segments = path.split('/');
    const lists: (readonly number[])[] = [];
    const add = (list: readonly number[] | undefined): void => {
      if (list !== undefined && !lists.includes(list)) lists.push(list);
    };
    add(others);
    if (byPrefix.size > 0) {
      for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1)) add(byPrefix.get(path.slice(0, slash)));
      add(byPrefix.get(path));
    }
    for (const seg of segments) {
      if (bySegment.size > 0) add(bySegment.get(seg));
      if (byExt.size > 0) {
        for (let dot = seg.indexOf('.'); dot >= 0; dot = seg.indexOf('.', dot + 1)) add(byExt.get(seg.slice(dot + 1)));
      }
    }
    // Every rule sits in one list, each list ascends: walk them from their ends, highest rule
    // index first, so the first hit is the last matching rule.
    const pos = lists.map((l) => l.length - 1);
    for (;;) {
      let best = -1;
      let from = -1;
      for (let k = 0; k < lists.length; k++) {
        const p = pos[k]!;
        if (p >= 0 && lists[k]![p]! > best) {
          best = lists[k]![p]!;
          from = k;
        }
      }
      if (from < 0) return null;
      pos[from]!--;
      if (compiled[best]!(path)) return rules[best]!;
    }
  };

  return {
    match,
    ownersFor: (path) => match(path)?.owners.slice() ?? [],
  };
}

const cache = { sensitive: new WeakMap<object, CodeownersMatcher>(), insensitive: new WeakMap<object, CodeownersMatcher>() };

/**
 * Owners of `path` (repo-relative; `\` → `/`, leading `./` and `/` stripped) under `rules`: the
 * owners of the last matching rule, [] if none matches or it is owner-less. The compiled form is
 * cached per rules array (treat it as immutable), so calling this in a loop compiles once.
 */
export function ownersFor(rules: readonly CodeownersRule[], path: string, options: CodeownersOptions = {}): string[] {
  const map = options.caseSensitive === true ? cache.sensitive : cache.insensitive;
  let matcher = map.get(rules);
  if (!matcher) {
    matcher = compileCodeowners(rules, options);
    map.set(rules, matcher);
  }
  return matcher.ownersFor(path);
}

function canonicalOwner(owner: string): string {
  return owner.trim().replace(/^@/, '').toLowerCase();
}

/** Whether `query` names one of `owners`: case-insensitive, with or without the leading `@`. */
export function ownerMatches(owners: readonly string[], query: string): boolean {
  const q = canonicalOwner(query);
  if (q === '') return false;
  return owners.some((o) => canonicalOwner(o) === q);
}

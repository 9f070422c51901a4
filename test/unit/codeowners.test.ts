import { describe, expect, it } from 'vitest';
import {
  compileCodeowners,
  isValidOwner,
  ownerMatches,
  ownersFor,
  parseCodeowners,
  type CodeownersRule,
} from '../../src/domain/codeowners.js';
import { compileIgnore, normalizeRepoPath } from '../../client/src/contract/ignore-globs.js';

// The example file from GitHub's "About code owners" documentation.
const GITHUB_EXAMPLE = `# This is a comment.
# Each line is a file pattern followed by one or more owners.

# These owners will be the default owners for everything in
# the repo. Unless a later match takes precedence,
# @global-owner1 and @global-owner2 will be requested for
# review when someone opens a pull request.
*       @global-owner1 @global-owner2

# Order is important; the last matching pattern takes the most
# precedence. When someone opens a pull request that only
# modifies JS files, only @js-owner and not the global
# owner(s) will be requested for a review.
*.js    @js-owner #This is an inline comment.

# You can also use email addresses if you prefer. They'll be
# used to look up users just like we do for commit author
# emails.
*.go docs@example.com

# Teams can be specified as code owners as well. Teams should
# be identified in the format @org/team-name.
*.txt @octo-org/octocats

# In this example, @doctocat owns any files in the build/logs
# directory at the root of the repository and any of its
# subdirectories.
/build/logs/ @doctocat

# The \`docs/*\` pattern will match files like
# \`docs/getting-started.md\` but not further nested files like
# \`docs/build-app/troubleshooting.md\`.
docs/*  docs@example.com

# In this example, @octocat owns any file in an apps directory
# anywhere in your repository.
apps/ @octocat

# In this example, @doctocat owns any file in the \`/docs\`
# directory in the root of your repository and any of its
# subdirectories.
/docs/ @doctocat

# In this example, any change inside the \`/scripts\` directory
# will require approval from @doctocat or @octocat.
/scripts/ @doctocat @octocat

# In this example, @octocat owns any file in a \`/logs\` directory such as
# \`/build/logs\`, \`/scripts/logs\`, and \`/deeply/nested/logs\`.
**/logs @octocat

# @octocat owns /apps except /apps/github, whose owners are left empty.
/apps/ @octocat
/apps/github
`;

function rulesOf(text: string): CodeownersRule[] {
  const parsed = parseCodeowners(text);
  expect(parsed.errors).toEqual([]);
  return parsed.rules;
}

/** Owners under a single-rule file `<pattern> @x`: true when the pattern matches. */
function matches(pattern: string, path: string): boolean {
  return ownersFor(rulesOf(`${pattern} @x`), path, { caseSensitive: true }).length > 0;
}

describe('parseCodeowners', () => {
  it('parses the GitHub documentation example: comments, blanks, inline comments, emails, teams', () => {
    const { rules, errors } = parseCodeowners(GITHUB_EXAMPLE);
    expect(errors).toEqual([]);
    expect(rules.map((r) => r.pattern)).toEqual([
      '*',
      '*.js',
      '*.go',
      '*.txt',
      '/build/logs/',
      'docs/*',
      'apps/',
      '/docs/',
      '/scripts/',
      '**/logs',
      '/apps/',
      '/apps/github',
    ]);
    expect(rules[0]).toEqual({ pattern: '*', owners: ['@global-owner1', '@global-owner2'], line: 8 });
    expect(rules[1]).toEqual({ pattern: '*.js', owners: ['@js-owner'], line: 14 });
    expect(rules[2]!.owners).toEqual(['docs@example.com']);
    expect(rules[3]!.owners).toEqual(['@octo-org/octocats']);
    expect(rules[8]!.owners).toEqual(['@doctocat', '@octocat']);
    expect(rules[11]).toEqual({ pattern: '/apps/github', owners: [], line: GITHUB_EXAMPLE.split('\n').indexOf('/apps/github') + 1 });
  });

  it('reports invalid lines with their line numbers and keeps the valid ones', () => {
    const text = [
      '*.ts @ts-team', // 1
      '!*.md @docs', // 2 negation
      '/src/[ab]/ @x', // 3 character range
      'src/***/x @x', // 4
      '/lib/ not-an-owner', // 5
      '/lib/ @', // 6
      '/lib/ @org/team/extra', // 7
      '/lib/ @-leading-hyphen', // 8
      '/lib/ @ok user@', // 9
      'dangling\\', // 10
      '/ @root', // 11
      '[Section]', // 12 GitLab section header: not GitHub syntax
      '/docs/ @docs-team', // 13
    ].join('\n');
    const { rules, errors } = parseCodeowners(text);
    expect(rules).toEqual([
      { pattern: '*.ts', owners: ['@ts-team'], line: 1 },
      { pattern: '/docs/', owners: ['@docs-team'], line: 13 },
    ]);
    expect(errors.map((e) => e.line)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(errors[0]!.message).toMatch(/not supported/);
    expect(errors[1]!.message).toMatch(/character ranges/);
    expect(errors[3]!.message).toContain('"not-an-owner"');
    expect(errors[7]!.message).toContain('"user@"');
    for (const e of errors) expect(typeof e.message).toBe('string');
  });

  it('never throws, whatever the input', () => {
    const nasty = ['', '\n\n', '\u0000\u0001 @a', '\\', '**** @a', '@a @b', '#', '\\#', 'a\\ b @c', '\t \t', 'x'.repeat(10_000)];
    for (const text of nasty) expect(() => parseCodeowners(text)).not.toThrow();
    expect(parseCodeowners('').rules).toEqual([]);
  });

  it('treats an escaped \\# as a pattern, not a comment', () => {
    const rules = rulesOf('\\#notes.md @notes\n# a real comment @x');
    expect(rules).toEqual([{ pattern: '\\#notes.md', owners: ['@notes'], line: 1 }]);
    expect(ownersFor(rules, '#notes.md')).toEqual(['@notes']);
    expect(ownersFor(rules, 'docs/#notes.md')).toEqual(['@notes']);
  });

  it('keeps escaped blanks inside the pattern', () => {
    const rules = rulesOf('/my\\ docs/ @docs');
    expect(rules[0]!.pattern).toBe('/my\\ docs/');
    expect(ownersFor(rules, 'my docs/a.test.ts')).toEqual(['@docs']);
    expect(ownersFor(rules, 'my/a.test.ts')).toEqual([]);
  });

  it('handles CRLF, a BOM, tabs and duplicate owners', () => {
    const { rules, errors } = parseCodeowners('\uFEFF# c\r\n*.ts\t@a  @b @a\r\n\r\n/x/ @c\r\n');
    expect(errors).toEqual([]);
    expect(rules).toEqual([
      { pattern: '*.ts', owners: ['@a', '@b'], line: 2 },
      { pattern: '/x/', owners: ['@c'], line: 4 },
    ]);
  });

  it('accepts pattern-only lines (un-owning) and a bare inline comment', () => {
    expect(rulesOf('/apps/github\n/vendor/ # nobody owns vendored code')).toEqual([
      { pattern: '/apps/github', owners: [], line: 1 },
      { pattern: '/vendor/', owners: [], line: 2 },
    ]);
  });

  it('validates owners like GitHub', () => {
    for (const ok of ['@octocat', '@octo-org/octocats', '@a', '@user_emu', 'docs@example.com', 'first.last+tag@mail.example.co.uk']) {
      expect(isValidOwner(ok), ok).toBe(true);
    }
    for (const bad of ['octocat', '@', '@/team', '@org/', '@-x', '@a b', 'docs@', 'docs@example', '@org/team/x', '#x']) {
      expect(isValidOwner(bad), bad).toBe(false);
    }
  });
});

describe('ownersFor: GitHub documentation examples', () => {
  it('*.js @js-owner matches JS files at any depth, nothing else', () => {
    const rules = rulesOf('*.js @js-owner');
    expect(ownersFor(rules, 'app.js')).toEqual(['@js-owner']);
    expect(ownersFor(rules, 'src/deep/app.js')).toEqual(['@js-owner']);
    expect(ownersFor(rules, 'src/app.ts')).toEqual([]);
    expect(ownersFor(rules, 'src/app.jsx')).toEqual([]);
  });

  it('/build/logs/ @doctocat: that root directory and its subdirectories', () => {
    const rules = rulesOf('/build/logs/ @doctocat');
    expect(ownersFor(rules, 'build/logs/a.log')).toEqual(['@doctocat']);
    expect(ownersFor(rules, 'build/logs/2024/a.log')).toEqual(['@doctocat']);
    expect(ownersFor(rules, 'src/build/logs/a.log')).toEqual([]);
    expect(ownersFor(rules, 'build/logs')).toEqual([]); // a file named like the directory
  });

  it('docs/* docs@example.com: direct children only', () => {
    const rules = rulesOf('docs/*  docs@example.com');
    expect(ownersFor(rules, 'docs/getting-started.md')).toEqual(['docs@example.com']);
    expect(ownersFor(rules, 'docs/build-app/troubleshooting.md')).toEqual([]);
    expect(ownersFor(rules, 'other/docs/getting-started.md')).toEqual([]);
  });

  it('apps/ @octocat: an apps directory anywhere', () => {
    const rules = rulesOf('apps/ @octocat');
    expect(ownersFor(rules, 'apps/web/a.test.ts')).toEqual(['@octocat']);
    expect(ownersFor(rules, 'services/apps/web/a.test.ts')).toEqual(['@octocat']);
    expect(ownersFor(rules, 'apps')).toEqual([]);
    expect(ownersFor(rules, 'myapps/a.test.ts')).toEqual([]);
  });

  it('/docs/ @doctocat: the root docs directory and everything below', () => {
    const rules = rulesOf('/docs/ @doctocat');
    expect(ownersFor(rules, 'docs/a.md')).toEqual(['@doctocat']);
    expect(ownersFor(rules, 'docs/build-app/troubleshooting.md')).toEqual(['@doctocat']);
    expect(ownersFor(rules, 'src/docs/a.md')).toEqual([]);
  });

  it('**/logs @octocat: any logs directory (and a file named logs)', () => {
    const rules = rulesOf('**/logs @octocat');
    for (const p of ['build/logs/a.txt', 'scripts/logs/a.txt', 'deeply/nested/logs/x/y.txt', 'logs/a.txt', 'a/logs']) {
      expect(ownersFor(rules, p), p).toEqual(['@octocat']);
    }
    expect(ownersFor(rules, 'build/logsx/a.txt')).toEqual([]);
    expect(ownersFor(rules, 'build/catalogs/a.txt')).toEqual([]);
  });

  it('a later rule overrides an earlier one; an owner-less rule un-owns', () => {
    const rules = rulesOf('* @global\n/apps/ @octocat\n/apps/github\n/apps/github/api/ @api-team');
    expect(ownersFor(rules, 'README.md')).toEqual(['@global']);
    expect(ownersFor(rules, 'apps/web/a.test.ts')).toEqual(['@octocat']);
    expect(ownersFor(rules, 'apps/github/a.test.ts')).toEqual([]);
    expect(ownersFor(rules, 'apps/github')).toEqual([]);
    expect(ownersFor(rules, 'apps/github/api/x.test.ts')).toEqual(['@api-team']);
    expect(ownersFor(rules, 'apps/githubber/a.test.ts')).toEqual(['@octocat']);
  });

  it('resolves the whole example file with last-match-wins', () => {
    const rules = rulesOf(GITHUB_EXAMPLE);
    const expected: [string, string[]][] = [
      ['README.md', ['@global-owner1', '@global-owner2']],
      ['src/app.js', ['@js-owner']],
      ['cmd/main.go', ['docs@example.com']],
      ['notes/todo.txt', ['@octo-org/octocats']],
      ['build/logs/out.js', ['@octocat']], // **/logs comes after /build/logs/ and *.js
      ['docs/getting-started.md', ['@doctocat']], // /docs/ comes after docs/*
      ['docs/build-app/troubleshooting.md', ['@doctocat']],
      ['scripts/deploy.sh', ['@doctocat', '@octocat']],
      ['services/apps/x.test.ts', ['@octocat']],
      ['apps/web/x.test.ts', ['@octocat']],
      ['apps/github/x.test.ts', []],
    ];
    for (const [path, owners] of expected) expect(ownersFor(rules, path), path).toEqual(owners);
  });
});

describe('ownersFor: gitignore-style pattern semantics', () => {
  // [pattern, path, matches] — GitHub CODEOWNERS behaviour.
  const table: [string, string, boolean][] = [
    ['foo', 'foo', true],
    ['foo', 'foo.txt', false],
    ['foo', 'foo/bar', true],
    ['foo', 'bar/foo', true],
    ['foo', 'bar/foo/baz', true],
    ['foo', 'bar/foo.txt', false],
    ['/foo', 'foo/bar/baz', true],
    ['/foo', 'bar/foo', false],
    ['/foo', 'fool.txt', false],
    ['foo/', 'foo', false],
    ['foo/', 'bar/foo/baz/qux', true],
    ['/foo/', 'bar/foo/baz', false],
    ['foo/bar', 'foo/bar/baz', true],
    ['foo/bar', 'foo/bart', false],
    ['foo/bar', 'baz/foo/bar', false], // a middle slash anchors
    ['foo/bar/', 'foo/bar', false],
    ['*', 'bar/foo/baz', true],
    ['*', '.github/workflows/ci.yml', true],
    ['f*', 'bar/foo/baz', true],
    ['f*', 'xfoo', false],
    ['/*', 'foo', true],
    ['/*', 'foo/bar', false],
    ['/f*', 'foo/bar/baz', true],
    ['/f*', 'bar/foo', false],
    ['f*/', 'foo', false],
    ['f*/', 'bar/foo/baz', true],
    ['/*/', 'foo', false],
    ['/*/', 'bar/foo/baz', true],
    ['f\\*o', 'foo', false],
    ['f\\*o', 'f*o', true],
    ['foo/*', 'foo/bar', true],
    ['foo/*', 'foo/bar/baz', false],
    ['foo/*.txt', 'foo/bar.txt', true],
    ['foo/*.txt', 'foo/bar/baz.txt', false],
    ['foo/*/baz', 'foo/bar/baz/qux', true],
    ['foo/*/baz', 'foo/baz', false],
    ['f?o', 'foo', true],
    ['f?o', 'fooo', false],
    ['f?o', 'f/o', false],
    ['f\\?o', 'foo', false],
    ['**/foo/bar', 'foo/bar', true],
    ['**/foo/bar', 'qux/foo/bar/baz', true],
    ['**/foo/bar', 'qux/foo/baz/bar', false],
    ['**/*bar*', 'foo/qux/rebar', true],
    ['foo/bar/**', 'foo/bar', false],
    ['foo/bar/**', 'foo/bar/baz/qux', true],
    ['foo/**/bar', 'foo/bar', true],
    ['foo/**/bar', 'foo/qux/quux/bar/baz', true],
    ['foo/**/bar', 'qux/foo/bar', false],
    ['foo/**/', 'foo', false],
    ['foo/**/', 'foo/bar/baz', true],
    ['foo/**/bar/b*', 'foo/qux/bar/baz', true],
    ['foo/**/bar/b*', 'foo/qux/bar/qux', false],
    ['**', 'anything/at/all', true],
    ['*.test.ts', 'src/a.test.ts', true],
    ['*.test.ts', 'src/a.spec.ts', false],
    ['src/**/*.test.ts', 'src/a/b/c.test.ts', true],
    ['src/**/*.test.ts', 'lib/src/c.test.ts', false],
    // Characters with meaning to other glob dialects are literal here.
    ['/src/(group)/a+b.test.ts', 'src/(group)/a+b.test.ts', true],
    ['/src/{a,b}/', 'src/{a,b}/x.ts', true],
    ['/src/{a,b}/', 'src/a/x.ts', false],
    ['/src/@scope/', 'src/@scope/pkg/x.ts', true],
    ['*.t$', 'a.t$', true],
    ['/a.b', 'axb', false],
  ];
  it.each(table)('%s vs %s → %s', (pattern, path, expected) => {
    expect(matches(pattern, path)).toBe(expected);
  });

  it('normalises paths: backslashes, leading ./ and /', () => {
    const rules = rulesOf('/apps/ @octocat');
    for (const p of ['apps/x.test.ts', './apps/x.test.ts', '/apps/x.test.ts', 'apps\\x.test.ts', '.\\apps\\x.test.ts', '  apps//x.test.ts ']) {
      expect(ownersFor(rules, p), p).toEqual(['@octocat']);
    }
    expect(ownersFor(rules, '')).toEqual([]);
    expect(normalizeRepoPath('.\\.\\a\\b.ts')).toBe('a/b.ts');
  });

  it('matches case-insensitively by default (identities fold case), exactly with caseSensitive', () => {
    const rules = rulesOf('/src/Payments/ @pay\n*.Test.ts @tests');
    expect(ownersFor(rules, 'src/payments/a.ts')).toEqual(['@pay']);
    expect(ownersFor(rules, 'SRC/PAYMENTS/a.ts')).toEqual(['@pay']);
    expect(ownersFor(rules, 'lib/a.test.ts')).toEqual(['@tests']);
    expect(ownersFor(rules, 'src/payments/a.ts', { caseSensitive: true })).toEqual([]);
    expect(ownersFor(rules, 'src/Payments/a.ts', { caseSensitive: true })).toEqual(['@pay']);
    expect(ownersFor(rules, 'lib/a.test.ts', { caseSensitive: true })).toEqual([]);
  });

  it('compileCodeowners exposes the matching rule and rejects an invalid hand-made rule', () => {
    const rules = rulesOf('* @all\n/src/ @src');
    const m = compileCodeowners(rules);
    expect(m.match('src/a.ts')).toBe(rules[1]);
    expect(m.match('a.ts')).toBe(rules[0]);
    expect(m.ownersFor('src/a.ts')).toEqual(['@src']);
    expect(() => compileCodeowners([{ pattern: '!x', owners: [], line: 7 }])).toThrow(/line 7/);
  });

  it('returns a copy: callers cannot corrupt the rules', () => {
    const rules = rulesOf('* @a');
    ownersFor(rules, 'x').push('@evil');
    expect(ownersFor(rules, 'x')).toEqual(['@a']);
  });

  it('agrees with a plain last-match scan when rules of every index kind mix', () => {
    const rules = rulesOf(
      [
        '* @all',
        '*.test.ts @tests',
        '/src/ @src',
        'fixtures/ @fx',
        '/src/api/*.test.ts @api-tests',
        '**/e2e/**/*.ts @e2e',
        '*.spec.* @spec',
        '/src/api/ @api',
        'legacy @legacy',
        '/src/api/v1/ ',
        '/*.md @docs',
      ].join('\n'),
    );
    const paths = [
      'readme.md',
      'docs/readme.md',
      'src/a.ts',
      'src/a.test.ts',
      'lib/a.test.ts',
      'src/api/a.test.ts',
      'src/api/a.ts',
      'src/api/v1/a.ts',
      'src/fixtures/a.ts',
      'test/e2e/flows/login.ts',
      'e2e/login.ts',
      'a.spec.js',
      'src/legacy/x.ts',
      'legacy',
    ];
    // Each rule alone (given an owner, so owner-less rules show their matches too), last one wins.
    const matchesAlone = (r: CodeownersRule, path: string): boolean => ownersFor([{ ...r, owners: ['@probe'] }], path).length > 0;
    for (const path of paths) {
      const last = [...rules].reverse().find((r) => matchesAlone(r, path));
      expect(ownersFor(rules, path), path).toEqual(last?.owners ?? []);
    }
  });

  // Resolution speed (~150 ms for this load) is a benchmark number, not asserted here.
  it('resolves 50,000 paths against 500 rules', () => {
    const lines: string[] = [];
    for (let i = 0; i < 500; i++) {
      const k = i % 5;
      if (k === 0) lines.push(`*.t${i}.ts @team${i}`);
      else if (k === 1) lines.push(`**/mod${i}/ @org/t${i}`);
      else if (k === 2) lines.push(`/src/pkg${i}/**/*.test.ts @u${i}`);
      else lines.push(`/pkg${i % 40}/sub${i}/ @u${i}`);
    }
    const rules = rulesOf(lines.join('\n'));
    const paths = Array.from({ length: 50_000 }, (_, i) =>
      i % 2 ? `pkg${i % 50}/sub${i % 600}/deep/mod${i % 700}/file${i}.t${i % 550}.ts` : `src/pkg${i % 600}/a/b/c${i}.test.ts`,
    );
    let owned = 0;
    for (const p of paths) if (ownersFor(rules, p).length > 0) owned++;
    expect(owned).toBeGreaterThan(10_000);
  });
});

describe('ownerMatches', () => {
  const owners = ['@Octocat', '@octo-org/Octocats', 'Docs@Example.com'];
  it('is case-insensitive, with or without @', () => {
    expect(ownerMatches(owners, 'octocat')).toBe(true);
    expect(ownerMatches(owners, '@OCTOCAT')).toBe(true);
    expect(ownerMatches(owners, 'octo-org/octocats')).toBe(true);
    expect(ownerMatches(owners, '@octo-org/octocats')).toBe(true);
    expect(ownerMatches(owners, 'docs@example.com')).toBe(true);
    expect(ownerMatches(owners, ' @octocat ')).toBe(true);
  });
  it('needs the whole owner', () => {
    expect(ownerMatches(owners, 'octo')).toBe(false);
    expect(ownerMatches(owners, 'octo-org')).toBe(false);
    expect(ownerMatches(owners, '')).toBe(false);
    expect(ownerMatches(owners, '@')).toBe(false);
    expect(ownerMatches([], 'octocat')).toBe(false);
  });
});

describe('compileIgnore (service.yml ignore, picomatch semantics)', () => {
  it('ignores what the globs match', () => {
    const ignored = compileIgnore(['e2e/legacy/**', '**/*.snap.test.ts']);
    expect(ignored('e2e/legacy/login.test.ts')).toBe(true);
    expect(ignored('e2e/legacy/deep/x/login.test.ts')).toBe(true);
    expect(ignored('e2e/modern/login.test.ts')).toBe(false);
    expect(ignored('src/legacy/e2e/legacy/x.ts')).toBe(false); // globs are rooted
    expect(ignored('button.snap.test.ts')).toBe(true);
    expect(ignored('src/ui/button.snap.test.ts')).toBe(true);
    expect(ignored('src/ui/button.test.ts')).toBe(false);
  });

  it('normalises paths like identity does (separators, ./, /, case)', () => {
    const ignored = compileIgnore(['e2e/legacy/**']);
    expect(ignored('.\\e2e\\legacy\\a.test.ts')).toBe(true);
    expect(ignored('/e2e/legacy/a.test.ts')).toBe(true);
    expect(ignored('./E2E/Legacy/a.test.ts')).toBe(true);
    expect(compileIgnore(['e2e/legacy/**'], { caseSensitive: true })('E2E/legacy/a.test.ts')).toBe(false);
  });

  it('slash-less globs match the file name at any depth; a trailing / means the directory', () => {
    const ignored = compileIgnore(['*.snap.test.ts', 'vendor/', './fixtures/**']);
    expect(ignored('a/b/c.snap.test.ts')).toBe(true);
    expect(ignored('vendor/x/y.test.ts')).toBe(true);
    expect(ignored('src/vendor/y.test.ts')).toBe(false);
    expect(ignored('fixtures/a.test.ts')).toBe(true);
  });

  it('supports picomatch syntax: *, ?, **, braces, dotfiles, escapes', () => {
    const ignored = compileIgnore(['src/*/gen-?.test.ts', '{a,b}/**', '.cache/**', '**/\\[id\\].test.ts']);
    expect(ignored('src/x/gen-1.test.ts')).toBe(true);
    expect(ignored('src/x/y/gen-1.test.ts')).toBe(false);
    expect(ignored('src/x/gen-12.test.ts')).toBe(false);
    expect(ignored('a/t.test.ts')).toBe(true);
    expect(ignored('b/t.test.ts')).toBe(true);
    expect(ignored('c/t.test.ts')).toBe(false);
    expect(ignored('.cache/t.test.ts')).toBe(true);
    expect(ignored('pages/[id].test.ts')).toBe(true);
    expect(ignored('pages/i.test.ts')).toBe(false);
  });

  it('a later !glob re-includes (last match wins)', () => {
    const ignored = compileIgnore(['e2e/**', '!e2e/smoke/**', 'e2e/smoke/slow-*.test.ts']);
    expect(ignored('e2e/a.test.ts')).toBe(true);
    expect(ignored('e2e/smoke/a.test.ts')).toBe(false);
    expect(ignored('e2e/smoke/slow-a.test.ts')).toBe(true);
    expect(ignored('src/a.test.ts')).toBe(false);
  });

  it('an empty list or blank globs ignore nothing', () => {
    expect(compileIgnore([])('a.test.ts')).toBe(false);
    expect(compileIgnore(['', '  '])('a.test.ts')).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import {
  PresenceIndex,
  RENAME_MIN_JACCARD,
  candidateIndex,
  contradictedAliases,
  isKnownCommit,
  presentIn,
  RENAME_MIN_MARGIN,
  resolveIdentity,
  titleTokens,
  tokenJaccard,
  type IncomingTest,
  type KnownIdentity,
} from '../../src/domain/stitch.js';

const NONE: ReadonlySet<string> = new Set();

function known(id: string, overrides: Partial<KnownIdentity> = {}): KnownIdentity {
  return { id, filePath: 'src/cart.test.ts', suite: 'cart', title: 'adds an item', paramsHash: '', ...overrides };
}

function incoming(overrides: Partial<IncomingTest> = {}): IncomingTest {
  return { filePath: 'src/cart.test.ts', suite: 'cart', title: 'adds an item', paramsHash: '', ...overrides };
}

describe('titleTokens', () => {
  it('lowercases and splits words, camelCase, PascalCase, snake_case, kebab-case and punctuation', () => {
    expect(titleTokens('Adds an item')).toEqual(['adds', 'an', 'item']);
    expect(titleTokens('addsItemToCart')).toEqual(['adds', 'item', 'to', 'cart']);
    expect(titleTokens('parseHTTPResponse_whenEmpty')).toEqual(['parse', 'http', 'response', 'when', 'empty']);
    expect(titleTokens('should-handle: 404 errors (v2)!')).toEqual(['should', 'handle', '404', 'errors', 'v2']);
    expect(titleTokens('test_utf8_decoding')).toEqual(['test', 'utf8', 'decoding']);
    expect(titleTokens('CartService › applies a coupon')).toEqual(['cart', 'service', 'applies', 'a', 'coupon']);
    expect(titleTokens('größe prüfen')).toEqual(['größe', 'prüfen']);
  });
  it('gives nothing for titles without words', () => {
    expect(titleTokens('')).toEqual([]);
    expect(titleTokens('  --- !!! ')).toEqual([]);
  });
});

describe('tokenJaccard', () => {
  it('is |A∩B| / |A∪B| over sets', () => {
    expect(tokenJaccard(['a', 'b', 'c'], ['a', 'b', 'c'])).toBe(1);
    expect(tokenJaccard(['a', 'b', 'c'], ['a', 'b', 'd'])).toBe(0.5);
    expect(tokenJaccard(['a', 'b'], ['c'])).toBe(0);
    expect(tokenJaccard(['a', 'a', 'b'], ['a', 'b', 'b'])).toBe(1);
    expect(tokenJaccard(['a', 'b', 'c', 'd'], ['a', 'b'])).toBe(0.5);
  });
  it('is symmetric', () => {
    const a = titleTokens('adds an item to the cart');
    const b = titleTokens('adds item to cart quickly');
    expect(tokenJaccard(a, b)).toBe(tokenJaccard(b, a));
  });
  it('is 0 when either side is empty (no evidence)', () => {
    expect(tokenJaccard([], [])).toBe(0);
    expect(tokenJaccard(['a'], [])).toBe(0);
  });
});

describe('resolveIdentity: exact', () => {
  it('uses the exact fingerprint/alias id', () => {
    expect(resolveIdentity(incoming(), 'id-exact', [], NONE)).toEqual({ kind: 'exact', id: 'id-exact' });
  });

  it('exact wins over moved and renamed', () => {
    const candidates = [
      known('id-moved', { filePath: 'src/old/cart.test.ts' }),
      known('id-renamed', { title: 'adds one item' }),
    ];
    expect(resolveIdentity(incoming(), 'id-exact', candidates, NONE)).toEqual({ kind: 'exact', id: 'id-exact' });
  });

  it('recognises a candidate with the identical key as exact (path normalised, suite/title trimmed)', () => {
    const candidates = [known('id-moved', { filePath: 'src/old/cart.test.ts' }), known('id-same')];
    const test = incoming({ filePath: '.\\SRC\\Cart.test.ts', suite: ' cart ', title: 'adds an item  ' });
    expect(resolveIdentity(test, null, candidates, NONE)).toEqual({ kind: 'exact', id: 'id-same' });
  });
});

describe('resolveIdentity: moved', () => {
  it('detects the same suite+title+params in another file', () => {
    const from = known('id-old', { filePath: 'src/legacy/cart.test.ts' });
    expect(resolveIdentity(incoming(), null, [from], NONE)).toEqual({ kind: 'moved', id: 'id-old', from });
  });

  it('compares the incoming path normalised', () => {
    const from = known('id-old', { filePath: 'src/legacy/cart.test.ts' });
    expect(resolveIdentity(incoming({ filePath: './Src/New/Cart.test.ts' }), null, [from], NONE)).toMatchObject({ kind: 'moved', id: 'id-old' });
    // Same file after normalisation: that is the exact identity, not a move.
    expect(resolveIdentity(incoming({ filePath: 'SRC\\legacy\\cart.test.ts' }), null, [from], NONE)).toEqual({ kind: 'exact', id: 'id-old' });
  });

  it('is blocked when the source still runs in this batch (a copy, not a move)', () => {
    const from = known('id-old', { filePath: 'src/legacy/cart.test.ts' });
    expect(resolveIdentity(incoming(), null, [from], new Set(['id-old']))).toEqual({ kind: 'new' });
  });

  it('skips a present source but still takes another absent one', () => {
    const present = known('id-present', { filePath: 'src/a/cart.test.ts' });
    const gone = known('id-gone', { filePath: 'lib/other.test.ts' });
    expect(resolveIdentity(incoming(), null, [present, gone], new Set(['id-present']))).toEqual({ kind: 'moved', id: 'id-gone', from: gone });
  });

  it('prefers the longest common path suffix, then the lexically lowest id', () => {
    const far = known('id-a', { filePath: 'lib/checkout.test.ts' });
    const near = known('id-z', { filePath: 'old/cart.test.ts' });
    const nearer = known('id-y', { filePath: 'legacy/src/cart.test.ts' });
    const test = incoming({ filePath: 'packages/shop/src/cart.test.ts' });
    expect(resolveIdentity(test, null, [far, near, nearer], NONE)).toMatchObject({ kind: 'moved', id: 'id-y' });
    expect(resolveIdentity(test, null, [far, near], NONE)).toMatchObject({ kind: 'moved', id: 'id-z' });
    const twin = known('id-b', { filePath: 'other/cart.test.ts' });
    expect(resolveIdentity(test, null, [near, twin], NONE)).toMatchObject({ kind: 'moved', id: 'id-b' });
    expect(resolveIdentity(test, null, [twin, near], NONE)).toMatchObject({ kind: 'moved', id: 'id-b' });
  });

  it('moved wins over renamed', () => {
    const moved = known('id-moved', { filePath: 'src/old/cart.test.ts' });
    const renamed = known('id-renamed', { title: 'adds an item quickly' });
    expect(resolveIdentity(incoming(), null, [renamed, moved], NONE)).toMatchObject({ kind: 'moved', id: 'id-moved' });
  });

  it('needs the same suite and title (trimmed, case-sensitive)', () => {
    expect(resolveIdentity(incoming(), null, [known('x', { filePath: 'b.test.ts', suite: 'checkout' })], NONE)).toEqual({ kind: 'new' });
    expect(resolveIdentity(incoming(), null, [known('x', { filePath: 'b.test.ts', title: 'Adds an item' })], NONE)).toEqual({ kind: 'new' });
    expect(resolveIdentity(incoming({ suite: 'cart ', title: ' adds an item' }), null, [known('x', { filePath: 'b.test.ts' })], NONE)).toMatchObject({
      kind: 'moved',
      id: 'x',
    });
  });
});

describe('resolveIdentity: renamed', () => {
  it('stitches a similar title in the same file+suite with the Jaccard as confidence', () => {
    const from = known('id-old', { title: 'adds item to the cart' });
    const r = resolveIdentity(incoming({ title: 'adds an item to the cart' }), null, [from], NONE);
    expect(r).toEqual({ kind: 'renamed', id: 'id-old', from, confidence: 5 / 6 });
  });

  it('treats case and word-joining changes as the same words (confidence 1)', () => {
    const from = known('id-old', { title: 'addsItemToCart' });
    expect(resolveIdentity(incoming({ title: 'Adds item to cart' }), null, [from], NONE)).toMatchObject({ kind: 'renamed', id: 'id-old', confidence: 1 });
  });

  it('accepts a Jaccard of exactly 0.5 and rejects anything below', () => {
    const from = known('id-old', { title: 'handles empty cart' });
    expect(resolveIdentity(incoming({ title: 'handles full cart' }), null, [from], NONE)).toMatchObject({ kind: 'renamed', confidence: 0.5 });
    // {handles, full, cart, quickly} vs {handles, empty, cart}: 2/5
    expect(resolveIdentity(incoming({ title: 'handles full cart quickly' }), null, [from], NONE)).toEqual({ kind: 'new' });
    expect(resolveIdentity(incoming({ title: 'removes a coupon' }), null, [from], NONE)).toEqual({ kind: 'new' });
  });

  it('rejects an ambiguous rename: two candidates within 0.2', () => {
    const a = known('id-a', { title: 'adds item to cart' }); // 4/5 = 0.8
    const b = known('id-b', { title: 'adds item to cart slowly' }); // 4/6 ≈ 0.67
    expect(resolveIdentity(incoming({ title: 'adds item to cart fast' }), null, [a, b], NONE)).toEqual({ kind: 'new' });
    // Equal best scores are ambiguous too.
    const c = known('id-c', { title: 'adds item to cart quickly' });
    expect(resolveIdentity(incoming({ title: 'adds item to cart fast' }), null, [b, c], NONE)).toEqual({ kind: 'new' });
  });

  it('accepts a margin of exactly 0.2 (float-safe) and picks the best', () => {
    const best = known('id-best', { title: 'alpha beta gamma epsilon' }); // 3/5 = 0.6
    const runnerUp = known('id-2nd', { title: 'alpha beta zeta' }); // 2/5 = 0.4
    const r = resolveIdentity(incoming({ title: 'alpha beta gamma delta' }), null, [runnerUp, best], NONE);
    expect(r).toEqual({ kind: 'renamed', id: 'id-best', from: best, confidence: 0.6 });
    expect(RENAME_MIN_JACCARD).toBe(0.5);
    expect(RENAME_MIN_MARGIN).toBe(0.2);
  });

  it('is not a rename when the old identity still runs in this batch', () => {
    const from = known('id-old', { title: 'adds item to the cart' });
    expect(resolveIdentity(incoming({ title: 'adds an item to the cart' }), null, [from], new Set(['id-old']))).toEqual({ kind: 'new' });
  });

  it('a present closest title blocks the rename even if a weaker absent one qualifies alone', () => {
    const present = known('id-present', { title: 'adds an item to the cart now' }); // 6/7
    const absent = known('id-absent', { title: 'adds item to cart' }); // 4/6
    const test = incoming({ title: 'adds an item to the cart' });
    expect(resolveIdentity(test, null, [present, absent], new Set(['id-present']))).toEqual({ kind: 'new' });
    expect(resolveIdentity(test, null, [absent], NONE)).toMatchObject({ kind: 'renamed', id: 'id-absent' });
  });

  it('needs the same file and suite', () => {
    const otherFile = known('x', { filePath: 'src/other.test.ts', title: 'adds item to the cart' });
    const otherSuite = known('y', { suite: 'checkout', title: 'adds item to the cart' });
    expect(resolveIdentity(incoming({ title: 'adds an item to the cart' }), null, [otherFile, otherSuite], NONE)).toEqual({ kind: 'new' });
  });
});

describe('resolveIdentity: parameterised tests and new', () => {
  it('never stitches variants with different params hashes', () => {
    const test = incoming({ paramsHash: 'aaaaaaaaaaaaaaaa' });
    // Same title in another file, other params: not a move.
    expect(resolveIdentity(test, null, [known('m', { filePath: 'old/cart.test.ts', paramsHash: 'bbbbbbbbbbbbbbbb' })], NONE)).toEqual({ kind: 'new' });
    // Sibling variant in the same file with the very same title: not exact, not a rename.
    expect(resolveIdentity(test, null, [known('s', { paramsHash: 'bbbbbbbbbbbbbbbb' })], NONE)).toEqual({ kind: 'new' });
    // Similar title, other params: not a rename.
    expect(resolveIdentity(test, null, [known('r', { title: 'adds an item quickly', paramsHash: '' })], NONE)).toEqual({ kind: 'new' });
  });

  it('stitches a parameterised variant to its own earlier self', () => {
    const p = 'aaaaaaaaaaaaaaaa';
    const candidates = [known('v-b', { filePath: 'old/cart.test.ts', paramsHash: 'bbbbbbbbbbbbbbbb' }), known('v-a', { filePath: 'old/cart.test.ts', paramsHash: p })];
    expect(resolveIdentity(incoming({ paramsHash: p }), null, candidates, NONE)).toMatchObject({ kind: 'moved', id: 'v-a' });
  });

  it('is new with no candidates, or none that qualify', () => {
    expect(resolveIdentity(incoming(), null, [], NONE)).toEqual({ kind: 'new' });
    expect(resolveIdentity(incoming(), '', [], NONE)).toEqual({ kind: 'new' });
    expect(resolveIdentity(incoming({ title: '!!!' }), null, [known('x', { title: '???' })], NONE)).toEqual({ kind: 'new' });
  });
});

describe('candidateIndex', () => {
  const known = (id: string, filePath: string, suite: string, title: string, paramsHash = ''): KnownIdentity => ({ id, filePath, suite, title, paramsHash });

  it('gives each incoming test the candidates resolveIdentity would consider, in list order', () => {
    const list = [
      known('a', 'src/a.test.ts', 'S', 'adds numbers'),
      known('b', 'src/b.test.ts', 'S', 'adds numbers'),
      known('c', 'src/a.test.ts', 'S', 'subtracts numbers'),
      known('d', 'src/a.test.ts', 'T', 'adds numbers'),
      known('e', 'src/z.test.ts', 'S', 'other'),
    ];
    const forTest = candidateIndex(list);
    expect(forTest({ filePath: './src/a.test.ts', suite: ' S ', title: 'adds numbers', paramsHash: '' }).map((c) => c.id)).toEqual(['a', 'b', 'c']);
    expect(forTest({ filePath: 'src/new.test.ts', suite: 'S', title: 'adds numbers', paramsHash: '' }).map((c) => c.id)).toEqual(['a', 'b']);
    expect(forTest({ filePath: 'src/a.test.ts', suite: 'S', title: 'adds numbers', paramsHash: 'p1' })).toEqual([]);
  });

  it('resolves exactly as the full list does', () => {
    const list: KnownIdentity[] = [];
    for (let i = 0; i < 300; i++) list.push(known(`id${String(i).padStart(3, '0')}`, `src/f${i % 7}.test.ts`, `S${i % 3}`, `case ${i % 50} works`));
    const forTest = candidateIndex(list);
    const incoming = [
      { filePath: 'src/f1.test.ts', suite: 'S1', title: 'case 1 works', paramsHash: '' },
      { filePath: 'lib/f1.test.ts', suite: 'S1', title: 'case 1 works', paramsHash: '' },
      { filePath: 'src/f2.test.ts', suite: 'S2', title: 'case 2 works well', paramsHash: '' },
      { filePath: 'src/f9.test.ts', suite: 'S0', title: 'nothing like it', paramsHash: '' },
    ];
    for (const t of incoming) expect(resolveIdentity(t, null, forTest(t), new Set())).toEqual(resolveIdentity(t, null, list, new Set()));
  });
});

describe('tests seen together in one run or commit', () => {
  const SHA = 'abcdef1234';
  const OTHER_SHA = '1234abcdef';
  const PLACEHOLDER = '0000000';
  const renamedFrom = known('id-old', { title: 'adds an item' });
  const movedFrom = known('id-old', { filePath: 'src/legacy/cart.test.ts' });
  const rename = incoming({ title: 'adds an items' });

  it('knows a commit only when the sha is neither empty nor all zeros', () => {
    expect(isKnownCommit(SHA)).toBe(true);
    expect(isKnownCommit('0000000000000000000000000000000000000001')).toBe(true);
    expect(isKnownCommit(PLACEHOLDER)).toBe(false);
    expect(isKnownCommit('0000000000000000000000000000000000000000')).toBe(false);
    expect(isKnownCommit('')).toBe(false);
  });

  it('indexes identities by run and by known commit, never by the placeholder', () => {
    const index = new PresenceIndex();
    expect(index.isEmpty).toBe(true);
    index.add('a', { runId: 'r1', commitSha: SHA });
    index.add('b', { runId: 'r2', commitSha: PLACEHOLDER });
    expect(index.isEmpty).toBe(false);
    // Same commit, another run (another shard): present.
    expect(index.has('a', { runId: 'r9', commitSha: SHA })).toBe(true);
    // Same run, whatever the commit says.
    expect(index.has('a', { runId: 'r1', commitSha: OTHER_SHA })).toBe(true);
    expect(index.has('a', { runId: 'r9', commitSha: OTHER_SHA })).toBe(false);
    // Two runs without a commit are not the same commit.
    expect(index.has('b', { runId: 'r3', commitSha: PLACEHOLDER })).toBe(false);
    expect(index.has('b', { runId: 'r2', commitSha: PLACEHOLDER })).toBe(true);
    expect(index.has('b', { runId: 'r3', commitSha: '' })).toBe(false);
  });

  it('blocks a rename and a move from an identity that ran on the same commit in another shard', () => {
    const ranBefore = new PresenceIndex();
    ranBefore.add('id-old', { runId: 'shard-1', commitSha: SHA });
    const shard2 = presentIn(new Set(), ranBefore, [{ runId: 'shard-2', commitSha: SHA }]);
    expect(resolveIdentity(rename, null, [renamedFrom], shard2)).toEqual({ kind: 'new' });
    expect(resolveIdentity(incoming(), null, [movedFrom], shard2)).toEqual({ kind: 'new' });
    // The same history on an earlier commit: a real rename / move.
    const nextCommit = presentIn(new Set(), ranBefore, [{ runId: 'run-2', commitSha: OTHER_SHA }]);
    expect(resolveIdentity(rename, null, [renamedFrom], nextCommit)).toMatchObject({ kind: 'renamed', id: 'id-old', confidence: 0.5 });
    expect(resolveIdentity(incoming(), null, [movedFrom], nextCommit)).toMatchObject({ kind: 'moved', id: 'id-old' });
  });

  it('counts any of the runs the new test ran in, and the lease set as it grows', () => {
    const ranBefore = new PresenceIndex();
    ranBefore.add('id-old', { runId: 'r1', commitSha: SHA });
    const runs = [
      { runId: 'r2', commitSha: OTHER_SHA },
      { runId: 'r3', commitSha: SHA },
    ];
    expect(resolveIdentity(rename, null, [renamedFrom], presentIn(new Set(), ranBefore, runs))).toEqual({ kind: 'new' });
    const inLease = new Set<string>();
    const present = presentIn(inLease, new PresenceIndex(), runs);
    expect(present.has('id-old')).toBe(false);
    inLease.add('id-old');
    expect(present.has('id-old')).toBe(true);
    expect(resolveIdentity(rename, null, [renamedFrom], present)).toEqual({ kind: 'new' });
  });

  it('does not treat two runs on the placeholder commit as the same commit', () => {
    const ranBefore = new PresenceIndex();
    ranBefore.add('id-old', { runId: 'r1', commitSha: PLACEHOLDER });
    const other = presentIn(new Set(), ranBefore, [{ runId: 'r2', commitSha: PLACEHOLDER }]);
    expect(resolveIdentity(rename, null, [renamedFrom], other)).toMatchObject({ kind: 'renamed', id: 'id-old' });
    const sameRun = presentIn(new Set(), ranBefore, [{ runId: 'r1', commitSha: PLACEHOLDER }]);
    expect(resolveIdentity(rename, null, [renamedFrom], sameRun)).toEqual({ kind: 'new' });
  });

  it('finds the aliases whose fingerprint ran with their identity\'s own fingerprint', () => {
    const own = new PresenceIndex();
    own.add('id-a', { runId: 'shard-2', commitSha: SHA });
    own.add('id-b', { runId: 'run-x', commitSha: PLACEHOLDER });
    const revoked = contradictedAliases(own, [
      // Stitched from shard 1 of the same commit: contradicted.
      { fingerprint: 'fp-new-a', testId: 'id-a', where: { runId: 'shard-1', commitSha: SHA } },
      // A rename on an earlier commit: kept.
      { fingerprint: 'fp-renamed-a', testId: 'id-a', where: { runId: 'run-0', commitSha: OTHER_SHA } },
      // Same commit, but the alias belongs to another identity: kept.
      { fingerprint: 'fp-c', testId: 'id-c', where: { runId: 'shard-1', commitSha: SHA } },
      // Placeholder commits: only the same run counts.
      { fingerprint: 'fp-b-other-run', testId: 'id-b', where: { runId: 'run-y', commitSha: PLACEHOLDER } },
      { fingerprint: 'fp-b-same-run', testId: 'id-b', where: { runId: 'run-x', commitSha: PLACEHOLDER } },
    ]);
    expect([...revoked]).toEqual([
      ['fp-new-a', 'id-a'],
      ['fp-b-same-run', 'id-b'],
    ]);
    expect(contradictedAliases(new PresenceIndex(), [{ fingerprint: 'f', testId: 'id-a', where: { runId: 'shard-1', commitSha: SHA } }])).toEqual(new Map());
  });
});

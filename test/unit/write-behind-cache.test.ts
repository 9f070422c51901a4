// The scoring processor's state cache (WriteBehindCache): bounded, resistant to projects larger
// than it, and never forgetting a state with unwritten clean runs without handing it back.
import { describe, expect, it } from 'vitest';
import { WriteBehindCache } from '../../src/domain/write-behind-cache.js';

const IDLE = 1_000;
interface State {
  testId: string;
  version: number;
}
const state = (testId: string, version = 1): State => ({ testId, version });
const keys = (c: WriteBehindCache<State>, ks: string[]): (string | undefined)[] => ks.map((k) => c.peek(k)?.record.testId);

describe('WriteBehindCache', () => {
  it('keeps at most max states and refuses newcomers while the oldest is recent', () => {
    const c = new WriteBehindCache<State>(2, IDLE);
    c.set('a', state('a'), 0, 0);
    c.set('b', state('b'), 0, 10);
    expect(c.wouldKeep('c', 20)).toBe(false);
    c.set('c', state('c'), 0, 20);
    expect(c.size).toBe(2);
    expect(keys(c, ['a', 'b', 'c'])).toEqual(['a', 'b', undefined]);
    // A state already kept is always updated in place.
    expect(c.wouldKeep('a', 30)).toBe(true);
    c.set('a', state('a', 2), 3, 30);
    expect(c.peek('a')).toMatchObject({ dirty: 3, record: { version: 2 } });
  });

  it('keeps a share of a project larger than it across runs that visit every test in order', () => {
    const c = new WriteBehindCache<State>(100, IDLE);
    const tests = Array.from({ length: 300 }, (_, i) => `t${i}`);
    let hits = 0;
    for (let run = 0; run < 3; run++) {
      for (const [i, k] of tests.entries()) {
        const now = run * 100 + i / 10;
        if (run > 0 && c.peek(k)) hits++;
        c.set(k, state(k), 0, now);
      }
    }
    // A least-recently-used cache would hit nothing here: each test is forgotten just before its turn.
    expect(hits).toBe(200);
  });

  it('gives the oldest place to a newcomer once that state has been idle', () => {
    const c = new WriteBehindCache<State>(2, IDLE);
    c.set('a', state('a'), 0, 0);
    c.set('b', state('b'), 0, 500);
    expect(c.wouldKeep('c', IDLE)).toBe(true);
    c.set('c', state('c'), 0, IDLE);
    expect(keys(c, ['a', 'b', 'c'])).toEqual([undefined, 'b', 'c']);
    expect([...c.unwrittenEntries()]).toEqual([]);
  });

  it('hands back a state let go with unwritten clean runs until it is set again', () => {
    const c = new WriteBehindCache<State>(1, IDLE);
    c.set('a', state('a'), 4, 0);
    c.set('b', state('b'), 0, IDLE);
    // a was evicted holding 4 clean runs: still readable, and listed to be written.
    expect(c.peek('a')).toMatchObject({ dirty: 4 });
    expect([...c.unwrittenEntries()].map(([k]) => k)).toEqual(['a']);
    expect([...c.dirtyEntries()]).toEqual([]);
    // Written by the next lease (set with dirty 0, not kept: b is recent): gone from both.
    c.set('a', state('a', 2), 0, IDLE + 1);
    expect(c.peek('a')).toBeUndefined();
    expect([...c.unwrittenEntries()]).toEqual([]);
  });

  it('hands back a newcomer it cannot keep that holds unwritten clean runs', () => {
    const c = new WriteBehindCache<State>(1, IDLE);
    c.set('a', state('a'), 0, 0);
    c.set('b', state('b'), 2, 1);
    expect(c.size).toBe(1);
    expect([...c.unwrittenEntries()].map(([k]) => k)).toEqual(['b']);
    expect(c.peek('b')).toMatchObject({ dirty: 2 });
  });

  it('marks a flushed record written without refreshing its place or age', () => {
    const c = new WriteBehindCache<State>(2, IDLE);
    c.set('a', state('a'), 3, 0);
    c.set('b', state('b'), 0, 500);
    expect([...c.dirtyEntries()].map(([k]) => k)).toEqual(['a']);
    // The periodic flush wrote a: clean now, and still the oldest, so still idle at IDLE.
    c.written('a');
    expect(c.peek('a')).toMatchObject({ dirty: 0 });
    expect([...c.dirtyEntries()]).toEqual([]);
    c.set('c', state('c'), 0, IDLE);
    expect(keys(c, ['a', 'b', 'c'])).toEqual([undefined, 'b', 'c']);
    // Nothing unwritten was let go: a was clean.
    expect([...c.unwrittenEntries()]).toEqual([]);
  });

  it('forgets a let-go record once it is written', () => {
    const c = new WriteBehindCache<State>(1, IDLE);
    c.set('a', state('a'), 2, 0);
    c.set('b', state('b'), 0, IDLE);
    expect([...c.unwrittenEntries()].map(([k]) => k)).toEqual(['a']);
    c.written('a');
    expect([...c.unwrittenEntries()]).toEqual([]);
    expect(c.peek('a')).toBeUndefined();
    expect(keys(c, ['b'])).toEqual(['b']);
  });

  it('keeps nothing at size 0', () => {
    const c = new WriteBehindCache<State>(0, IDLE);
    expect(c.wouldKeep('a', 0)).toBe(false);
    c.set('a', state('a'), 0, 0);
    expect(c.peek('a')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  describe('with packing', () => {
    const packed = (hot: number): { cache: WriteBehindCache<State>; unpacked: () => number } => {
      let unpacks = 0;
      const cache = new WriteBehindCache<State>(4, IDLE, {
        hot,
        pack: (r) => JSON.stringify(r),
        unpack: (text) => {
          unpacks++;
          return JSON.parse(text) as State;
        },
      });
      return { cache, unpacked: () => unpacks };
    };

    it('keeps only the most recently set as objects and gives the others back equal', () => {
      const { cache, unpacked } = packed(2);
      const a = state('a');
      cache.set('a', a, 1, 0);
      cache.set('b', state('b'), 0, 10);
      expect(cache.packedSize).toBe(0);
      expect(cache.peek('a')!.record).toBe(a);
      cache.set('c', state('c'), 0, 20);
      expect([cache.size, cache.packedSize]).toEqual([3, 1]);
      // a is packed now: an equal copy, its dirty count read without unpacking it.
      expect(cache.dirtyOf('a')).toBe(1);
      expect(unpacked()).toBe(0);
      expect(cache.peek('a')).toEqual({ record: a, dirty: 1 });
      expect(cache.peek('a')!.record).not.toBe(a);
      // Set again, it is an object again, and the oldest object (b) is packed in its place.
      cache.set('a', state('a', 2), 0, 30);
      expect(cache.packedSize).toBe(1);
      expect(keys(cache, ['a', 'b', 'c'])).toEqual(['a', 'b', 'c']);
      expect(cache.peek('a')).toMatchObject({ record: state('a', 2), dirty: 0 });
    });

    it('counts packed records in its bound and lets the oldest, packed one, go first', () => {
      const { cache } = packed(1);
      cache.set('a', state('a'), 3, 0);
      cache.set('b', state('b'), 0, 100);
      cache.set('c', state('c'), 0, 200);
      cache.set('d', state('d'), 0, 300);
      expect([cache.size, cache.packedSize]).toEqual([4, 3]);
      expect(cache.wouldKeep('e', 300)).toBe(false);
      // a is the oldest and idle at IDLE: it gives its place and, holding 3 clean runs, is handed back whole.
      cache.set('e', state('e'), 0, IDLE);
      expect(keys(cache, ['a', 'b', 'c', 'd', 'e'])).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect(cache.size).toBe(4);
      expect([...cache.unwrittenEntries()]).toEqual([['a', state('a')]]);
      expect(cache.dirtyOf('a')).toBe(3);
    });

    it('lists dirty records packed or not, oldest first, and marks them written in place', () => {
      const { cache } = packed(1);
      cache.set('a', state('a'), 2, 0);
      cache.set('b', state('b'), 0, 10);
      cache.set('c', state('c'), 5, 20);
      expect([...cache.dirtyEntries()]).toEqual([
        ['a', state('a')],
        ['c', state('c')],
      ]);
      cache.written('a');
      cache.written('c');
      expect([...cache.dirtyEntries()]).toEqual([]);
      expect([cache.dirtyOf('a'), cache.dirtyOf('c'), cache.packedSize]).toEqual([0, 0, 2]);
    });
  });
});


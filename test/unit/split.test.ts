// Split planning (client/src/contract/split.ts): LPT by recent durations, the median for unknown files, the
// name split used when no server answers, and the file-list key of a stored plan.
import { describe, expect, it } from 'vitest';
import { balanceRatio, canonicalFiles, coversExactly, filesHash, median, planSplit, splitByName } from '../../client/src/contract/split.js';

const files = (n: number): string[] => Array.from({ length: n }, (_, i) => `src/f${String(i).padStart(2, '0')}.test.ts`);

describe('planSplit', () => {
  it('puts a file that takes 10× the others on a shard of its own and balances the rest', () => {
    const list = files(12);
    const durations = new Map(list.map((f) => [f, 1_000]));
    durations.set('src/f07.test.ts', 10_000);
    const plan = planSplit(list, 3, durations);
    expect(coversExactly(plan.shards, list)).toBe(true);
    const heavy = plan.shards.find((s) => s.includes('src/f07.test.ts'))!;
    expect(heavy).toEqual(['src/f07.test.ts']);
    // 21 s of work: the heavy shard 10 s, the other two 5 and 6 (or 6 and 5): slowest / ideal = 10/7.
    expect(plan.estimatedMs.slice().sort((a, b) => a - b)).toEqual([5_000, 6_000, 10_000]);
    expect(balanceRatio(plan.shards, (f) => durations.get(f)!)).toBeCloseTo(10 / 7, 6);
    // A count split puts the heavy file with three others: 13 s on its shard.
    expect(balanceRatio(splitByName(list, 3), (f) => durations.get(f)!)).toBeCloseTo(13 / 7, 6);
  });

  it('is the textbook LPT result and stays within 4/3 of the optimum', () => {
    // Graham's example: 2 shards, jobs 3,3,2,2,2: LPT gives 7 vs optimum 6.
    const d = new Map([['a', 3], ['b', 3], ['c', 2], ['d', 2], ['e', 2]]);
    const plan = planSplit([...d.keys()], 2, d);
    expect(plan.shards).toEqual([['a', 'c', 'e'], ['b', 'd']]);
    expect(plan.estimatedMs).toEqual([7, 5]);
  });

  it('plans unknown files at the median of the known ones', () => {
    const d = new Map([['a', 100], ['b', 300], ['c', 900]]);
    const plan = planSplit(['a', 'b', 'c', 'new1', 'new2'], 2, d);
    expect(plan.unknownFiles).toEqual(['new1', 'new2']);
    expect(plan.defaultMs).toBe(300);
    expect(plan.estimatedMs.reduce((x, y) => x + y, 0)).toBe(100 + 300 + 900 + 2 * 300);
    // c (900) first; b, new1, new2 (300 each, by name) fill the other shard to 900; a joins the tie's lower index.
    expect(plan.shards).toEqual([['a', 'c'], ['b', 'new1', 'new2']]);
    expect(plan.estimatedMs).toEqual([1_000, 900]);
  });

  it('without any history is a balanced count split', () => {
    const list = files(10);
    const plan = planSplit(list, 3, new Map());
    expect(plan.shards.map((s) => s.length).sort()).toEqual([3, 3, 4]);
    expect(plan.unknownFiles).toEqual(list);
    expect(plan.defaultMs).toBe(1);
  });

  it('depends only on the files and durations, not on their order or repeats', () => {
    const list = files(40);
    const d = new Map(list.map((f, i) => [f, ((i * 7919) % 97) * 10]));
    const shuffled = [...list].reverse().concat(list.slice(0, 5));
    const a = planSplit(list, 4, d);
    const b = planSplit(shuffled, 4, new Map([...d].reverse()));
    expect(b).toEqual(a);
    for (const s of a.shards) expect(s).toEqual([...s].sort());
  });

  it('leaves shards empty when there are fewer files than shards, and refuses a bad total', () => {
    const plan = planSplit(['a', 'b'], 4, new Map([['a', 5], ['b', 5]]));
    expect(plan.shards).toEqual([['a'], ['b'], [], []]);
    expect(() => planSplit(['a'], 0, new Map())).toThrow(RangeError);
  });

  it('stays near the ideal on a skewed suite of many files', () => {
    const list = files(99).concat(Array.from({ length: 200 }, (_, i) => `x/${i}.spec.ts`));
    let seed = 7;
    const rnd = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const d = new Map(list.map((f) => [f, Math.round(Math.exp(rnd() * 5) * 100)]));
    const plan = planSplit(list, 8, d);
    expect(balanceRatio(plan.shards, (f) => d.get(f)!)).toBeLessThan(1.02);
    expect(balanceRatio(splitByName(list, 8), (f) => d.get(f)!)).toBeGreaterThan(1.1);
  });
});

describe('splitByName', () => {
  it('deals the sorted files round-robin: disjoint, covering, the same from any order', () => {
    const shards = splitByName(['c', 'a', 'e', 'b', 'd', 'a'], 2);
    expect(shards).toEqual([['a', 'c', 'e'], ['b', 'd']]);
    expect(splitByName(['e', 'd', 'c', 'b', 'a'], 2)).toEqual(shards);
    expect(coversExactly(shards, ['a', 'b', 'c', 'd', 'e'])).toBe(true);
  });
});

describe('helpers', () => {
  it('filesHash ignores order and repeats, and tells different lists apart', () => {
    expect(filesHash(['b', 'a', 'b'])).toBe(filesHash(['a', 'b']));
    expect(filesHash(['a', 'b'])).not.toBe(filesHash(['a', 'b', 'c']));
    expect(filesHash(['a\nb'])).not.toBe(filesHash(['a', 'b']));
    expect(filesHash(['a'])).toMatch(/^[0-9a-f]{64}$/);
    expect(canonicalFiles(['b', 'B', 'a'])).toEqual(['B', 'a', 'b']);
  });

  it('median, coversExactly', () => {
    expect(median([])).toBeUndefined();
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(coversExactly([['a'], ['b']], ['a', 'b'])).toBe(true);
    expect(coversExactly([['a'], ['a', 'b']], ['a', 'b'])).toBe(false);
    expect(coversExactly([['a']], ['a', 'b'])).toBe(false);
    expect(coversExactly([['a', 'z'], ['b']], ['a', 'b'])).toBe(false);
  });
});

// ShapePacker: the compact text of the scoring processor's cold test states. It must give back
// exactly what JSON would, for the model's real states and for shapes it has not met.
import { describe, expect, it } from 'vitest';
import { ShapePacker } from '../../src/domain/shape-packer.js';
import { applyObservation, emptyScoreState, scoreOf, DEFAULT_SCORE_PARAMS, type Observation } from '../../src/domain/score.js';
import type { Attempt } from '../../src/domain/score/run-outcome.js';

const viaJson = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** A test state after `runs` runs on two branches, with failures, retries and re-runs mixed in. */
function stateAfter(runs: number, seed: number): { model: ReturnType<typeof emptyScoreState>; score: ReturnType<typeof scoreOf> } {
  let model = emptyScoreState();
  let x = seed;
  const next = (): number => (x = (x * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < runs; i++) {
    const fail = next() < 0.3;
    const attempts: Attempt[] = fail ? (next() < 0.5 ? ['fail', 'pass'] : ['fail']) : ['pass'];
    const o: Observation = {
      runId: `run-${seed}-${i}`,
      commitSha: (i % 3 === 0 ? 'a' : 'b').repeat(7) + i.toString(16).padStart(33, '0'),
      branch: i % 4 === 0 ? 'feature/x' : 'main',
      prNumber: i % 4 === 0 ? 12 : null,
      baseBranch: i % 4 === 0 ? 'main' : null,
      at: 1_700_000_000_000 + i * 3_600_000,
      attempts,
      runFailRatio: fail ? 0.01 : 0,
      runTestCount: 500,
    };
    model = applyObservation(model, o, DEFAULT_SCORE_PARAMS);
  }
  return { model, score: scoreOf(model, 1_700_000_000_000 + runs * 3_600_000, DEFAULT_SCORE_PARAMS) };
}

describe('ShapePacker', () => {
  it('gives back what JSON gives back for the model’s states, in less text', () => {
    const packer = new ShapePacker<unknown>();
    for (const runs of [1, 2, 10, 40]) {
      for (const seed of [1, 7, 42]) {
        const { model, score } = stateAfter(runs, seed);
        const record = { projectId: 'p', testId: `t-${runs}-${seed}`, score: score.score, reasons: score.reasons, stateSince: score.stateSince, model, auto: { autoQuarantined: false, quarantinedAt: null } };
        const text = packer.pack(record);
        expect(packer.unpack(text)).toStrictEqual(viaJson(record));
        expect(text.length).toBeLessThan(JSON.stringify(record).length * 0.75);
      }
    }
    // The states share a handful of shapes however many are packed.
    expect(packer.shapeCount).toBeLessThan(20);
  });

  it('keeps JSON’s treatment of undefined, null, nesting and key order', () => {
    const packer = new ShapePacker<unknown>();
    const value = { b: 1, a: undefined, c: null, d: [1, undefined, { z: 'x', y: [[]] }], e: {}, f: '', g: -0.5, h: true };
    expect(packer.unpack(packer.pack(value))).toStrictEqual(viaJson(value));
    expect(Object.keys(packer.unpack(packer.pack(value)) as object)).toEqual(['b', 'c', 'd', 'e', 'f', 'g', 'h']);
    // Top-level arrays and scalars too.
    for (const v of [[{ a: 1 }, 2], 'text', 3, null, []]) expect(packer.unpack(packer.pack(v))).toStrictEqual(v);
  });

  it('tells apart shapes whose keys look alike', () => {
    const packer = new ShapePacker<unknown>();
    const values = [{ a: 1, 'b\u0001c': 2, d: 3 }, { a: 1, b: 2, d: 3 }, { a: 1, c: 2, d: 3 }, { 'a\u0001b': 1, d: 2 }];
    const texts = values.map((v) => packer.pack(v));
    texts.forEach((t, i) => expect(packer.unpack(t)).toStrictEqual(values[i]));
  });

  it('keeps objects of shapes past its limit as they are', () => {
    const packer = new ShapePacker<unknown>();
    const many = Array.from({ length: 1_100 }, (_, i) => ({ [`key${i}`]: i, nested: { [`n${i}`]: [i] } }));
    const texts = many.map((v) => packer.pack(v));
    texts.forEach((t, i) => expect(packer.unpack(t)).toStrictEqual(many[i]));
    expect(packer.shapeCount).toBe(1_024);
  });
});

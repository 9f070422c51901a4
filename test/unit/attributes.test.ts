import { describe, expect, it } from 'vitest';
import { attributeValueOf, attributesOf, withinJsonDepth } from '../../src/domain/attributes.js';

describe('attribute values as stored', () => {
  it('keeps scalars, turns nested JSON into its text and leaves null out', () => {
    expect(attributeValueOf('x')).toBe('x');
    expect(attributeValueOf(0)).toBe(0);
    expect(attributeValueOf(false)).toBe(false);
    expect(attributeValueOf(null)).toBeUndefined();
    expect(attributeValueOf([1, 'a', null])).toBe('[1,"a",null]');
    expect(attributeValueOf({ b: { c: [] } })).toBe('{"b":{"c":[]}}');
    expect(attributesOf({ a: 1, n: null, o: { k: 'v' }, e: '' })).toEqual({ a: 1, o: '{"k":"v"}', e: '' });
  });

  it('measures JSON depth without overflowing the stack', () => {
    const nested = (n: number): unknown => JSON.parse('['.repeat(n) + ']'.repeat(n));
    expect(withinJsonDepth('x', 0)).toBe(true);
    expect(withinJsonDepth({ a: [1] }, 2)).toBe(true);
    expect(withinJsonDepth({ a: [1] }, 1)).toBe(false);
    expect(withinJsonDepth(nested(31), 31)).toBe(true);
    expect(withinJsonDepth(nested(32), 31)).toBe(false);
    expect(withinJsonDepth(nested(200_000), 31)).toBe(false);
  });
});

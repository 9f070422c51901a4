import { describe, expect, it } from 'vitest';
import { attributeValueOf, attributesOf } from '../../src/domain/attributes.js';

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
});

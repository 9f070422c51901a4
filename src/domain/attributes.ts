// Attribute values as stored: string, number or boolean (AttributeValue). Flakemetry's contract
// allows any JSON value in `attributes` (its jsonRecordSchema), and its clients send nested ones;
// we keep those as their JSON text so nothing a client sent is lost and every stored value stays
// a scalar that ClickHouse, the OTLP encoder and the export read alike.
import type { AttributeValue } from '../../client/src/contract/batch.js';

/** A scalar as is; an array or object as its JSON text; null (= absent, as everywhere in the contract) as undefined. */
export function attributeValueOf(value: unknown): AttributeValue | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  return JSON.stringify(value);
}

/** The record with null values left out and nested values as JSON text. */
export function attributesOf(record: Readonly<Record<string, unknown>>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [key, value] of Object.entries(record)) {
    const v = attributeValueOf(value);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/**
 * Whether a JSON value has at most `maxDepth` levels of objects and arrays (the value itself
 * counted). The walk stops at the limit, so a value nested deeper than the stack is answered too
 * (JSON.stringify on it would overflow).
 */
export function withinJsonDepth(value: unknown, maxDepth: number): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (maxDepth < 1) return false;
  for (const v of Array.isArray(value) ? value : Object.values(value)) if (!withinJsonDepth(v, maxDepth - 1)) return false;
  return true;
}

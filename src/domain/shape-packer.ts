// Compact text for many JSON records of the same few shapes (the scoring processor's cold test
// states, src/domain/write-behind-cache.ts): each object becomes an array of its values headed by
// the number of its list of keys, kept once in the packer. A one-run test state is ~850 characters
// this way (~1.1 KB of heap) against ~1,700 as its own JSON and ~3 KB as objects.
//
// For plain JSON data (no Dates, Maps or toJSON): what `unpack(pack(v))` returns equals `JSON.parse(JSON.stringify(v))`
// (keys in their order, a property set to undefined left out, as JSON leaves it out).

/** The head of a packed array that is an array, not an object (object heads are shape numbers ≥ 0). */
const ARRAY = -1;
/** Distinct lists of keys a packer learns; objects of any other shape are kept as their own JSON. */
const MAX_SHAPES = 1_024;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export class ShapePacker<V> {
  private readonly shapes: string[][] = [];
  private readonly ids = new Map<string, number[]>();

  /** The text of `value`, for `unpack` of this packer (shapes are this packer's own). */
  pack(value: V): string {
    return JSON.stringify(this.encode(value as unknown as Json));
  }

  unpack(text: string): V {
    return this.decode(JSON.parse(text) as Json) as unknown as V;
  }

  get shapeCount(): number {
    return this.shapes.length;
  }

  private encode(v: Json): Json {
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) {
      const out: Json[] = [ARRAY];
      for (const item of v) out.push(item === undefined ? null : this.encode(item));
      return out;
    }
    let keys = Object.keys(v);
    if (keys.some((k) => v[k] === undefined)) keys = keys.filter((k) => v[k] !== undefined);
    const id = this.shapeOf(keys);
    // Past MAX_SHAPES (records with free-form keys): the object as it is, which decode passes through.
    if (id === undefined) return v;
    const out: Json[] = [id];
    for (const k of keys) out.push(this.encode(v[k]!));
    return out;
  }

  private decode(v: Json): Json {
    if (!Array.isArray(v)) return v;
    const head = v[0] as number;
    if (head === ARRAY) {
      const out: Json[] = new Array<Json>(v.length - 1);
      for (let i = 1; i < v.length; i++) out[i - 1] = this.decode(v[i]!);
      return out;
    }
    const keys = this.shapes[head]!;
    const out: { [key: string]: Json } = {};
    for (let i = 0; i < keys.length; i++) out[keys[i]!] = this.decode(v[i + 1]!);
    return out;
  }

  private shapeOf(keys: string[]): number | undefined {
    // Looked up by a cheap fingerprint, then compared key by key (objects of a record type share
    // a handful of shapes, so the list behind a fingerprint is short).
    const print = `${keys.length}\u0001${keys[0] ?? ''}\u0001${keys[keys.length - 1] ?? ''}`;
    let candidates = this.ids.get(print);
    if (candidates) {
      for (const id of candidates) {
        const known = this.shapes[id]!;
        let same = true;
        for (let i = 0; i < keys.length && same; i++) same = known[i] === keys[i];
        if (same) return id;
      }
    } else this.ids.set(print, (candidates = []));
    if (this.shapes.length >= MAX_SHAPES) return undefined;
    const id = this.shapes.length;
    this.shapes.push(keys);
    candidates.push(id);
    return id;
  }
}

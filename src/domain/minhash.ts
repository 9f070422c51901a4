// MinHash sketches and LSH banding for error-signature clustering (pure, no I/O).
//
// Sketch: every token is hashed once to 32 bits (FNV-1a over UTF-16 code units + murmur3 fmix32),
// then each of the k "permutations" is a universal hash h_i(x) = (a_i·x + b_i) mod p with
// p = 2^32 − 5 (prime), a_i ∈ [1, 2^20), b_i ∈ [0, p). The sketch keeps min_x h_i(x) per i, so
// P[sketch_a[i] = sketch_b[i]] ≈ Jaccard(A, B) and the fraction of equal positions estimates it
// (standard error sqrt(J(1−J)/k) ≈ 0.044 at k = 128, J = 0.5).
// The arithmetic stays exact in doubles: a·x < 2^52 and a·x + b < 2^53, reduced by one division.
// The coefficients come from a fixed-seed PRNG, so sketches are stable across processes and
// releases; they are persisted (error_signatures.sketch), so never change DEFAULT_SEED or the
// hash functions without re-sketching stored signatures.
//
// LSH: the first b·r values are cut into b bands of r rows; two sketches are candidates when at
// least one band is identical. For true similarity s the collision probability is the S-curve
//   P(s) = 1 − (1 − s^r)^b
// whose steepest point is near (1/b)^(1/r). See lshParams for the values chosen per threshold.
import { mulberry32 } from './random.js';

/** Largest prime below 2^32: permutation values fit a Uint32 (ClickHouse Array(UInt32)). */
const P = 4294967291;
const A_LIMIT = 1 << 20;
export const DEFAULT_NUM_HASHES = 128;
export const DEFAULT_SEED = 0x5eed_f1a4;


/** murmur3 finaliser: full avalanche of a 32-bit value. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** 32-bit hash of a token string: FNV-1a over UTF-16 code units, then fmix32. */
export function hashToken(token: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < token.length; i++) {
    h ^= token.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h);
}

export class MinHasher {
  readonly numHashes: number;
  readonly seed: number;
  private readonly a: Float64Array;
  private readonly b: Float64Array;
  private xs = new Float64Array(64);

  constructor(numHashes: number = DEFAULT_NUM_HASHES, seed: number = DEFAULT_SEED) {
    if (!Number.isInteger(numHashes) || numHashes < 1) throw new RangeError(`numHashes must be a positive integer, got ${numHashes}`);
    this.numHashes = numHashes;
    this.seed = seed >>> 0;
    const rnd = mulberry32(this.seed);
    this.a = new Float64Array(numHashes);
    this.b = new Float64Array(numHashes);
    for (let i = 0; i < numHashes; i++) {
      this.a[i] = 1 + (rnd() % (A_LIMIT - 1));
      this.b[i] = rnd() % P;
    }
  }

  /** MinHash sketch of a token set (duplicates are harmless). An empty set gives all 0xFFFFFFFF. */
  sketch(tokens: readonly string[]): Uint32Array {
    const n = tokens.length;
    if (this.xs.length < n) this.xs = new Float64Array(Math.max(n, this.xs.length * 2));
    const xs = this.xs;
    for (let j = 0; j < n; j++) {
      const h = hashToken(tokens[j]!);
      xs[j] = h >= P ? h - P : h;
    }
    return this.permute(xs, n);
  }

  /** Sketch of pre-hashed tokens (32-bit values); for callers that hash tokens themselves. */
  sketchHashes(hashes: ArrayLike<number>, count: number = hashes.length): Uint32Array {
    if (this.xs.length < count) this.xs = new Float64Array(Math.max(count, this.xs.length * 2));
    const xs = this.xs;
    for (let j = 0; j < count; j++) {
      const h = hashes[j]! >>> 0;
      xs[j] = h >= P ? h - P : h;
    }
    return this.permute(xs, count);
  }

  /** Hot loop, kept monomorphic (Float64Array only): per permutation, the min over all tokens. */
  private permute(xs: Float64Array, count: number): Uint32Array {
    const k = this.numHashes;
    const out = new Uint32Array(k).fill(0xffffffff);
    if (count === 0) return out;
    const a = this.a;
    const b = this.b;
    for (let i = 0; i < k; i++) {
      const ai = a[i]!;
      const bi = b[i]!;
      let min = P;
      for (let j = 0; j < count; j++) {
        const y = ai * xs[j]! + bi;
        let r = y - Math.floor(y / P) * P;
        if (r < 0) r += P;
        else if (r >= P) r -= P;
        if (r < min) min = r;
      }
      out[i] = min;
    }
    return out;
  }
}

/** Fraction of equal positions: an unbiased estimate of the Jaccard similarity of the two sets. */
export function estimateJaccard(a: Uint32Array, b: Uint32Array): number {
  if (a.length !== b.length) throw new RangeError(`sketch lengths differ: ${a.length} vs ${b.length}`);
  if (a.length === 0) return 0;
  let eq = 0;
  for (let i = 0; i < a.length; i++) if (a[i] === b[i]) eq++;
  return eq / a.length;
}

function rowsFor(sketch: Uint32Array, bands: number): number {
  if (!Number.isInteger(bands) || bands < 1) throw new RangeError(`bands must be a positive integer, got ${bands}`);
  const rows = Math.floor(sketch.length / bands);
  if (rows < 1) throw new RangeError(`${bands} bands need at least ${bands} sketch values, got ${sketch.length}`);
  return rows;
}

/**
 * Two independent 32-bit hashes (murmur3-style mixing, different seeds) of band `band`'s rows,
 * written to out[0] (high half) and out[1] (low half). The band index is part of the hash, so keys
 * of different bands never collide by construction and can share one indexed column.
 */
function bandHash(sketch: Uint32Array, band: number, rows: number, out: Uint32Array): void {
  let h1 = (0x9747b28c ^ Math.imul(band + 1, 0x9e3779b1)) >>> 0;
  let h2 = (0x2f8a1c37 ^ Math.imul(band + 1, 0x85ebca77)) >>> 0;
  const start = band * rows;
  for (let i = start; i < start + rows; i++) {
    const v = sketch[i]!;
    let k = Math.imul(v, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h1 ^= k;
    h1 = (h1 << 13) | (h1 >>> 19);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
    let m = Math.imul(v ^ 0x5bd1e995, 0x27d4eb2f);
    m = (m << 17) | (m >>> 15);
    h2 ^= m;
    h2 = (Math.imul(h2, 0x165667b1) + 0x61c88647) | 0;
  }
  out[0] = fmix32((h1 ^ rows) >>> 0);
  out[1] = fmix32((h2 ^ Math.imul(rows, 0x27d4eb2f)) >>> 0);
}

/**
 * One 64-bit key per band, as unsigned decimal strings ("0" … "18446744073709551615"). Decimal
 * text is what ClickHouse prints for UInt64 in TSV and (quoted) in JSON, parses back into UInt64
 * without precision loss, and stores as-is in a String column (signature_bands.band_key); a JS
 * number could not hold 64 bits. rows = floor(sketch.length / bands); trailing values are unused.
 */
export function bandKeys(sketch: Uint32Array, bands: number): string[] {
  const rows = rowsFor(sketch, bands);
  const out = new Uint32Array(2);
  const keys: string[] = new Array<string>(bands);
  for (let band = 0; band < bands; band++) {
    bandHash(sketch, band, rows, out);
    keys[band] = ((BigInt(out[0]!) << 32n) | BigInt(out[1]!)).toString();
  }
  return keys;
}

/** P[two sets with Jaccard s share at least one band] = 1 − (1 − s^rows)^bands. */
export function lshCollisionProbability(s: number, bands: number, rows: number): number {
  return 1 - Math.pow(1 - Math.pow(s, rows), bands);
}

/**
 * Bands and rows for a clustering threshold t (bands·rows ≤ numHashes; rows·bands leftover
 * values are ignored). Rule: the largest r (steepest S-curve, fewest false candidates) for which
 * b = floor(numHashes / r) still gives P(t) ≥ 0.95, i.e. recall at the threshold itself is at
 * least 95% and higher similarities are found even more surely.
 *
 * S-curve at numHashes = 128 for the default threshold 0.5 → b = 42, r = 3 (126 values):
 *   s:    0.1    0.2    0.3    0.4    0.5    0.6    0.7    0.8
 *   P:  0.041  0.286  0.684  0.934  0.996  1.000  1.000  1.000
 * and for t = 0.7 → b = 25, r = 5: P(0.3) = 0.059, P(0.5) = 0.548, P(0.7) = 0.990.
 * With 128 values the curve cannot also drop to "rare" 0.2 below a mid threshold: that needs
 * b·t^r ≈ 3 and 3·((t − 0.2)/t)^r small, i.e. r ≥ 8 and b in the hundreds (thousands of hashes).
 * The cost of the false candidates in between is only their verification (estimateJaccard in
 * bestCluster). A lookup returns the near-duplicates plus Σ P(s_i) over everything else stored,
 * ≈ N·b·E[s³] for a background of weakly related signatures: unrelated ones (s ≈ 0) practically
 * never collide, so the candidate set is a tiny, data-dependent fraction of N (in bench/clustering
 * ~0.005% of N from other failure families) instead of the N of a linear scan. This is also why
 * signature tokens leave out placeholders and stop words as single tokens (signature.ts): they
 * raise the background similarity. Pass a larger numHashes for a sharper curve.
 */
export function lshParams(threshold: number, numHashes: number = DEFAULT_NUM_HASHES): { bands: number; rows: number } {
  if (!(threshold >= 0 && threshold <= 1)) throw new RangeError(`threshold must be in [0, 1], got ${threshold}`);
  if (!Number.isInteger(numHashes) || numHashes < 1) throw new RangeError(`numHashes must be a positive integer, got ${numHashes}`);
  const t = Math.max(threshold, 1e-9);
  let best = { bands: numHashes, rows: 1 };
  for (let rows = 1; rows <= numHashes; rows++) {
    const bands = Math.floor(numHashes / rows);
    if (lshCollisionProbability(t, bands, rows) >= 0.95) best = { bands, rows };
  }
  return best;
}

/**
 * In-memory LSH index (tests, benchmarks, small projects). One open-addressing hash table per
 * band maps the band's key to the newest item with that key; items with the same key are chained
 * through one item-major Int32Array (next[item·bands + band]), so a chain walk that revisits the
 * same near-duplicates in every band stays in cache. Memory: 4 B per item and band plus 8 B per
 * table slot (load ≤ 0.6), all in typed arrays off the JS heap. Tables keep the low 32 bits of the
 * band key: an accidental match costs one extra candidate (≈ size/2^32 per band lookup), which
 * bestCluster then rejects by its estimated similarity.
 */
export class LshIndex {
  readonly bands: number;
  private rows = 0;
  private ids: string[] = [];
  private capacity: number;
  private next: Int32Array;
  /** Per band: [key, head] pairs; head −1 marks an empty slot. */
  private tables: Int32Array[];
  private used: number[];
  /** Per-item stamp of the last query that reached it: dedupes chain walks without hashing ids. */
  private seenAt: Uint32Array;
  private query = 0;
  private readonly tmp = new Uint32Array(2);

  constructor(bands: number, expectedSize = 1024) {
    if (!Number.isInteger(bands) || bands < 1) throw new RangeError(`bands must be a positive integer, got ${bands}`);
    this.bands = bands;
    this.capacity = Math.max(16, Math.ceil(expectedSize));
    let slots = 16;
    while (slots * 0.6 < this.capacity) slots *= 2;
    this.next = new Int32Array(this.capacity * bands);
    this.tables = Array.from({ length: bands }, () => new Int32Array(slots * 2).fill(-1));
    this.used = new Array<number>(bands).fill(0);
    this.seenAt = new Uint32Array(this.capacity);
  }

  get size(): number {
    return this.ids.length;
  }

  add(id: string, sketch: Uint32Array): void {
    this.checkRows(sketch);
    const item = this.ids.length;
    if (item >= this.capacity) this.growItems();
    this.ids.push(id);
    const bands = this.bands;
    for (let band = 0; band < bands; band++) {
      if ((this.used[band]! + 1) * 10 > (this.tables[band]!.length >> 1) * 6) this.growTable(band);
      bandHash(sketch, band, this.rows, this.tmp);
      const key = this.tmp[1]! | 0;
      const table = this.tables[band]!;
      const slot = findSlot(table, key);
      if (table[slot + 1]! === -1) {
        table[slot] = key;
        this.used[band]!++;
      }
      this.next[item * bands + band] = table[slot + 1]!;
      table[slot + 1] = item;
    }
  }

  /** Ids sharing at least one band key with the sketch. */
  candidates(sketch: Uint32Array): Set<string> {
    const out = new Set<string>();
    if (this.ids.length === 0) return out;
    this.checkRows(sketch);
    if (++this.query === 0xffffffff) {
      this.seenAt.fill(0);
      this.query = 1;
    }
    const q = this.query;
    const seenAt = this.seenAt;
    const next = this.next;
    const bands = this.bands;
    for (let band = 0; band < bands; band++) {
      bandHash(sketch, band, this.rows, this.tmp);
      const table = this.tables[band]!;
      const slot = findSlot(table, this.tmp[1]! | 0);
      for (let item = table[slot + 1]!; item !== -1; item = next[item * bands + band]!) {
        if (seenAt[item] === q) continue;
        seenAt[item] = q;
        out.add(this.ids[item]!);
      }
    }
    return out;
  }

  private checkRows(sketch: Uint32Array): void {
    const rows = rowsFor(sketch, this.bands);
    if (this.rows === 0) this.rows = rows;
    else if (rows !== this.rows) throw new RangeError(`sketch of ${sketch.length} values does not match this index (${this.rows} rows per band)`);
  }

  private growItems(): void {
    this.capacity *= 2;
    const next = new Int32Array(this.capacity * this.bands);
    next.set(this.next);
    this.next = next;
    const seenAt = new Uint32Array(this.capacity);
    seenAt.set(this.seenAt);
    this.seenAt = seenAt;
  }

  private growTable(band: number): void {
    const old = this.tables[band]!;
    const table = new Int32Array(old.length * 2).fill(-1);
    for (let s = 0; s < old.length; s += 2) {
      if (old[s + 1]! === -1) continue;
      const slot = findSlot(table, old[s]!);
      table[slot] = old[s]!;
      table[slot + 1] = old[s + 1]!;
    }
    this.tables[band] = table;
  }
}

/** Linear probing in a [key, head] table: the pair offset holding `key`, or the empty one where it goes. */
function findSlot(table: Int32Array, key: number): number {
  const mask = (table.length >> 1) - 1;
  let i = fmix32(key ^ 0x7f4a7c15) & mask;
  while (table[2 * i + 1]! !== -1 && table[2 * i]! !== key) i = (i + 1) & mask;
  return 2 * i;
}

/**
 * Cluster assignment: the candidate with the highest estimated Jaccard similarity, if that
 * similarity exceeds (strictly) the threshold; otherwise null, meaning "start a new cluster".
 * Ties go to the lexicographically smallest clusterId, so the result does not depend on the order
 * storage returns candidates in. Candidates whose sketch length differs (another numHashes) are
 * not comparable and are skipped.
 */
export function bestCluster(
  sketch: Uint32Array,
  candidates: Iterable<{ id: string; clusterId: string; sketch: Uint32Array }>,
  threshold: number,
): { clusterId: string; similarity: number } | null {
  let best: { clusterId: string; similarity: number } | null = null;
  for (const c of candidates) {
    if (c.sketch.length !== sketch.length) continue;
    const similarity = estimateJaccard(sketch, c.sketch);
    if (best === null || similarity > best.similarity || (similarity === best.similarity && c.clusterId < best.clusterId)) {
      best = { clusterId: c.clusterId, similarity };
    }
  }
  return best !== null && best.similarity > threshold ? best : null;
}

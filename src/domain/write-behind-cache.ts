// A bounded memory of committed records whose latest changes may not be written yet (the scoring
// processor's test states, docs/pipeline.md "Scoring"): it never forgets a record holding unwritten
// changes without handing it back to be written.

export interface CachedState<V> {
  record: V;
  /** Changes this record holds that storage does not have yet (scoring: clean runs). */
  dirty: number;
}

interface Entry<V> extends CachedState<V> {
  /** When it was last set (ms). */
  at: number;
}

/** A record the cache keeps packed (`Packing`): the older ones, past the `hot` most recent. */
interface ColdEntry {
  packed: string;
  dirty: number;
  at: number;
}

/**
 * How the records past the `hot` most recently set are kept: as compact text (a ShapePacker's),
 * unpacked when read. Objects cost 3-4 KB a test state, their packed text 1-1.7 KB; packing and
 * unpacking cost ~12 and ~7 µs, paid only by projects of more tests than `hot`.
 */
export interface Packing<V> {
  hot: number;
  pack(record: V): string;
  unpack(packed: string): V;
}

/**
 * At most `max` records, in the order they were last set. When full, a new one takes the place
 * of the oldest only if that one has not been set for `idleMs`; otherwise it is not kept. A plain
 * least-recently-used cache would keep nothing useful for a project of more tests than `max`:
 * every run visits all its tests in the same order, so each would be forgotten just before it
 * came round again. Refusing newcomers keeps the first `max` of them across runs instead, and the
 * idle rule lets a project that stopped running give its places to others.
 *
 * With a `Packing`, only the `hot` most recently set are kept as objects and the older ones as
 * packed text. Every packed record is older than every object (the oldest object is the one
 * packed), so the oldest record is the first packed one, else the first object.
 */
export class WriteBehindCache<V> {
  private readonly hot = new Map<string, Entry<V>>();
  private readonly cold = new Map<string, ColdEntry>();
  /** Records with unwritten changes that the cache let go: the caller writes them next. */
  private readonly unwritten = new Map<string, CachedState<V>>();

  constructor(
    private readonly max: number,
    private readonly idleMs: number,
    private readonly packing?: Packing<V>,
  ) {}

  get size(): number {
    return this.hot.size + this.cold.size;
  }

  /** Records kept packed (the rest of `size` are objects). */
  get packedSize(): number {
    return this.cold.size;
  }

  /**
   * Without refreshing its place (the scoring processor sets every state it read again when the
   * lease commits, which refreshes it then). A packed record is unpacked: a new object each call.
   */
  peek(key: string): CachedState<V> | undefined {
    const h = this.hot.get(key);
    if (h) return h;
    const c = this.cold.get(key);
    if (c) return { record: this.packing!.unpack(c.packed), dirty: c.dirty };
    return this.unwritten.get(key);
  }

  /** The unwritten changes a record holds (0 when not kept), without unpacking it. */
  dirtyOf(key: string): number {
    return (this.hot.get(key) ?? this.cold.get(key) ?? this.unwritten.get(key))?.dirty ?? 0;
  }

  /**
   * Whether a record set now would be kept, as far as can be told before it is set (other records
   * set first may take the last places; `set` hands those back as unwritten).
   */
  wouldKeep(key: string, now: number): boolean {
    return this.hot.has(key) || this.cold.has(key) || this.size < this.max || this.oldestIdle(now) !== undefined;
  }

  set(key: string, record: V, dirty: number, now: number): void {
    this.unwritten.delete(key);
    const kept = this.hot.delete(key) || this.cold.delete(key) || this.size < this.max || this.evictIdle(now);
    if (kept) {
      this.hot.set(key, { record, dirty, at: now });
      this.packOldest();
    } else if (dirty > 0) this.unwritten.set(key, { record, dirty });
  }

  /**
   * A record handed out by `dirtyEntries` or `unwrittenEntries` was written: it holds nothing
   * unwritten now. Its place and age stay as they were: a flush is no use of the record, and must
   * not keep an idle one from giving its place to another.
   */
  written(key: string): void {
    this.unwritten.delete(key);
    const kept = this.hot.get(key) ?? this.cold.get(key);
    if (kept) kept.dirty = 0;
  }

  /** Kept records holding unwritten changes (a periodic flush writes them), oldest first. */
  *dirtyEntries(): Generator<[string, V]> {
    for (const [key, v] of this.cold) if (v.dirty > 0) yield [key, this.packing!.unpack(v.packed)];
    for (const [key, v] of this.hot) if (v.dirty > 0) yield [key, v.record];
  }

  /** Records let go with unwritten changes: to write until they are set again. */
  *unwrittenEntries(): Generator<[string, V]> {
    for (const [key, v] of this.unwritten) yield [key, v.record];
  }

  private packOldest(): void {
    const packing = this.packing;
    if (!packing) return;
    while (this.hot.size > packing.hot) {
      const [key, e] = this.hot.entries().next().value as [string, Entry<V>];
      this.hot.delete(key);
      this.cold.set(key, { packed: packing.pack(e.record), dirty: e.dirty, at: e.at });
    }
  }

  private oldest(): [string, { at: number }] | undefined {
    for (const entry of this.cold) return entry;
    for (const entry of this.hot) return entry;
    return undefined;
  }

  private oldestIdle(now: number): string | undefined {
    const o = this.oldest();
    return o && now - o[1].at >= this.idleMs ? o[0] : undefined;
  }

  private evictIdle(now: number): boolean {
    const key = this.oldestIdle(now);
    if (key === undefined) return false;
    // Handed back as it would be read: peek unpacks a packed record.
    const letGo = this.peek(key)!;
    this.hot.delete(key);
    this.cold.delete(key);
    if (letGo.dirty > 0) this.unwritten.set(key, { record: letGo.record, dirty: letGo.dirty });
    return true;
  }
}

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

/**
 * At most `max` records, in the order they were last set. When full, a new one takes the place
 * of the oldest only if that one has not been set for `idleMs`; otherwise it is not kept. A plain
 * least-recently-used cache would keep nothing useful for a project of more tests than `max`:
 * every run visits all its tests in the same order, so each would be forgotten just before it
 * came round again. Refusing newcomers keeps the first `max` of them across runs instead, and the
 * idle rule lets a project that stopped running give its places to others.
 */
export class WriteBehindCache<V> {
  private readonly map = new Map<string, Entry<V>>();
  /** Records with unwritten changes that the cache let go: the caller writes them next. */
  private readonly unwritten = new Map<string, CachedState<V>>();

  constructor(
    private readonly max: number,
    private readonly idleMs: number,
  ) {}

  get size(): number {
    return this.map.size;
  }

  /**
   * Without refreshing its place (the scoring processor sets every state it read again when the
   * lease commits, which refreshes it then).
   */
  peek(key: string): CachedState<V> | undefined {
    return this.map.get(key) ?? this.unwritten.get(key);
  }

  /**
   * Whether a record set now would be kept, as far as can be told before it is set (other records
   * set first may take the last places; `set` hands those back as unwritten).
   */
  wouldKeep(key: string, now: number): boolean {
    return this.map.has(key) || this.map.size < this.max || this.oldestIdle(now) !== undefined;
  }

  set(key: string, record: V, dirty: number, now: number): void {
    this.unwritten.delete(key);
    const kept = this.map.delete(key) || this.map.size < this.max || this.evictIdle(now);
    if (kept) this.map.set(key, { record, dirty, at: now });
    else if (dirty > 0) this.unwritten.set(key, { record, dirty });
  }

  /**
   * A record handed out by `dirtyEntries` or `unwrittenEntries` was written: it holds nothing
   * unwritten now. Its place and age stay as they were: a flush is no use of the record, and must
   * not keep an idle one from giving its place to another.
   */
  written(key: string): void {
    this.unwritten.delete(key);
    const kept = this.map.get(key);
    if (kept) kept.dirty = 0;
  }

  /** Kept records holding unwritten changes (a periodic flush writes them). */
  *dirtyEntries(): Generator<[string, V]> {
    for (const [key, v] of this.map) if (v.dirty > 0) yield [key, v.record];
  }

  /** Records let go with unwritten changes: to write until they are set again. */
  *unwrittenEntries(): Generator<[string, V]> {
    for (const [key, v] of this.unwritten) yield [key, v.record];
  }

  private oldestIdle(now: number): string | undefined {
    for (const [key, v] of this.map) return now - v.at >= this.idleMs ? key : undefined;
    return undefined;
  }

  private evictIdle(now: number): boolean {
    const key = this.oldestIdle(now);
    if (key === undefined) return false;
    const old = this.map.get(key)!;
    this.map.delete(key);
    if (old.dirty > 0) this.unwritten.set(key, { record: old.record, dirty: old.dirty });
    return true;
  }
}

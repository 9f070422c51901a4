// Fixed-window rate limit per project, held in this process's memory (docs/contract.md §5).
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    // Injectable so a test can place its requests inside one window instead of waiting for one.
    private readonly clock: () => number = Date.now,
  ) {}

  /** Returns 0 when allowed, else the seconds until the window resets. */
  hit(key: string, now = this.clock()): number {
    if (this.max <= 0) return 0;
    const start = now - (now % this.windowMs);
    let w = this.windows.get(key);
    if (!w || w.start !== start) {
      w = { start, count: 0 };
      this.windows.set(key, w);
      if (this.windows.size > 100_000) this.windows.clear();
    }
    w.count++;
    if (w.count <= this.max) return 0;
    return Math.max(1, Math.ceil((start + this.windowMs - now) / 1000));
  }
}

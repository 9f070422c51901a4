// Callers waiting for something to happen (work queued, events appended), each until it happens
// or its timeout passes. A waiter that timed out is dropped: an idle daemon polls forever, and
// kept waiters would only grow.
export class Waiters {
  private waiting: (() => void)[] = [];

  /** Resolves at the next wakeAll(), or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiting = this.waiting.filter((w) => w !== done);
        resolve();
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(t);
        resolve();
      };
      this.waiting.push(done);
    });
  }

  wakeAll(): void {
    const w = this.waiting;
    this.waiting = [];
    for (const f of w) f();
  }

  /** Waiters still waiting. */
  get size(): number {
    return this.waiting.length;
  }
}

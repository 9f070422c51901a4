// Ingest takes the HTTP thread in turns, so the requests beside it are not queued behind it
// (issue 40, "reads beside writes"). Under saturating ingest the thread always has ingest bodies
// ready; each one's decode and enqueue (the payload's validation, the job's write instructions)
// runs ~0.3-1 ms, and the event loop ran them all before it looked at its sockets again. A read
// waits for several such passes (its request, its query's answer), each as long as the ingest work
// that was ready. Here ingest work runs at most `budgetMs` per pass of the loop; what is left waits
// for the next, after the loop has handled whatever else arrived (docs/benchmarks.md, session 57).
// The work is the same, only its order changes: a quiet thread grants every turn at once.

/** Wall time of ingest work a pass of the event loop runs before it looks at other events again. */
export const INGEST_TURN_MS = 2;

export class IngestTurns {
  private readonly waiting: (() => void)[] = [];
  /** When the current turn began; undefined between turns. */
  private turnStart: number | undefined;
  private endScheduled = false;

  constructor(
    private readonly budgetMs = INGEST_TURN_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Requests waiting for a turn. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /**
   * Resolves when this request may run its ingest work: at once while the current pass of the loop
   * has budget left and nobody waits; else in order, in a later pass.
   */
  take(): Promise<void> {
    if (this.waiting.length === 0) {
      const now = this.now();
      if (this.turnStart === undefined) {
        this.turnStart = now;
        this.scheduleEnd();
        return Promise.resolve();
      }
      if (now - this.turnStart < this.budgetMs) return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.scheduleEnd();
    });
  }

  /** The turn ends where the loop's pass does (its check phase, after the I/O it polled). */
  private scheduleEnd(): void {
    if (this.endScheduled) return;
    this.endScheduled = true;
    setImmediate(() => this.endTurn());
  }

  private endTurn(): void {
    this.endScheduled = false;
    const spent = this.turnStart !== undefined && this.now() - this.turnStart >= this.budgetMs;
    this.turnStart = undefined;
    if (this.waiting.length === 0) return;
    // This pass already ran its budget: the waiting go after the next pass has polled.
    if (spent) return this.scheduleEnd();
    this.turnStart = this.now();
    this.grantNext();
  }

  /**
   * Grants one waiting request, then the next once its synchronous work has run (a microtask
   * queued behind its continuation), while the turn has budget; the rest wait for the next pass.
   */
  private grantNext(): void {
    this.waiting.shift()?.();
    queueMicrotask(() => {
      if (this.waiting.length === 0) {
        this.turnStart = undefined; // nobody waits: the next request opens a turn of its own
      } else if (this.turnStart !== undefined && this.now() - this.turnStart < this.budgetMs) {
        this.grantNext();
      } else {
        this.turnStart = undefined;
        this.scheduleEnd();
      }
    });
  }
}

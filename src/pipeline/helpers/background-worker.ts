// The background loop of the exporters that work off the events dispatcher's path (notify,
// tracker, rca): exportEvent records work durably and wakes the loop; a pass does what is due and
// says how long until more is. One place for stop / abort / loop / wake instead of one per exporter.
import type { Logger } from 'pino';

export interface BackgroundWorkerOptions {
  /** Does what is due now; resolves to the milliseconds until the next pass, unless woken sooner. */
  pass(): Promise<number>;
  logger: Logger;
  /** The wait after a pass that threw (a pass should handle its own errors; this is the backstop). */
  retryAfterErrorMs?: number;
}

const RETRY_AFTER_ERROR_MS = 5_000;

export class BackgroundWorker {
  private readonly abort = new AbortController();
  /** Work a pass started without awaiting it (a delivery, a model call): awaited by `stop`. */
  private readonly tasks = new Set<Promise<unknown>>();
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  /** Set by `wake` during a pass: the next pass follows at once (a wake is never lost). */
  private woken = false;

  constructor(private readonly opts: BackgroundWorkerOptions) {}

  /** Aborted by `stop`: requests in flight (HTTP, the model) are cut short. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get stopping(): boolean {
    return this.abort.signal.aborted;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** New work, or a task finished: the next pass runs now (or right after the one in progress). */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** A task a pass started and did not await; it handles its own errors. */
  track(task: Promise<unknown>): void {
    this.tasks.add(task);
    const done = (): void => void this.tasks.delete(task);
    task.then(done, done);
  }

  /** Aborts what is in flight, ends the loop, and waits for the pass and the tracked tasks to settle. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.wake();
    await this.loop;
    await Promise.allSettled(this.tasks);
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      this.woken = false;
      let wait: number;
      try {
        wait = await this.opts.pass();
      } catch (err) {
        if (this.stopping) break;
        this.opts.logger.warn({ err }, 'background pass failed; will retry');
        wait = this.opts.retryAfterErrorMs ?? RETRY_AFTER_ERROR_MS;
      }
      if (this.stopping || this.woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => this.wakeUp?.(), Math.max(0, wait));
        this.wakeUp = () => {
          clearTimeout(timer);
          this.wakeUp = undefined;
          resolve();
        };
      });
    }
  }
}

// What keeps a runner reporter from ever failing the test command it reports on. A reporter runs
// inside the runner (Vitest, Jest, Playwright), which counts an exception thrown from a hook as an
// error of the run and exits 1 on an all-green suite: a runner version whose API differs from the
// one the reporter was written against (Vitest 3 has no `TestCase.artifacts()`) must cost at most
// some detail of the results, never the build. Every hook goes through `guardHook`: an error is
// logged once per hook (not once per test) and swallowed. The one error let through is the one
// `strict` asks for (ReportDeliveryError: the run could be neither delivered nor buffered).
import { ReportDeliveryError } from './send.js';

export type ReporterLog = (line: string) => void;

export const stderrLog: ReporterLog = (line) => void process.stderr.write(`flakehouse: ${line}\n`);

/** Remembers which hooks have already said they failed, so a run of 5,000 tests warns once per hook. */
export class HookGuard {
  private readonly warned = new Set<string>();

  constructor(
    private readonly runner: string,
    private readonly log: ReporterLog = stderrLog,
  ) {}

  /** Says `what` failed (once per `what`); never throws. */
  warn(what: string, err: unknown): void {
    if (this.warned.has(what)) return;
    this.warned.add(what);
    const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    try {
      this.log(`warning: the ${this.runner} reporter could not handle ${what} (${message}); the results it could read are still sent, and the test command's outcome is not changed`);
    } catch {
      // A closed stderr must not fail the run either.
    }
  }

  /** Runs a synchronous hook; an error is warned about and swallowed. */
  run<T>(what: string, fn: () => T): T | undefined {
    try {
      return fn();
    } catch (err) {
      this.warn(what, err);
      return undefined;
    }
  }

  /** Runs an asynchronous hook; an error is warned about and swallowed, except the one `strict` asked for. */
  async runAsync<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ReportDeliveryError) throw err;
      this.warn(what, err);
      return undefined;
    }
  }
}

/** `obj[name]()` when the runner's object has that method, else `fallback`: for APIs some versions lack. */
export function callIfPresent<T>(obj: object, name: string, fallback: T): T {
  const fn = (obj as Record<string, unknown>)[name];
  return typeof fn === 'function' ? (fn.call(obj) as T) : fallback;
}

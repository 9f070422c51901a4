// Small handles on a running test daemon: its log lines, and its worker held still.
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { createLogger } from '../../src/telemetry/logger.js';
import type { TestDaemon } from './daemon.js';

/** A logger at `info` whose lines (JSON text) collect in `lines`, for tests that assert on logs. */
export function captureLogs(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return { logger: createLogger('info', sink), lines };
}

/**
 * Holds the worker (no lease is processed while held) until the returned `release` is called;
 * `release` resolves once the worker is free again.
 */
export async function holdWorker(td: TestDaemon): Promise<() => Promise<void>> {
  let release = (): void => {};
  const held = new Promise<void>((r) => (release = r));
  let holding = (): void => {};
  const isHeld = new Promise<void>((r) => (holding = r));
  const worker = td.daemon.runtime.exclusive(async () => {
    holding();
    await held;
  });
  await isHeld;
  return async () => {
    release();
    await worker;
  };
}

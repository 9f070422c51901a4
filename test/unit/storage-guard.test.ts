// The door's storage check: free-space reserve, failed writes, probing, and one log line per transition.
import { describe, expect, it } from 'vitest';
import type { Logger } from 'pino';
import { StorageGuard } from '../../src/ingest/storage-guard.js';
import { ApiError } from '../../src/errors/catalogue.js';

function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (_obj: unknown, msg?: string) => void lines.push(`${level}: ${msg ?? ''}`);
  return { logger: { error: at('error'), warn: at('warn'), debug: () => {} } as unknown as Logger, lines };
}

function refusal(f: () => void): ApiError | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

describe('StorageGuard', () => {
  it('refuses with 507 below the reserve, re-reads free space once per interval, logs start and end once', () => {
    let free = 10;
    let reads = 0;
    const { logger, lines } = recordingLogger();
    const g = new StorageGuard({ dir: '/data', minFreeBytes: 100, logger, recheckMs: 1000, freeBytes: () => (reads++, free) });
    const e = refusal(() => g.check(0));
    expect(e?.statusCode).toBe(507);
    expect(e?.code).toBe('insufficient_storage');
    expect(e?.message).toContain('SERVICE_MIN_FREE_BYTES');
    for (let t = 1; t < 1000; t += 100) expect(refusal(() => g.check(t))?.statusCode).toBe(507);
    expect(reads).toBe(1);
    expect(g.status(500)).toMatchObject({ state: 'full', freeBytes: 10 });
    free = 1000;
    expect(refusal(() => g.check(999))?.statusCode).toBe(507); // the reading still stands
    expect(refusal(() => g.check(1000))).toBeUndefined();
    expect(reads).toBe(2);
    expect(g.status(1500).state).toBe('ok');
    expect(lines.filter((l) => l.startsWith('error'))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith('warn'))).toHaveLength(1);
  });

  it('after a failed write: refused, one probe per interval, cleared by a successful write', () => {
    const { logger, lines } = recordingLogger();
    const g = new StorageGuard({ dir: '/data', minFreeBytes: 0, logger, recheckMs: 1000 });
    expect(refusal(() => g.check())).toBeUndefined();
    g.writeFailed(Object.assign(new Error('No space left on device'), { code: 28 }));
    g.writeFailed(new Error('No space left on device')); // the same condition: no second log line
    expect(refusal(() => g.check())?.statusCode).toBe(507);
    expect(g.status().state).toBe('full');
    expect(g.status().reason).toContain('No space left on device');
    // Once the interval has passed, one request goes through to try the write; the next is refused again.
    const later = Date.now() + 1000;
    expect(refusal(() => g.check(later))).toBeUndefined();
    expect(refusal(() => g.check(later + 1))?.statusCode).toBe(507);
    g.writeSucceeded();
    expect(refusal(() => g.check(later + 2))).toBeUndefined();
    expect(g.status().state).toBe('ok');
    expect(lines).toEqual([expect.stringMatching(/^error: storage full/), expect.stringMatching(/^warn: storage available again/)]);
  });

  it('clears a failed write as soon as the queue reports room (the worker drained it)', () => {
    let room = false;
    const g = new StorageGuard({ dir: '/data', minFreeBytes: 0, queueHasRoom: () => room });
    g.writeFailed(new Error('the queue is full'));
    expect(refusal(() => g.check())?.statusCode).toBe(507);
    room = true;
    expect(g.status().state).toBe('ok');
    expect(refusal(() => g.check())).toBeUndefined();
  });
});

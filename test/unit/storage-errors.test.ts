// isOutOfSpace on the failures observed when a real disk fills under the queue (tmpfs, lmdb 3.5).
import { describe, expect, it } from 'vitest';
import { isOutOfSpace } from '../../src/domain/storage-errors.js';

describe('isOutOfSpace', () => {
  it("recognizes lmdb's full-disk error, the queue's byte cap, and the queue's wrapping of both", () => {
    // As lmdb's write thread reports it (numeric errno, so the message is what tells).
    const lmdb = Object.assign(new Error('No space left on device: Attempting to write page at position 30203904, size 45056, blocks 1, buffer sizes 45056 4096 0'), { code: 28 });
    expect(isOutOfSpace(lmdb)).toBe(true);
    expect(isOutOfSpace(new Error('queue write failed: x', { cause: lmdb }))).toBe(true);
    expect(isOutOfSpace(Object.assign(new Error('the queue is full'), { code: 'QUEUE_MAX_BYTES' }))).toBe(true);
    // An EIO is not out of space by itself (the queue names it ENOSPC only when statfs shows a full disk).
    expect(isOutOfSpace(Object.assign(new Error('Input/output error'), { code: 5 }))).toBe(false);
    expect(isOutOfSpace(Object.assign(new Error('Commit failed (see commitError for details)'), { commitError: Promise.resolve() }))).toBe(false);
    expect(isOutOfSpace(Object.assign(new Error('some other error'), { code: 28 }))).toBe(false);
  });
});

// Whether ingest may write: a new batch is answered 507 while the data dir's disk is below its
// reserve (SERVICE_MIN_FREE_BYTES) or after a durable write failed for lack of space, and ingest
// opens again by itself when space returns: the disk is re-read (a failed write's verdict too,
// against the free space it met), so /health shows the space coming back without waiting for a
// write. The condition is logged when it starts and when it clears, not per request.
import { statfsSync } from 'node:fs';
import type { Logger } from 'pino';
import { errors } from '../errors/catalogue.js';

export interface StorageStatus {
  /** `full`: ingest answers 507 insufficient_storage until space returns. */
  state: 'ok' | 'full';
  reason?: string;
  /** ISO time the condition started. */
  since?: string;
  /** Free bytes on the data dir's filesystem at the last check (absent when the reserve is off and no write met a full disk). */
  freeBytes?: number;
}

export interface StorageGuardOptions {
  /** The data dir: its filesystem is the one checked. */
  dir: string;
  /** Free bytes below which ingest is refused; 0 turns the disk check off. */
  minFreeBytes: number;
  logger?: Logger;
  /** How long a free-space reading and a failed write's verdict stand before being checked again (ms). */
  recheckMs?: number;
  /** Whether the queue has room again after a failed write (its byte cap); true when unknown. */
  queueHasRoom?: () => boolean;
  /** For tests: free bytes of `dir`. */
  freeBytes?: (dir: string) => number;
}

/** Space freed since a write failed on the disk that says it came back (the failed batch is not known here). */
const SPACE_RETURNED_BYTES = 1024 * 1024;

function statfsFree(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

export class StorageGuard {
  private readonly recheckMs: number;
  private readonly freeOf: (dir: string) => number;
  /** From the last free-space reading: the reason ingest is refused, or null. */
  private lowDisk: string | null = null;
  private free: number | undefined;
  private checkedAt = Number.NEGATIVE_INFINITY;
  /** From a write that failed for lack of space: the reason, until a write succeeds or space returns. */
  private writeFull: string | null = null;
  /**
   * Free bytes when that write failed on the disk (not the queue's byte cap, which queueHasRoom
   * answers): space has returned once the disk has SPACE_RETURNED_BYTES more. Undefined when the
   * disk could not be read; then only a write (the probe) tells.
   */
  private freeAtFailure: number | undefined;
  private probeAt = 0;
  private since: number | undefined;

  constructor(private readonly opts: StorageGuardOptions) {
    this.recheckMs = opts.recheckMs ?? 1000;
    this.freeOf = opts.freeBytes ?? statfsFree;
  }

  /**
   * At the door, synchronously: throws 507 while storage is full. After a failed write one request
   * per `recheckMs` is let through (or all, once the queue reports room): its write is the test of
   * whether space came back.
   */
  check(now = Date.now()): void {
    this.refresh(now);
    if (this.lowDisk !== null) throw errors.insufficientStorage(this.lowDisk);
    if (this.writeFull !== null) {
      if (this.opts.queueHasRoom?.() === true) this.cleared();
      else if (now - this.probeAt < this.recheckMs) throw errors.insufficientStorage(this.writeFull);
      else this.probeAt = now;
    }
  }

  /** A durable write failed for lack of space (isOutOfSpace). */
  writeFailed(err: unknown, now = Date.now()): void {
    this.probeAt = now;
    // Each failure sets the mark again: space must come back relative to the latest.
    const capped = typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'QUEUE_MAX_BYTES';
    this.freeAtFailure = capped ? undefined : this.readFree(now);
    if (this.writeFull !== null) return;
    const detail = err instanceof Error ? err.message : String(err);
    this.writeFull = `the queue could not store the batch: ${detail}`;
    this.changed();
  }

  writeSucceeded(): void {
    if (this.writeFull !== null) this.cleared();
  }

  status(now = Date.now()): StorageStatus {
    this.refresh(now);
    if (this.writeFull !== null && this.opts.queueHasRoom?.() === true) this.cleared();
    const reason = this.lowDisk ?? this.writeFull;
    return {
      state: reason === null ? 'ok' : 'full',
      ...(reason !== null ? { reason } : {}),
      ...(this.since !== undefined ? { since: new Date(this.since).toISOString() } : {}),
      ...(this.free !== undefined ? { freeBytes: this.free } : {}),
    };
  }

  private cleared(): void {
    this.writeFull = null;
    this.freeAtFailure = undefined;
    // Without a reserve nothing reads the disk any more: a reading kept would go stale.
    if (this.opts.minFreeBytes <= 0) this.free = undefined;
    this.changed();
  }

  /**
   * Re-reads free space at most once per `recheckMs` (statfs stays off the hot path), when the
   * reserve is on or a write met a full disk: the reading both moves the reserve's verdict and ends
   * a failed write's once the space it lacked is back.
   */
  private refresh(now: number): void {
    const mark = this.writeFull !== null ? this.freeAtFailure : undefined;
    if ((this.opts.minFreeBytes <= 0 && mark === undefined) || now - this.checkedAt < this.recheckMs) return;
    const free = this.readFree(now);
    // A failing statfs says nothing about space; the write itself still reports a full disk.
    this.lowDisk =
      free !== undefined && this.opts.minFreeBytes > 0 && free < this.opts.minFreeBytes
        ? `${free} bytes free on the data dir's disk, below the ${this.opts.minFreeBytes}-byte reserve (SERVICE_MIN_FREE_BYTES)`
        : null;
    if (mark !== undefined && free !== undefined && free >= mark + SPACE_RETURNED_BYTES) this.cleared();
    else this.changed();
  }

  /** Free bytes of the data dir's disk now (kept for status), or undefined when statfs fails. */
  private readFree(now: number): number | undefined {
    this.checkedAt = now;
    try {
      this.free = this.freeOf(this.opts.dir);
      return this.free;
    } catch (err) {
      this.opts.logger?.debug({ err }, 'free-space check failed');
      this.free = undefined;
      return undefined;
    }
  }

  /** Logs the transitions only: once when storage fills up, once when it clears. */
  private changed(): void {
    const reason = this.lowDisk ?? this.writeFull;
    if (reason !== null && this.since === undefined) {
      this.since = Date.now();
      this.opts.logger?.error({ reason, dataDir: this.opts.dir }, 'storage full: ingest answers 507 insufficient_storage until space returns');
    } else if (reason === null && this.since !== undefined) {
      this.opts.logger?.warn({ fullForMs: Date.now() - this.since }, 'storage available again: ingest accepted');
      this.since = undefined;
    }
  }
}

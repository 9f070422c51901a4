// Runs that could not be delivered, kept in SERVICE_BUFFER_DIR and replayed by the next
// invocation. An entry holds the exact request bodies, so a replay repeats the idempotency key
// and span ids and the server stores the run once however often it arrives. Tokens are never
// written: a replay uses the token of the invocation that replays it.
//
// Concurrency: an entry is claimed by renaming it (atomic within a directory), so two reporters
// on one machine (parallel shards) never replay the same file at once; a claim left behind by a
// killed process is taken back after STALE_CLAIM_MS.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Transport } from './settings.js';

export interface BufferedRequest {
  /** Path below the endpoint, e.g. `/v1/traces`. */
  path: string;
  contentType: string;
  contentEncoding?: string;
  bodyBase64: string;
}

export interface BufferEntry {
  version: 1;
  idempotencyKey: string;
  /** Where it was meant to go; replayed only to the same endpoint and project. */
  endpoint: string;
  project: string | null;
  transport: Transport;
  executions: number;
  createdAt: string;
  /** Why it was buffered (the last delivery error). */
  reason: string;
  requests: BufferedRequest[];
}

export interface ClaimedEntry {
  entry: BufferEntry;
  /** The claimed file (renamed from the entry file). */
  file: string;
  /** The entry file name to restore on release. */
  original: string;
}

const ENTRY_SUFFIX = '.run.json';
const CLAIM_MARK = '.claimed-';
const REJECTED_SUFFIX = '.rejected.json';
const STALE_CLAIM_MS = 10 * 60_000;

export class RunBuffer {
  constructor(readonly dir: string) {}

  /** Writes an entry atomically (temp file + rename), readable by the owner only. */
  write(entry: BufferEntry): string {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const name = `${String(Date.now()).padStart(14, '0')}-${safeName(entry.idempotencyKey)}-${randomBytes(3).toString('hex')}${ENTRY_SUFFIX}`;
    const file = path.join(this.dir, name);
    const tmp = `${file}.tmp-${process.pid}`;
    fs.writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
    fs.renameSync(tmp, file);
    return file;
  }

  /** Entry files waiting, oldest first (stale claims are released first). */
  pending(now: number = Date.now()): string[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    for (const n of names) {
      const i = n.indexOf(CLAIM_MARK);
      if (i < 0 || !n.slice(0, i).endsWith(ENTRY_SUFFIX)) continue;
      const file = path.join(this.dir, n);
      const mtime = fs.statSync(file, { throwIfNoEntry: false })?.mtimeMs;
      if (mtime !== undefined && now - mtime > STALE_CLAIM_MS) tryRename(file, path.join(this.dir, n.slice(0, i)));
    }
    return fs
      .readdirSync(this.dir)
      .filter((n) => n.endsWith(ENTRY_SUFFIX))
      .sort()
      .map((n) => path.join(this.dir, n));
  }

  /**
   * Claims one entry file. Undefined when another process claimed it first. An unreadable entry
   * is set aside as rejected (returned as `corrupt`) rather than retried forever.
   */
  claim(file: string): ClaimedEntry | { corrupt: string } | undefined {
    const claimed = `${file}${CLAIM_MARK}${process.pid}-${randomBytes(3).toString('hex')}`;
    if (!tryRename(file, claimed)) return undefined;
    // The rename keeps the old mtime; touching marks when the claim was taken.
    const now = new Date();
    fs.utimesSync(claimed, now, now);
    try {
      const entry = JSON.parse(fs.readFileSync(claimed, 'utf8')) as BufferEntry;
      if (entry.version !== 1 || !Array.isArray(entry.requests)) throw new Error('unknown entry format');
      return { entry, file: claimed, original: file };
    } catch (err) {
      const rejected = file.slice(0, -ENTRY_SUFFIX.length) + REJECTED_SUFFIX;
      tryRename(claimed, rejected);
      return { corrupt: `${rejected} (${err instanceof Error ? err.message : String(err)})` };
    }
  }

  /** Puts a claimed entry back for a later invocation. */
  release(claim: ClaimedEntry): void {
    tryRename(claim.file, claim.original);
  }

  /** Delivered: gone for good. */
  complete(claim: ClaimedEntry): void {
    fs.rmSync(claim.file, { force: true });
  }

  /** Refused by the server for good (e.g. 400): kept aside for a person, never replayed. Returns where. */
  reject(claim: ClaimedEntry): string {
    const rejected = claim.original.slice(0, -ENTRY_SUFFIX.length) + REJECTED_SUFFIX;
    tryRename(claim.file, rejected);
    return rejected;
  }
}

function tryRename(from: string, to: string): boolean {
  try {
    fs.renameSync(from, to);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

function safeName(key: string): string {
  return key.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80);
}

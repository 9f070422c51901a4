import { createHash, randomBytes } from 'node:crypto';

/** UUIDv7: time-ordered, so queue keys sort in arrival order without decoding values. */
export function uuidv7(now = Date.now()): string {
  const b = randomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return formatUuid(b);
}

/** A stable id rendered as a UUID (v8 layout): the same parts always give the same id. */
export function stableUuid(...parts: string[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\u0000');
  const b = h.digest().subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return formatUuid(b);
}

function formatUuid(b: Buffer): string {
  const hex = b.toString('hex');
  // join() makes one flat string. A template literal makes a tree of string pieces, which every
  // kept id (test ids in the worker's caches) holds on to: ~475 bytes an id in a Map against ~175.
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20, 32)].join('-');
}

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

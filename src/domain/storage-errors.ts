// Out-of-space failures are the machine's condition, not the job's: a job that meets one is not
// charged an attempt, split or dead-lettered, and the door answers 507 until space returns.

/** Error codes and messages by which LMDB, Node's fs and ClickHouse say the disk or map is full. */
const OUT_OF_SPACE_CODES = new Set(['ENOSPC', 'EDQUOT', 'MDB_MAP_FULL', 'NOT_ENOUGH_SPACE', 'QUEUE_MAX_BYTES']);
// lmdb's write thread reports a full disk with a numeric errno, which other libraries' numeric
// codes could collide with, so its message is what matches: `{ code: 28, message: "No space left
// on device: Attempting to write page at position …" }` (also "mdb_page_spill error 28" on stderr).
// QUEUE_MAX_BYTES: the embedded queue's own cap (SERVICE_QUEUE_MAX_BYTES).
const OUT_OF_SPACE_TEXT = /\b(ENOSPC|EDQUOT|MDB_MAP_FULL|NOT_ENOUGH_SPACE|No space left on device|Disk quota exceeded|Cannot reserve [\d.]+ \w+, not enough space|MDB_MAP_FULL: Environment mapsize limit reached)\b/i;

/** True when `err` (or its cause) says the storage ran out of space. */
export function isOutOfSpace(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e != null && depth < 5; depth++) {
    if (typeof e === 'object') {
      const { code, message, cause } = e as { code?: unknown; message?: unknown; cause?: unknown };
      if (typeof code === 'string' && OUT_OF_SPACE_CODES.has(code)) return true;
      if (typeof message === 'string' && OUT_OF_SPACE_TEXT.test(message)) return true;
      e = cause;
    } else {
      return typeof e === 'string' && OUT_OF_SPACE_TEXT.test(e);
    }
  }
  return false;
}

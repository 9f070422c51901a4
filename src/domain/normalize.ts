// Input clean-up before identity: receivers differ in separators and blanks; the rows we store and
// the fingerprints we compute should not.
import type { ExecutionInput } from './batch.js';

const MAX_TITLE = 2000;
const MAX_MESSAGE = 4000;
const MAX_STACK = 32_000;

export function normalizeExecution(e: ExecutionInput): ExecutionInput {
  const out: ExecutionInput = {
    ...e,
    filePath: e.filePath.trim().replace(/\\/g, '/').replace(/^(\.\/)+/, ''),
    suite: e.suite.trim(),
    title: e.title.trim().slice(0, MAX_TITLE),
    durationMs: Math.max(0, Math.round(e.durationMs)),
    attempt: Math.max(1, Math.trunc(e.attempt)),
  };
  if (e.error) {
    out.error = {
      ...e.error,
      message: e.error.message.slice(0, MAX_MESSAGE),
      ...(e.error.stack !== undefined ? { stack: e.error.stack.slice(0, MAX_STACK) } : {}),
    };
  }
  return out;
}

// Input clean-up before identity: receivers differ in separators and blanks; the rows we store and
// the fingerprints we compute should not.
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { keepExecutions } from './keep-executions.js';

const MAX_TITLE = 2000;
const MAX_MESSAGE = 4000;
const MAX_STACK = 32_000;

/**
 * Cleans one execution in place (the worker owns the decoded batch; copying every execution would
 * double the garbage on the hot path) and returns it.
 */
export function normalizeExecution(e: ExecutionInput): ExecutionInput {
  if (e.filePath.includes('\\') || e.filePath.startsWith('./') || e.filePath !== e.filePath.trim()) {
    e.filePath = e.filePath.trim().replace(/\\/g, '/').replace(/^(\.\/)+/, '');
  }
  e.suite = e.suite.trim();
  e.title = e.title.trim();
  if (e.title.length > MAX_TITLE) e.title = e.title.slice(0, MAX_TITLE);
  e.durationMs = Math.max(0, Math.round(e.durationMs));
  e.attempt = Math.max(1, Math.trunc(e.attempt));
  if (e.error) {
    if (e.error.message.length > MAX_MESSAGE) e.error.message = e.error.message.slice(0, MAX_MESSAGE);
    if (e.error.stack !== undefined && e.error.stack.length > MAX_STACK) e.error.stack = e.error.stack.slice(0, MAX_STACK);
  }
  return e;
}

/**
 * Leaves out executions whose file is ignored (service.yml `ignore`), keeping `retryOfIndex`
 * pointing at the same executions (a retry of a dropped execution loses its link).
 */
export function dropIgnored(executions: ExecutionInput[], isIgnored: (filePath: string) => boolean): ExecutionInput[] {
  return keepExecutions(executions, executions.map((e) => !isIgnored(e.filePath)));
}

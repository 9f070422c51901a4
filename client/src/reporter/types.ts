// What a reporter hands to sendRun; its own module so the run builders (collect, junit-to-run) need not import the sender.
import type { BatchResource, ExecutionInput } from '../contract/batch.js';

export interface ReporterRun {
  /** Canonical shape from client/src/contract/batch.ts (times in epoch ms); artifacts[].path = local file path. */
  executions: ExecutionInput[];
  startedAt: number;
  finishedAt?: number;
  /** Optional overrides of what CI detection finds. */
  resource?: Partial<BatchResource>;
  /** Directory the tests ran from: where CODEOWNERS lookup starts and relative paths resolve. */
  rootDir?: string;
}

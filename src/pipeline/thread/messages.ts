// Control messages between the main thread and the pipeline thread (besides the RPC calls).
import type { DomainEvent } from '../../domain/events.js';
import type { WorkerStats } from '../runtime.js';

export type ToMain =
  | { kind: 'ready' }
  | { kind: 'fatal'; message: string }
  | { kind: 'log'; line: string }
  | { kind: 'event'; event: DomainEvent }
  | { kind: 'stats'; stats: WorkerStats }
  | { kind: 'paused'; id: number }
  | { kind: 'stopped' };

export type ToWorker = { kind: 'shutdown' } | { kind: 'pause'; id: number } | { kind: 'resume'; id: number };

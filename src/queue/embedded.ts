// The embedded, durable queue of `flakehouse serve`: the queue engine (./engine.ts) on LMDB under
// the data dir (./lmdb-storage.ts), owned by one process.
import { QueueEngine, type QueueEngineOptions } from './engine.js';
import { LmdbStorage } from './lmdb-storage.js';

export interface EmbeddedQueueOptions extends QueueEngineOptions {
  /** The LMDB environment's directory. */
  path: string;
}

export type EmbeddedQueue = QueueEngine;

export const EmbeddedQueue = {
  open({ path, ...opts }: EmbeddedQueueOptions): EmbeddedQueue {
    return QueueEngine.open(new LmdbStorage(path), opts);
  },
};

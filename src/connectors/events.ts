// `events` connector: the domain events of an executions pipeline, delivered (through the durable
// outbox, after the lease commits) into an events pipeline.
import { z } from 'zod';
import type { ConnectorFactory } from '../pipeline/component.js';

export const eventsConnectorFactory: ConnectorFactory<Record<string, never>> = {
  kind: 'connector',
  type: 'events',
  // The events go through the queue's outbox (lmdb); what consumes them may need the store.
  needsStore: false,
  description: 'domain events out of the executions pipeline, into an events pipeline, via the outbox',
  from: 'executions',
  to: 'events',
  configSchema: z.object({}).strict(),
  // Always passes on one `run.processed` per job, built from its run.
  requires: ['runs'],
};

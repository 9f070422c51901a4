// `debug` exporter, as in the OpenTelemetry Collector: logs what reaches it.
import { z } from 'zod';
import { defineExporter } from '../pipeline/helpers/exporter.js';

const config = z.object({ verbosity: z.enum(['basic', 'detailed']).default('basic') }).strict();

export const debugExporterFactory = defineExporter({
  type: 'debug',
  needsStore: false,
  description: 'logs events (basic: type and ids at debug level; detailed: the payload)',
  configSchema: config,
  // Executions pipelines: logs the runs (and counts whatever executions there are).
  requires: ['runs'],
  startEvents: (_host, cfg, { logger }) => ({
    async exportEvent(event) {
      if (cfg.verbosity === 'detailed') logger.info({ event }, 'event');
      else logger.debug({ type: event.type, id: event.id, projectId: event.projectId }, 'event');
    },
  }),
  startExecutions: (_host, cfg, { logger }) => ({
    async exportBatch(batch) {
      const executions = batch.items.reduce((n, i) => n + i.executions.length, 0);
      if (cfg.verbosity === 'detailed') logger.info({ lease: batch.leaseId, runs: batch.items.map((i) => i.run) }, 'batch');
      else logger.debug({ lease: batch.leaseId, runs: batch.items.length, executions }, 'batch');
    },
  }),
});

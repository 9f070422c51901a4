// `attributes` processor: set, rename, hash, delete execution attributes, and map a CI's own
// attribute keys into the batch's resource (src/domain/attribute-actions.ts). Before identity, so
// the run's resource (commit, branch) is final when identity and scoring read it.
import { z } from 'zod';
import { applyAttributeActions, mapResource, RESOURCE_TARGETS, type AttributeAction } from '../domain/attribute-actions.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import { Yielder } from '../pipeline/yield.js';

const key = z.string().min(1);

const actionSchema = z.discriminatedUnion('action', [
  z.object({ action: z.literal('set'), key, value: z.union([z.string(), z.number(), z.boolean()]) }).strict(),
  z.object({ action: z.literal('rename'), from: key, to: key }).strict(),
  z.object({ action: z.literal('hash'), key }).strict(),
  z.object({ action: z.literal('delete'), key }).strict(),
  z.object({ action: z.literal('map'), from: key, to: z.enum(RESOURCE_TARGETS), overwrite: z.boolean().optional() }).strict(),
]);

export const attributesConfigSchema = z.object({ actions: z.array(actionSchema).min(1) }).strict();

export const attributesProcessorFactory = defineProcessor({
  type: 'attributes',
  needsStore: false,
  description: 'sets, renames, hashes (sha256) and deletes execution attributes; maps CI attributes into resource fields',
  configSchema: attributesConfigSchema,
  // Rewrites the decoded jobs and their runs: the order check puts it before identity, which reads them.
  requires: ['runs'],
  provides: ['runs'],
  start: (_host, config) => {
    const actions: readonly AttributeAction[] = config.actions;
    const maps = actions.some((a) => a.action === 'map');
    return {
      async processBatch(batch) {
        const y = new Yielder();
        for (const item of batch.items) {
          const b = item.job.batch;
          if (maps) {
            const resource = mapResource(b.resource, b.executions, actions);
            if (resource !== b.resource) {
              // The run was built over the batch's resource; both carry the mapped one (its id and
              // counts do not depend on the resource, so it is not rebuilt).
              b.resource = resource;
              item.run = { ...item.run, resource };
            }
          }
          for (const e of b.executions) applyAttributeActions(e, actions);
          await y.tick(b.executions.length);
        }
      },
    };
  },
});

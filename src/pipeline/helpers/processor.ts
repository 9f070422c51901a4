// `defineProcessor`, after the Collector's processorhelper: an executions processor is written as
// what it does once started. The helper builds the factory and the component around it, so a
// processor has no "used before start" guard of its own, no empty shutdown, and keeps its state
// (repositories, caches) in the closure `start` returns instead of in variables that start fills in.
import type { z } from 'zod';
import type { CreateSettings, ExecutionsProcessor, Host, ProcessorFactory, SlotDeclaration } from '../component.js';
import type { WorkBatch } from '../work-batch.js';

/** A started processor: what it does with each lease. */
export interface RunningProcessor {
  processBatch(batch: WorkBatch): Promise<void>;
  /** Once the lease is committed (acked): the place to update caches of stored state. */
  committed?(batch: WorkBatch): void;
  shutdown?(): Promise<void>;
}

export interface ProcessorDefinition<C> extends SlotDeclaration {
  type: string;
  description: string;
  configSchema: z.ZodType<C>;
  /** Whether it uses the store (ProcessorFactory `needsStore`; undeclared: it does). */
  needsStore?: boolean;
  /** Called once, with the host and the validated config, before the first lease. */
  start(host: Host, config: C, settings: CreateSettings): RunningProcessor | Promise<RunningProcessor>;
}

export function defineProcessor<C>(def: ProcessorDefinition<C>): ProcessorFactory<C> {
  return {
    kind: 'processor',
    type: def.type,
    description: def.description,
    signals: ['executions'],
    configSchema: def.configSchema,
    requires: def.requires ?? [],
    provides: def.provides ?? [],
    ...(def.needsStore !== undefined ? { needsStore: def.needsStore } : {}),
    createExecutions: (config, settings): ExecutionsProcessor => {
      let running: RunningProcessor | undefined;
      return {
        async start(host) {
          running = await def.start(host, config, settings);
        },
        async shutdown() {
          await running?.shutdown?.();
        },
        async processBatch(batch) {
          // The runtime starts every component before the first lease; this is a wiring bug.
          if (!running) throw new Error(`${def.type} processor used before start`);
          await running.processBatch(batch);
        },
        committed(batch) {
          running?.committed?.(batch);
        },
      };
    },
  };
}

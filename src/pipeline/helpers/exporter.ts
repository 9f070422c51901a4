// `defineExporter`, after the Collector's exporterhelper: an exporter is written as what it does
// once started. The helper builds the factory and the component around it, so an exporter has no
// "used before start" guard of its own, no empty shutdown, and fields its start fills in are
// plain constructor-set fields. Returning null from a start says the exporter is off (not
// configured): it then takes every event as delivered. Pairs with helpers/background-worker.ts.
import type { z } from 'zod';
import type { DomainEvent } from '../../domain/events.js';
import type { CreateSettings, EventsExporter, ExecutionsExporter, ExporterFactory, Host, Signal, Slot } from '../component.js';
import type { WorkBatch } from '../work-batch.js';
import type { LeaseSink } from '../lease-sink.js';

/** A started events exporter. Delivery is at-least-once: it must tolerate an event id twice. */
export interface RunningEventsExporter {
  exportEvent(event: DomainEvent): Promise<void>;
  shutdown?(): Promise<void>;
}

/**
 * A started executions exporter. Must be idempotent per lease (a frozen lease is exported again
 * after a crash): it writes to the store through `sink` (../lease-sink.ts), which names each insert
 * with the lease's deduplication token and records that the lease wrote.
 */
export interface RunningExecutionsExporter {
  exportBatch(batch: WorkBatch, sink: LeaseSink): Promise<void>;
  shutdown?(): Promise<void>;
}

type Started<R> = R | null | Promise<R | null>;

export interface ExporterDefinition<C> {
  type: string;
  description: string;
  configSchema: z.ZodType<C>;
  /** The WorkBatch slots `exportBatch` reads (src/pipeline/component.ts `Slot`); none by default. */
  requires?: readonly Slot[];
  /** Whether it uses the store (ExporterFactory `needsStore`; undeclared: it does). */
  needsStore?: boolean;
  /** The events signal: called once, with the host and the validated config, before the first event. */
  startEvents?: (host: Host, config: C, settings: CreateSettings) => Started<RunningEventsExporter>;
  /** The executions signal: called once, before the first lease. */
  startExecutions?: (host: Host, config: C, settings: CreateSettings) => Started<RunningExecutionsExporter>;
}

export function defineExporter<C>(def: ExporterDefinition<C>): ExporterFactory<C> {
  const signals: Signal[] = [];
  if (def.startEvents) signals.push('events');
  if (def.startExecutions) signals.push('executions');
  const factory: ExporterFactory<C> = {
    kind: 'exporter',
    type: def.type,
    description: def.description,
    signals,
    configSchema: def.configSchema,
    requires: def.requires ?? [],
    ...(def.needsStore !== undefined ? { needsStore: def.needsStore } : {}),
  };
  const startEvents = def.startEvents;
  if (startEvents) {
    factory.createEvents = (config, settings): EventsExporter => {
      const life = lifecycle(def.type, (host) => startEvents(host, config, settings));
      return {
        start: (host) => life.start(host),
        shutdown: () => life.shutdown(),
        async exportEvent(event) {
          await life.running()?.exportEvent(event);
        },
      };
    };
  }
  const startExecutions = def.startExecutions;
  if (startExecutions) {
    factory.createExecutions = (config, settings): ExecutionsExporter => {
      const life = lifecycle(def.type, (host) => startExecutions(host, config, settings));
      return {
        start: (host) => life.start(host),
        shutdown: () => life.shutdown(),
        async exportBatch(batch, sink) {
          await life.running()?.exportBatch(batch, sink);
        },
      };
    };
  }
  return factory;
}

function lifecycle<R extends { shutdown?(): Promise<void> }>(type: string, start: (host: Host) => Started<R>) {
  /** undefined: not started; null: started and off. */
  let running: R | null | undefined;
  return {
    async start(host: Host): Promise<void> {
      running = await start(host);
    },
    async shutdown(): Promise<void> {
      await running?.shutdown?.();
    },
    running(): R | null {
      // The runtime starts every component before the first lease or event; this is a wiring bug.
      if (running === undefined) throw new Error(`${type} exporter used before start`);
      return running;
    },
  };
}

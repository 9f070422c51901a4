// The component model, after the OpenTelemetry Collector: each component type has a factory with a
// zod config schema (defaults included) that creates an instance with start/shutdown. The pipeline
// YAML is the one place that wires instances together.
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { DomainEvent } from '../domain/events.js';
import type { Outbox } from '../queue/types.js';
import type { Store } from '../store/client.js';
import type { ServiceConfig } from '../config/service-yml.js';
import type { ResolvedServiceConfig } from '../config/project-settings.js';
import type { NotificationSettings, TrackerSettings } from '../config/integrations.js';
import type { AiSettings } from '../config/ai.js';
import type { IngestService } from '../api/ingest-service.js';
import type { AnyRouteDef } from '../api/route.js';
import type { WorkBatch } from './work-batch.js';

/** The data a pipeline carries: batches of executions, or domain events. */
export type Signal = 'executions' | 'events';
export const SIGNALS: readonly Signal[] = ['executions', 'events'];

export type ComponentKind = 'receiver' | 'processor' | 'exporter' | 'connector';

export interface Host {
  logger: Logger;
  store: Store;
  /** The resolved service.yml + environment policy (flaky, quarantine, ignore, …), without any project's settings. */
  service: ServiceConfig;
  /** One project's policy: service.yml < its settings < environment, each key with its source
   * (config/resolved-project-config.ts). Per-project stages read policy here, not from `service`. */
  projectConfig(projectId: string): Promise<ResolvedServiceConfig>;
  /** SERVICE_CLUSTER_THRESHOLD. */
  clusterThreshold?: number;
  /** Present in roles that serve HTTP (serve, api): where receivers add their routes. */
  http?: { add(def: AnyRouteDef): void };
  /** Present in roles that accept ingest (serve, api). */
  ingest?: IngestService;
  /** The data directory: best-effort stages (notify, tracker) keep their durable state under it. */
  dataDir?: string;
  /** Notification channels from the environment, SMTP and the SSRF allowance. */
  notifications?: NotificationSettings;
  /** Issue-tracker credentials and target. */
  tracker?: TrackerSettings;
  /** AI provider settings; absent when SERVICE_AI_PROVIDER is unset (RCA off). */
  ai?: AiSettings;
  /** For events that happen outside a lease (an RCA finished, a budget ran out): appended durably. */
  outbox?: Pick<Outbox, 'append'>;
}

export interface Component {
  start(host: Host): Promise<void>;
  shutdown(): Promise<void>;
}

// The work batch (a lease as processors enrich it) and its typed outputs: ./work-batch.ts.
export { WorkBatch, type TestUpdate, type WorkItem } from './work-batch.js';

export interface ExecutionsProcessor extends Component {
  processBatch(batch: WorkBatch): Promise<void>;
  /** Called once the lease is committed (acked): the place to update caches of stored state. */
  committed?(batch: WorkBatch): void;
}

export interface ExecutionsExporter extends Component {
  /** Must be idempotent per lease: a frozen lease is exported again after a crash. */
  exportBatch(batch: WorkBatch): Promise<void>;
}

export interface EventsProcessor extends Component {
  /** Returns the event to pass on, or null to drop it. */
  processEvent(event: DomainEvent): Promise<DomainEvent | null>;
}

export interface EventsExporter extends Component {
  /** Delivery is at-least-once: an exporter must tolerate seeing an event id twice. */
  exportEvent(event: DomainEvent): Promise<void>;
}

export type Receiver = Component;

export interface CreateSettings {
  id: string;
  logger: Logger;
}

interface FactoryBase<C> {
  type: string;
  configSchema: z.ZodType<C>;
  description: string;
}

export interface ReceiverFactory<C = unknown> extends FactoryBase<C> {
  kind: 'receiver';
  signals: readonly Signal[];
  create(config: C, settings: CreateSettings): Receiver;
}

export interface ProcessorFactory<C = unknown> extends FactoryBase<C> {
  kind: 'processor';
  signals: readonly Signal[];
  createExecutions?(config: C, settings: CreateSettings): ExecutionsProcessor;
  createEvents?(config: C, settings: CreateSettings): EventsProcessor;
}

export interface ExporterFactory<C = unknown> extends FactoryBase<C> {
  kind: 'exporter';
  signals: readonly Signal[];
  createExecutions?(config: C, settings: CreateSettings): ExecutionsExporter;
  createEvents?(config: C, settings: CreateSettings): EventsExporter;
}

/** A connector is an exporter in one pipeline and a receiver in another. */
export interface ConnectorFactory<C = unknown> extends FactoryBase<C> {
  kind: 'connector';
  from: Signal;
  to: Signal;
}

export type AnyFactory = ReceiverFactory | ProcessorFactory | ExporterFactory | ConnectorFactory;

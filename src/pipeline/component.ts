// The component model, after the OpenTelemetry Collector: each component type has a factory with a
// zod config schema (defaults included) that creates an instance with start/shutdown. The pipeline
// YAML is the one place that wires instances together.
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { DomainEvent } from '../domain/events.js';
import type { IngestBatch, IngestSource } from '../../client/src/contract/batch.js';
import type { EnqueueResult, Outbox } from '../queue/types.js';
import type { Repositories } from '../store/repositories.js';
import type { ServiceConfig } from '../config/service-yml.js';
import type { ResolvedServiceConfig } from '../../client/src/contract/config/project-settings.js';
import type { ServerSettings } from '../config/daemon-env.js';
import type { ListenerDoor } from '../ingest/door.js';
import type { WorkBatch } from './work-batch.js';
import type { LeaseSink } from './lease-sink.js';
import type { StorageClient, StorageKey } from './storage.js';

/** The data a pipeline carries: batches of executions, or domain events. */
export type Signal = 'executions' | 'events';
export const SIGNALS: readonly Signal[] = ['executions', 'events'];

export type ComponentKind = 'receiver' | 'processor' | 'exporter' | 'connector';

// The stages of an executions pipeline hand each other data through the WorkBatch
// (./work-batch.ts), not through calls: without a declaration, a pipeline that leaves out
// `identity` validates and then stores no executions. So each stage names the parts of the batch
// it reads and the parts it fills in, and the graph (./graph.ts, ./slots.ts) refuses an order that
// cannot work. The names say what the data is, not which stage makes it today.
export type Slot =
  | 'runs'
  | 'executions'
  | 'identities'
  | 'signatures'
  | 'testStates'
  | 'quarantine'
  | 'healthEvents'
  | 'suiteAlerts';

/** Every slot, with what it holds on the WorkBatch (docs/pipeline.md's table, kept in step by a test). */
export const SLOTS: Readonly<Record<Slot, string>> = {
  runs: 'each job\'s decoded batch and its run record (`items[].job`, `items[].run`): what a receiver of the executions signal hands over',
  executions: 'execution records carrying their stable test id (`items[].executions`)',
  identities: 'identities first seen or renamed in the lease, their aliases and stitches (`identities`, `aliases`, `stitches`)',
  signatures: 'error signatures and cluster ids of failed executions (`signatures`, `executions[].signatureId`/`clusterId`)',
  testStates: 'the new state and score of every test the lease touches (`testStates`)',
  quarantine: 'the automatic quarantine state on those test states (`testStates[].record.auto`)',
  healthEvents: 'flaked / broke / fixed / quarantined / released transitions (`healthEvents`)',
  suiteAlerts: '`suite.regressed` / `suite.slowed` emitted for the lease',
};

/**
 * The WorkBatch slots a stage reads and writes, in executions pipelines (events pipelines carry
 * domain events, which have no slots). Both default to none, so a factory written before
 * slots existed keeps validating anywhere.
 */
export interface SlotDeclaration {
  /** Slots that must be filled in before this stage runs. */
  requires?: readonly Slot[];
  /** Slots this stage fills in or rewrites. */
  provides?: readonly Slot[];
}

/**
 * The daemon's settings (environment only, config/daemon-env.ts) components read: the data
 * directory (where notify and the tracker keep their durable state), SERVICE_CLUSTER_THRESHOLD,
 * the notification channels and SMTP, the issue tracker, the AI provider (absent: RCA off). One
 * object, handed to the pipeline thread whole (pipeline/host.ts `pipelineSettings`).
 */
export type PipelineSettings = Pick<ServerSettings, 'dataDir' | 'clusterThreshold' | 'notifications' | 'tracker' | 'ai'>;

/**
 * Where a receiver that serves HTTP adds its routes (the API's route table). A route is declared
 * with `defineRoute` (src/pipeline/route-def.ts); the pipeline carries it to the table without reading it.
 */
export interface RouteRegistry {
  add(route: { method: string; url: string }): void;
}

/** Where a receiver hands a decoded batch: resolves once the job is durable (src/ingest's IngestService). */
export interface IngestPort {
  /** `admission`: the queue slots the request took at the door; one is given back when the enqueue settles. */
  accept(projectId: string, source: IngestSource, batch: IngestBatch, admission?: { release(n?: number): void }): Promise<EnqueueResult>;
}

/** The queue slots an ingest request holds (src/ingest's IngestAdmission): one from the door, more as it becomes jobs. */
export interface IngestSlots {
  /** Holds `total` slots in all; throws the catalogue's 503 (or 413, src/errors/catalogue.ts) when they do not fit. */
  need(total: number): void;
  release(n?: number): void;
  /** Gives back what is still held (the request failed before enqueueing everything). */
  close(): void;
}

/**
 * The HTTP ingest routes' door checks, for a receiver with its own listener (OTLP/gRPC): the same
 * tokens, scope, rate limit and queue depth, throwing the catalogue's errors (401/403/429/503,
 * src/errors/catalogue.ts). Built by src/ingest/door.ts.
 */
export interface IngestDoor {
  /** The principal of an `authorization` value (`Bearer <token>`) with scope ingest, counted by the rate limiter. */
  authenticate(authorization: string | undefined): Promise<{ projectId: string }>;
  /** One queue slot, synchronously, before any await. */
  admit(): IngestSlots;
  /** The caps and timeouts its listener shares with the HTTP one: connections, bodies in flight (src/ingest/door.ts). */
  listener: ListenerDoor;
}

/**
 * A door check a processor adds in front of the queue (`ProcessorFactory.createAdmission`): the
 * `memory_limiter` refuses new ingest there, since receivers accept into the durable queue before
 * any processor runs. The API answers a refusal 503 `memory_limited` (gRPC: RESOURCE_EXHAUSTED).
 */
export interface AdmissionCheck {
  /** Per request, synchronously, before the request takes a queue slot: a refusal, or null. Cheap. */
  refuse(now: number): AdmissionRefusal | null;
}

export interface AdmissionRefusal {
  code: 'memory_limited';
  /** Seconds the sender should wait (Retry-After, gRPC RetryInfo). */
  retryAfterSec: number;
}

/**
 * What a receiver is given, like the Collector's receivers get a consumer: where it adds its HTTP
 * routes, where it hands accepted batches, the admission of receivers that serve their own
 * protocol, and where such receivers say where they listen.
 */
export interface ReceiverDoor {
  http: RouteRegistry;
  ingest: IngestPort;
  /** Token, scope, rate limit, body slots and limits, the same as the HTTP routes' (src/ingest/door.ts). */
  admission: IngestDoor;
  listeners: ListenerRegistry;
}

/** Where the runtime that builds receivers registers the door checks of the executions pipelines' processors. */
export interface AdmissionRegistry {
  add(check: AdmissionCheck): void;
}

/** Where a receiver with its own listener says where it listens (`otlp/grpc` → `127.0.0.1:4317`): the daemon's `listeners`. */
export interface ListenerRegistry {
  add(name: string, address: string): void;
}

/**
 * The service's extensions (src/extensions/, docs/pipeline.md "Extensions"), like the Collector's
 * `host.GetExtensions()`: started before components, shut down after them, on the thread that
 * runs processors and exporters.
 */
export interface HostExtensions {
  /** The running extensions' ids, in service.extensions order. */
  readonly ids: readonly string[];
  /**
   * A client of the storage extension (the first service.extensions lists; `file_storage` by
   * default) for a component's durable state: namespaced by its kind and id (the pipeline file's),
   * and by `name` within it. Writes are on disk when they resolve. Throws where none runs.
   */
  storage<V, K extends StorageKey = string>(kind: ComponentKind, id: string, name?: string): StorageClient<V, K>;
  /**
   * The store's typed repositories (src/store/repositories.ts) from the repositories extension
   * (`clickhouse_storage` by default), for the component `kind` `id`: how processors and exporters
   * read and look up stored state. Components never get the Store itself; the clickhouse exporter
   * writes through the lease's sink. Throws where none runs (an agent, the HTTP thread).
   */
  repositories(kind: ComponentKind, id: string): Repositories;
}

/**
 * What a component is given at start. Built by pipeline/host.ts, the same way on both threads.
 * Processors and exporters get a logger, configuration (`service`, `projectConfig`, `settings`),
 * the outbox and the extensions: stored state comes through `extensions` (repositories, durable
 * component state), not a store.
 */
export interface Host {
  logger: Logger;
  /** The resolved service.yml + environment policy (flaky, quarantine, ignore, …), without any project's settings. */
  service: ServiceConfig;
  /** One project's policy: service.yml < its settings < environment, each key with its source
   * (config/resolved-project-config.ts). Per-project stages read policy here, not from `service`. */
  projectConfig(projectId: string): Promise<ResolvedServiceConfig>;
  settings: PipelineSettings;
  /** For events that happen outside a lease (an RCA finished, a budget ran out): appended durably. */
  outbox: Pick<Outbox, 'append'>;
  /** Extensions: the store's repositories (`extensions.repositories`) and durable component state (`extensions.storage`). */
  extensions: HostExtensions;
  /** Present where ingest is served (serve, agent and ingest roles): what receivers get. */
  door?: ReceiverDoor;
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

// What an executions exporter writes through (the lease's deduplication tokens, and the record
// that the lease wrote): ./lease-sink.ts.
export type { LeaseSink } from './lease-sink.js';

export interface ExecutionsExporter extends Component {
  /**
   * Must be idempotent per lease: a frozen lease is exported again after a crash. Writes to the
   * store go through `sink` (under the lease's tokens, recorded as written); an effect elsewhere
   * that is keyed by the lease's id calls `sink.wrote()` once it took place.
   */
  exportBatch(batch: WorkBatch, sink: LeaseSink): Promise<void>;
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
  /**
   * Whether its instances use the store: repositories (`Host.extensions.repositories`), or
   * per-project settings through `Host.projectConfig` beyond service.yml + environment. Undeclared
   * counts as `true`, so a component nobody checked never meets a missing store. A graph whose
   * every component declares `false` runs as an agent (src/main/agent.ts, docs/pipeline.md "Agent
   * mode"): no database is opened and `Host.extensions.repositories` throws.
   */
  needsStore?: boolean;
}

export interface ReceiverFactory<C = unknown> extends FactoryBase<C> {
  kind: 'receiver';
  signals: readonly Signal[];
  create(config: C, settings: CreateSettings): Receiver;
}

export interface ProcessorFactory<C = unknown> extends FactoryBase<C>, SlotDeclaration {
  kind: 'processor';
  signals: readonly Signal[];
  createExecutions?(config: C, settings: CreateSettings): ExecutionsProcessor;
  createEvents?(config: C, settings: CreateSettings): EventsProcessor;
  /** A check at the ingest door, built where receivers run when an executions pipeline lists the processor. */
  createAdmission?(config: C, settings: CreateSettings): AdmissionCheck;
}

/** An exporter is the end of a pipeline: it only reads (`provides` would feed nothing). */
export interface ExporterFactory<C = unknown> extends FactoryBase<C>, Pick<SlotDeclaration, 'requires'> {
  kind: 'exporter';
  signals: readonly Signal[];
  createExecutions?(config: C, settings: CreateSettings): ExecutionsExporter;
  createEvents?(config: C, settings: CreateSettings): EventsExporter;
}

/** A connector is an exporter in one pipeline and a receiver in another; `requires` is checked
 * where it exports (its `from` pipeline). */
export interface ConnectorFactory<C = unknown> extends FactoryBase<C>, Pick<SlotDeclaration, 'requires'> {
  kind: 'connector';
  from: Signal;
  to: Signal;
  /**
   * A connector that routes (executions to executions): the pipelines its config sends to, each
   * with its path under the connector's config, so the graph can check them. Absent: it feeds
   * every pipeline that lists it as a receiver.
   */
  routesTo?(config: C): { path: string; pipeline: string }[];
  /** With `routesTo`: the pipelines a job of the lease goes to, decided per job. */
  createRouter?(config: C): JobRouter;
}

/** Which of the connector's pipelines a job goes to (a deterministic function of the job: a
 * redelivered lease must route the same way). */
export type JobRouter = (job: { projectId: string; source: IngestSource; batch: IngestBatch }) => readonly string[];

export type AnyFactory = ReceiverFactory | ProcessorFactory | ExporterFactory | ConnectorFactory;

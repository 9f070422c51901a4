// Per-component counters in the OpenTelemetry Collector's terms (receiver accepted/refused,
// processor incoming/outgoing, exporter sent/send_failed), kept as plain objects keyed by the
// component id from the YAML. Plain objects, not instruments: the processor and exporter counts
// live in WorkerStats, which is posted from the pipeline thread as it is (structured clone), and
// SelfTelemetry observes them at collection time, as it does the other worker counters. The
// receivers run on the thread that serves HTTP and count there. A lease costs a few additions.
import type { EnqueueResult } from '../queue/types.js';
import type { Host, IngestDoor, IngestPort, IngestSlots } from '../pipeline/component.js';

export type ReceiverTransport = 'http' | 'grpc';

export interface ProcessorCounts {
  incoming: number;
  outgoing: number;
}

export interface ExporterCounts {
  sent: number;
  failed: number;
}

/** Counts of the executions pipelines' processors and exporters, by component id (part of WorkerStats). */
export interface ComponentStats {
  processors: Record<string, ProcessorCounts>;
  exporters: Record<string, ExporterCounts>;
}

export interface ReceiverCounts {
  accepted: number;
  refused: number;
}

/** By receiver id, then transport. */
export type ReceiverStats = Record<string, Partial<Record<ReceiverTransport, ReceiverCounts>>>;

export function newComponentStats(): ComponentStats {
  return { processors: {}, exporters: {} };
}

/** The executions a work item holds now: processors before identity (filter, sample, normalize) drop from the job's batch. */
export function executionsOf(items: readonly { job: { batch: { executions: readonly unknown[] } } }[]): number {
  let n = 0;
  for (const item of items) n += item.job.batch.executions.length;
  return n;
}

export function countProcessor(stats: ComponentStats, id: string, incoming: number, outgoing: number): void {
  const c = (stats.processors[id] ??= { incoming: 0, outgoing: 0 });
  c.incoming += incoming;
  c.outgoing += outgoing;
}

export function countExporter(stats: ComponentStats, id: string, items: number, ok: boolean): void {
  const c = (stats.exporters[id] ??= { sent: 0, failed: 0 });
  if (ok) c.sent += items;
  else c.failed += items;
}

export function countReceiver(stats: ReceiverStats, id: string, transport: ReceiverTransport, items: number, ok: boolean): void {
  const byTransport = (stats[id] ??= {});
  const c = (byTransport[transport] ??= { accepted: 0, refused: 0 });
  if (ok) c.accepted += items;
  else c.refused += items;
}

/** Refusals the receiver saw before a batch reached `accept` (an unstorable value, a full queue), by wrapped port. */
const refusers = new WeakMap<IngestPort, (items: number, transport: ReceiverTransport) => void>();

/**
 * Counts batches a receiver decoded but never offered to `ingest.accept` (refused whole before
 * the enqueue). A port the runtime did not wrap (tests building a receiver alone) counts nothing.
 */
export function countRefusedBeforeAccept(port: IngestPort, batches: readonly { executions: readonly unknown[] }[], transport: ReceiverTransport): void {
  const refuse = refusers.get(port);
  if (!refuse) return;
  let n = 0;
  for (const b of batches) n += b.executions.length;
  if (n > 0) refuse(n, transport);
}

/**
 * The host one receiver starts with: its `ingest` counts each batch's executions as accepted (the
 * job is durable) or refused (the enqueue threw: storage full, a dead key, backpressure) under
 * the receiver's id. The transport is known from where the request's queue slots came: the door
 * of receivers with their own listener (`door.admission`, OTLP/gRPC) or the HTTP route's.
 */
export function countingHost(host: Host, id: string, stats: ReceiverStats): Host {
  if (!host.door) return host;
  const { ingest, admission: ingestDoor } = host.door;
  const grpcSlots = new WeakSet<object>();
  const counted: IngestPort = {
    async accept(projectId, source, batch, admission): Promise<EnqueueResult> {
      const transport: ReceiverTransport = admission && grpcSlots.has(admission) ? 'grpc' : 'http';
      const n = batch.executions.length;
      try {
        const result = await ingest.accept(projectId, source, batch, admission);
        countReceiver(stats, id, transport, n, true);
        return result;
      } catch (err) {
        countReceiver(stats, id, transport, n, false);
        throw err;
      }
    },
  };
  refusers.set(counted, (n, transport) => countReceiver(stats, id, transport, n, false));
  const door: IngestDoor = {
    authenticate: (authorization) => ingestDoor.authenticate(authorization),
    listener: ingestDoor.listener,
    admit(): IngestSlots {
      const slots = ingestDoor.admit();
      grpcSlots.add(slots);
      return slots;
    },
  };
  return { ...host, door: { ...host.door, ingest: counted, admission: door } };
}

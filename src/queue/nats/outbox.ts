// The outbox as a stream `<prefix>_OUTBOX`: an entry's seq is its stream seq (never reused, also
// after a purge), cursors live in a KV bucket, trim purges below the lowest cursor, and
// waitForEntries listens on the outbox subject (a core subscription sees every publish).
import { nuid, type JetStreamClient, type JetStreamManager, type KV, type NatsConnection, type Subscription } from 'nats';
import type { DomainEvent } from '../../domain/events.js';
import { Waiters } from '../waiters.js';
import type { OutboxEntry, OutboxReader } from '../types.js';
import { kvSafeKey, type NatsNames } from './names.js';
import { readStream } from './stream-read.js';
import { kvGetJson, kvPutJson } from './streams.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

export class NatsOutbox implements OutboxReader {
  private readonly waiters = new Waiters();
  private readonly sub: Subscription;
  /** Set by the queue: true while this process owns partition 0, the dispatcher's seat. */
  dispatchesHere: () => boolean = () => true;

  constructor(
    nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly names: NatsNames,
    private readonly cursors: KV,
  ) {
    this.sub = nc.subscribe(names.outboxSubject, { callback: () => this.wake() });
  }

  /** Appends events with the given msgIDs (a replayed ack publishes the same ids: deduplicated). */
  async publish(events: readonly DomainEvent[], msgIds: readonly string[]): Promise<void> {
    // Published in order on one connection: stream seqs follow the events' order.
    await Promise.all(events.map((e, i) => this.js.publish(this.names.outboxSubject, enc.encode(JSON.stringify(e)), { msgID: msgIds[i]! })));
    if (events.length > 0) this.wake();
  }

  async append(events: readonly DomainEvent[]): Promise<void> {
    const id = nuid.next();
    await this.publish(events, events.map((_, i) => `${id}:${i}`));
  }

  async read(afterSeq: number, limit: number): Promise<OutboxEntry[]> {
    const entries = await readStream(this.js, this.jsm, this.names.outboxStream, afterSeq + 1, limit);
    return entries.map((e) => ({ seq: e.seq, event: JSON.parse(dec.decode(e.msg.data)) as DomainEvent }));
  }

  async cursor(subscriber: string): Promise<number> {
    return (await kvGetJson<number>(this.cursors, kvSafeKey(subscriber))) ?? 0;
  }

  async setCursor(subscriber: string, seq: number): Promise<void> {
    await kvPutJson(this.cursors, kvSafeKey(subscriber), seq);
  }

  async trim(subscribers: readonly string[]): Promise<void> {
    if (subscribers.length === 0) return;
    const min = Math.min(...(await Promise.all(subscribers.map((s) => this.cursor(s)))));
    if (min <= 0) return;
    // Purges every message below `seq`; the stream's last seq stays, so seqs never go back.
    await this.jsm.streams.purge(this.names.outboxStream, { seq: min + 1 });
  }

  waitForEntries(timeoutMs: number): Promise<void> {
    return this.waiters.wait(timeoutMs);
  }

  wake(): void {
    this.waiters.wakeAll();
  }

  close(): void {
    this.sub.unsubscribe();
    this.wake();
  }
}

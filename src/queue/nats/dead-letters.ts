// The dead-letter stream `<prefix>_DEAD`: one message per dead job, its payload the `DeadJob`
// record. Listing reads the whole stream (dead jobs are few and an operator pages through them);
// requeue and drop delete the job's message.
import { headers, type JetStreamClient, type JetStreamManager } from 'nats';
import type { DeadJob } from '../types.js';
import type { NatsNames } from './names.js';
import { readStream } from './stream-read.js';

export interface StoredDead {
  seq: number;
  dead: DeadJob;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export class DeadLetters {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly names: NatsNames,
  ) {}

  /** Appends one record; `msgId` makes a replay (crash before the job's message was acked) a no-op. */
  async append(dead: DeadJob, msgId: string): Promise<void> {
    const h = headers();
    h.set('Fh-Job-Id', dead.job.id);
    await this.js.publish(this.names.deadSubject, enc.encode(JSON.stringify(dead)), { msgID: msgId, headers: h });
  }

  /**
   * Every dead job, oldest receipt first (the time the job was accepted, then the order it died
   * in; job ids are hashes of the idempotency key, not ordered); the newest record wins for a job
   * died twice.
   */
  async all(): Promise<StoredDead[]> {
    const entries = await readStream(this.js, this.jsm, this.names.deadStream, 1, Number.MAX_SAFE_INTEGER);
    const byId = new Map<string, StoredDead>();
    for (const e of entries) {
      const dead = JSON.parse(dec.decode(e.msg.data)) as DeadJob;
      byId.set(dead.job.id, { seq: e.seq, dead });
    }
    return [...byId.values()].sort((a, b) => a.dead.job.receivedAt - b.dead.job.receivedAt || a.seq - b.seq);
  }

  /** A page of `all()`: the `limit` records after job id `after` (none when `after` is no longer dead). */
  async page(limit: number, after?: string): Promise<StoredDead[]> {
    const all = await this.all();
    const from = after === undefined ? 0 : all.findIndex((d) => d.dead.job.id === after) + 1;
    return from === 0 && after !== undefined ? [] : all.slice(from, from + limit);
  }

  async get(id: string): Promise<StoredDead | undefined> {
    return (await this.all()).find((d) => d.dead.job.id === id);
  }

  async remove(seq: number): Promise<void> {
    await this.jsm.streams.deleteMessage(this.names.deadStream, seq, false);
  }

  async count(): Promise<number> {
    return (await this.jsm.streams.info(this.names.deadStream)).state.messages;
  }
}

// Reading a (small) range of a stream: an ordered consumer, started at a seq, stopped as soon as
// nothing is pending, so a read never waits for messages that are not there.
import type { JetStreamClient, JetStreamManager, JsMsg } from 'nats';
import { DeliverPolicy } from 'nats';

export interface StreamEntry {
  seq: number;
  msg: JsMsg;
}

export async function readStream(js: JetStreamClient, jsm: JetStreamManager, stream: string, fromSeq: number, limit: number): Promise<StreamEntry[]> {
  if (limit <= 0) return [];
  const info = await jsm.streams.info(stream);
  const start = Math.max(fromSeq, info.state.first_seq, 1);
  if (info.state.messages === 0 || start > info.state.last_seq) return [];
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start });
  const out: StreamEntry[] = [];
  try {
    while (out.length < limit) {
      const batch = await consumer.fetch({ max_messages: Math.min(limit - out.length, 500), expires: 1000 });
      let got = 0;
      let done = false;
      for await (const m of batch) {
        got++;
        out.push({ seq: m.seq, msg: m });
        if (m.info.pending === 0 || out.length >= limit) {
          done = true;
          break;
        }
      }
      if (done || got === 0) break;
    }
  } finally {
    await consumer.delete().catch(() => false);
  }
  return out;
}

// The calls between the main thread and the pipeline thread, typed from one declaration
// (src/pipeline/thread/protocol.ts), over a real MessageChannel: results, errors, moved buffers,
// and (checked by `tsc`) that a handler table missing a call, or a call with wrong arguments, does
// not compile.
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { MainCalls, WorkerCalls } from '../../src/pipeline/thread/protocol.js';
import { RpcClient, serveRpc, withTransfer, type Handlers } from '../../src/pipeline/thread/rpc.js';

interface TestCalls {
  add: (a: number, b: number) => number;
  fail: (message: string) => void;
  bytes: (n: number) => Uint8Array;
}

const channels: MessageChannel[] = [];
afterEach(() => {
  for (const c of channels.splice(0)) {
    c.port1.close();
    c.port2.close();
  }
});

function pair(handlers: Handlers<TestCalls>): RpcClient<TestCalls> {
  const channel = new MessageChannel();
  channels.push(channel);
  serveRpc<TestCalls>(channel.port2, handlers);
  return new RpcClient<TestCalls>(channel.port1);
}

describe('typed rpc', () => {
  it('answers each call with its declared result, rethrows errors, and moves buffers', async () => {
    let moved: Uint8Array | undefined;
    const client = pair({
      add: (a, b) => a + b,
      fail: (message) => {
        throw Object.assign(new Error(message), { code: 'E_TEST' });
      },
      bytes: (n) => {
        moved = new Uint8Array(n).fill(7);
        return withTransfer(moved, [moved.buffer as ArrayBuffer]);
      },
    });
    const sum: number = await client.call('add', 2, 3);
    expect(sum).toBe(5);
    await expect(client.call('fail', 'nope')).rejects.toMatchObject({ message: 'nope', code: 'E_TEST' });
    const got = await client.call('bytes', 4);
    expect([...got]).toEqual([7, 7, 7, 7]);
    // Transferred, not copied: the sender's view is detached.
    expect(moved!.byteLength).toBe(0);
  });

  it('fails the calls in flight when the other side is gone', async () => {
    const client = pair({ add: () => new Promise<number>(() => {}), fail: () => {}, bytes: () => new Uint8Array() });
    const pending = client.call('add', 1, 1);
    client.failAll(new Error('pipeline thread exited'));
    await expect(pending).rejects.toThrow('pipeline thread exited');
  });

  it('types both sides from the declaration', () => {
    const channel = new MessageChannel();
    channels.push(channel);
    // @ts-expect-error a handler table missing a call (`bytes`) does not compile
    serveRpc<TestCalls>(channel.port2, { add: (a, b) => a + b, fail: () => {} });
    // @ts-expect-error a handler answering another type does not compile
    serveRpc<TestCalls>(channel.port2, { add: () => 'three', fail: () => {}, bytes: () => new Uint8Array() });
    const client = new RpcClient<TestCalls>(channel.port1);
    // @ts-expect-error wrong argument types
    void client.call('add', '1', 2).catch(() => undefined);
    // @ts-expect-error an undeclared call
    void client.call('sub', 1, 2).catch(() => undefined);
    // The real tables: each side's handlers and calls come from protocol.ts.
    type Served = [Handlers<MainCalls>, Handlers<WorkerCalls>];
    const names: (keyof MainCalls | keyof WorkerCalls)[] = ['store.insertTsvBody', 'queue.dequeueRaw', 'outbox.read', 'reload', 'pause'];
    expect(names.length).toBe(5);
    expect(null as unknown as Served).toBeNull();
  });
});

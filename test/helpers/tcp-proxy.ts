// A loopback TCP proxy between a client and a real server, for faults the server itself cannot be
// made to produce: answers that never arrive (`blackhole`), connections cut at a chosen moment.
import net from 'node:net';

export interface TcpProxy {
  /** The proxy's own port on 127.0.0.1. */
  port: number;
  /** From now on, what the server sends is dropped; `both`: what the client sends too. */
  blackhole(opts?: { both?: boolean }): void;
  /** Drops each chunk the client sends that `match` picks (until `passAll()`); the rest is forwarded. */
  dropFromClient(match: (text: string) => boolean): void;
  passAll(): void;
  /** Cuts every connection open now (the client reconnects, and is forwarded normally again). */
  cut(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  let dropMatch: ((text: string) => boolean) | undefined;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; dropping: boolean; droppingUp: boolean }>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host ?? '127.0.0.1');
    const pair = { client, upstream, dropping: false, droppingUp: false };
    pairs.add(pair);
    client.on('data', (b) => {
      if (pair.droppingUp || dropMatch?.(b.toString('latin1'))) return;
      upstream.write(b);
    });
    upstream.on('data', (b) => {
      if (!pair.dropping) client.write(b);
    });
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const cut = (): void => {
    for (const p of [...pairs]) {
      p.client.destroy();
      p.upstream.destroy();
    }
  };
  return {
    port,
    blackhole(opts = {}) {
      for (const p of pairs) {
        p.dropping = true;
        p.droppingUp = opts.both === true;
      }
    },
    dropFromClient(match) {
      dropMatch = match;
    },
    passAll() {
      dropMatch = undefined;
    },
    cut,
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

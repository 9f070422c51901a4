// Caps on open connections, in total and per remote address (docs/api.md "Limits at the door"):
// a connection beyond them is answered 503 server_busy and closed before Node's HTTP parser is
// attached, so it can send no request and costs no header buffer.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { errors } from '../errors.js';
import { rawAnswer } from './raw-answer.js';

export interface ConnectionCaps {
  max: number;
  perAddress: number;
}

/** How long a refused connection may take to read its answer before it is cut. */
const REFUSED_GRACE_MS = 1000;

/** Wraps the server's connection handling; returns the live counts (for tests and the bench). */
export function capConnections(server: Server, caps: ConnectionCaps): { open: () => number } {
  // Node's HTTP handling is the server's own 'connection' listener: it runs only for sockets let in.
  const handlers = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  let open = 0;
  const byAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const mine = byAddress.get(address) ?? 0;
    if (open >= caps.max) return refuse(socket, `too many open connections (at most ${caps.max})`);
    if (mine >= caps.perAddress) return refuse(socket, `too many open connections from your address (at most ${caps.perAddress})`);
    open++;
    byAddress.set(address, mine + 1);
    socket.once('close', () => {
      open--;
      const left = (byAddress.get(address) ?? 1) - 1;
      if (left > 0) byAddress.set(address, left);
      else byAddress.delete(address);
    });
    for (const handle of handlers) handle.call(server, socket);
  });
  return { open: () => open };
}

function refuse(socket: Socket, why: string): void {
  socket.on('error', () => {});
  // Read and drop what the client sends meanwhile: closing with unread data would reset the
  // connection, and the client could lose the answer.
  socket.resume();
  socket.setTimeout(REFUSED_GRACE_MS, () => socket.destroy());
  socket.end(rawAnswer(errors.serverBusy(why)));
}

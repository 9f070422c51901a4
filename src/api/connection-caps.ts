// The connection budget (src/ingest/door.ts, shared with the OTLP/gRPC listener) on the HTTP
// listener: a connection beyond it is answered 503 server_busy and closed before Node's HTTP
// parser is attached, so it can send no request and costs no header buffer.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { errors } from '../errors/catalogue.js';
import { lingeringClose, type ConnectionBudget } from '../ingest/door.js';
import { rawAnswer } from './raw-answer.js';

/** Wraps the server's connection handling so each socket takes a unit of `budget` for as long as it is open. */
export function capConnections(server: Server, budget: ConnectionBudget): void {
  // Node's HTTP handling is the server's own 'connection' listener: it runs only for sockets let in.
  const handlers = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const release = budget.take(socket.remoteAddress ?? '');
    if (typeof release === 'string') return refuse(socket, release);
    socket.once('close', release);
    for (const handle of handlers) handle.call(server, socket);
  });
}

function refuse(socket: Socket, why: string): void {
  lingeringClose(socket, rawAnswer(errors.serverBusy(why)));
}

// Closing a connection whose client may still be sending its body. Closing a socket with unread
// data makes the kernel reset the connection, and a reset makes the client's kernel drop what it
// had received and not yet read: a client busy for a moment loses the answer (a raw client that
// read 300 ms late lost the 401 every time). So the answer goes out with a FIN, what the client
// still sends is read and dropped, and the socket is destroyed once the client closes its side or
// REFUSED_GRACE_MS have passed (a client that never stops sending is cut then).
import type { Socket } from 'node:net';
import { REFUSED_GRACE_MS } from '../ingest/door.js';

/** Ends `socket` after `last`, drops what still arrives, and destroys it when the client ends or the grace is over. */
export function lingeringClose(socket: Socket, last?: string): void {
  socket.on('error', () => {});
  socket.resume();
  const cut = setTimeout(() => socket.destroy(), REFUSED_GRACE_MS);
  socket.once('close', () => clearTimeout(cut));
  socket.once('end', () => socket.destroy());
  if (last === undefined) socket.end();
  else socket.end(last);
}

/**
 * Makes Node's own close of this connection lingering: after an answer with `connection: close`,
 * Node's HTTP server calls `destroySoon`, which destroys the socket as soon as the answer is written.
 */
export function lingerWhenClosed(socket: Socket): void {
  socket.destroySoon = () => lingeringClose(socket);
}

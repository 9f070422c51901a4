// Node's own close of an answered HTTP connection, made lingering (src/ingest/door.ts
// `lingeringClose`: the answer with a FIN, the rest of the body read and dropped, then the close).
import type { Socket } from 'node:net';
import { lingeringClose } from '../ingest/door.js';

/**
 * After an answer with `connection: close`, Node's HTTP server calls the socket's `destroySoon`,
 * which destroys it as soon as the answer is written: with the client's body still arriving, that
 * reset the connection and the client could lose the answer.
 */
export function lingerWhenClosed(socket: Socket): void {
  socket.destroySoon = () => lingeringClose(socket);
}

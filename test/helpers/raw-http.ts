// Raw HTTP/1.1 over a socket, for what fetch cannot do: a body that never finishes, headers sent
// slowly, connections held open. Times are milliseconds since the socket was opened.
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawConnection {
  socket: net.Socket;
  /** The first complete response, and when it had arrived; rejects if the socket closes before. */
  response: Promise<RawResponse & { atMs: number }>;
  /** When the socket closed (either side), with everything that was received. */
  closed: Promise<{ atMs: number; received: string }>;
  /** Writes, ignoring a connection the server already closed. */
  write(data: string | Uint8Array): void;
}

export function parseRawResponse(text: string): RawResponse | undefined {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const length = Number(headers['content-length'] ?? Number.NaN);
  const body = text.slice(end + 4);
  if (!Number.isNaN(length) && Buffer.byteLength(body) < length) return undefined;
  return { status: Number(statusLine!.split(' ')[1]), headers, body: Number.isNaN(length) ? body : Buffer.from(body).subarray(0, length).toString() };
}

export function openRaw(url: string, opts: { localAddress?: string } = {}): RawConnection {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  const since = () => Math.round(performance.now() - started);
  const socket = net.connect({ port: Number(port), host: hostname, ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
  let received = '';
  let settled = false;
  let resolveResponse!: (r: RawResponse & { atMs: number }) => void;
  let rejectResponse!: (e: Error) => void;
  const response = new Promise<RawResponse & { atMs: number }>((resolve, reject) => {
    resolveResponse = resolve;
    rejectResponse = reject;
  });
  // A test may only await `closed`.
  response.catch(() => {});
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    received += chunk;
    const parsed = settled ? undefined : parseRawResponse(received);
    if (parsed) {
      settled = true;
      resolveResponse({ ...parsed, atMs: since() });
    }
  });
  // The server may close while we are still writing (EPIPE) or reset a refused connection.
  socket.on('error', () => {});
  const closed = new Promise<{ atMs: number; received: string }>((resolve) =>
    socket.on('close', () => {
      if (!settled) rejectResponse(new Error(`closed without a complete response after ${since()} ms: ${JSON.stringify(received.slice(0, 200))}`));
      resolve({ atMs: since(), received });
    }),
  );
  return {
    socket,
    response,
    closed,
    write(data) {
      if (!socket.destroyed && socket.writable) socket.write(data);
    },
  };
}

/** The request line and headers of a POST whose body is `length` bytes of JSON. */
export function postHead(path: string, length: number, headers: Record<string, string> = {}): string {
  const lines = Object.entries({ host: 'x', 'content-type': 'application/json', 'content-length': String(length), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  return `POST ${path} HTTP/1.1\r\n${lines.join('')}\r\n`;
}

// The door (docs/api.md "Limits at the door", issue 28): a request is authenticated from its
// headers before any of its body is read, a slow request is cut with 408, and connections and
// bodies being received are capped. Each daemon runs with small timeouts so the tests stay fast.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { openRaw, postHead, type RawConnection } from '../helpers/raw-http.js';

const EIGHT_MIB = 8 * 1024 * 1024;
const CHUNK = 'x'.repeat(64 * 1024);

async function createToken(td: TestDaemon, scopes: string[]): Promise<string> {
  const res = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes } });
  expect(res.status, res.text).toBe(201);
  return res.json.token as string;
}

/** Headers of an 8 MiB ingest body and its first 64 KiB; the rest never comes. */
function unfinishedIngest(td: TestDaemon, authorization?: string, localAddress?: string): RawConnection {
  const c = openRaw(td.url, localAddress ? { localAddress } : {});
  c.write(postHead('/v1/ingest', EIGHT_MIB, authorization ? { authorization } : {}));
  c.write(CHUNK);
  return c;
}

async function until(check: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('authentication before the body', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    // A long request timeout: an answer within it can only come from the door's auth.
    td = await startTestDaemon({ work: false, env: { SERVICE_REQUEST_TIMEOUT_MS: '30000' } });
  }, 60_000);
  afterAll(async () => td?.close());

  it('an unauthenticated POST whose body never finishes is answered 401 at once, and its socket is closed', async () => {
    const c = unfinishedIngest(td);
    // The attacker keeps sending; the server neither waits for nor keeps the body.
    const pump = setInterval(() => c.write(CHUNK), 20);
    try {
      const res = await c.response;
      expect(res.status).toBe(401);
      expect(res.body).toBe('{"error":"unauthorized","message":"a valid bearer token is required"}');
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.headers.connection).toBe('close');
      expect(res.atMs).toBeLessThan(1000);
      const closed = await c.closed;
      expect(closed.atMs).toBeLessThan(2000);
    } finally {
      clearInterval(pump);
    }
    await until(() => td.daemon.app.door.connections() === 0);
    expect(td.daemon.app.door.bodies()).toBe(0);
  });

  it('a client busy while it is refused still reads its 401: the connection is not reset under it', async () => {
    const c = unfinishedIngest(td);
    // It keeps sending and reads nothing for 300 ms. Closed at once, with its body still arriving,
    // the connection would be reset, and the reset drops the answer the client had not read yet.
    c.socket.pause();
    const pump = setInterval(() => c.write(CHUNK), 20);
    try {
      await new Promise((r) => setTimeout(r, 300));
      c.socket.resume();
      const res = await c.response;
      expect(res.status).toBe(401);
      expect(res.body).toBe('{"error":"unauthorized","message":"a valid bearer token is required"}');
      // A client that never stops sending is cut after the grace (REFUSED_GRACE_MS, 1 s).
      expect((await c.closed).atMs).toBeLessThan(3000);
    } finally {
      clearInterval(pump);
    }
    await until(() => td.daemon.app.door.connections() === 0);
  });

  it('a bad token is 401 and a token without the scope is 403, both before the body', async () => {
    const bad = unfinishedIngest(td, `Bearer fh_${'0'.repeat(48)}`);
    const badRes = await bad.response;
    expect(badRes.status).toBe(401);
    expect(badRes.body).toBe('{"error":"unauthorized","message":"the token is unknown or revoked"}');
    await bad.closed;

    const readOnly = unfinishedIngest(td, `Bearer ${await createToken(td, ['read'])}`);
    const res = await readOnly.response;
    expect(res.status).toBe(403);
    expect(res.body).toBe('{"error":"insufficient_scope","message":"this token lacks the \\"ingest\\" scope"}');
    expect((await readOnly.closed).atMs).toBeLessThan(2000);
  });

  it('the admin routes and the SQL endpoint authenticate from their headers too', async () => {
    const admin = openRaw(td.url);
    admin.write(postHead('/v1/admin/projects', EIGHT_MIB));
    admin.write(CHUNK);
    expect((await admin.response).status).toBe(401);
    await admin.closed;

    const sql = openRaw(td.url);
    sql.write(postHead('/clickhouse', EIGHT_MIB, { 'content-type': 'text/plain' }));
    sql.write(CHUNK);
    expect((await sql.response).status).toBe(401);
    await sql.closed;
  });

  it('a refused request without a body keeps its keep-alive connection', async () => {
    const c = openRaw(td.url);
    c.write('GET /v1/runs HTTP/1.1\r\nhost: x\r\n\r\n');
    const res = await c.response;
    expect(res.status).toBe(401);
    expect(res.headers.connection).not.toBe('close');
    c.socket.destroy();
  });
});

describe('timeouts', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ work: false, env: { SERVICE_HEADERS_TIMEOUT_MS: '300', SERVICE_REQUEST_TIMEOUT_MS: '600' } });
  }, 60_000);
  afterAll(async () => td?.close());

  it('a slow authenticated body is answered 408 request_timeout within the request timeout, and closed', async () => {
    const c = unfinishedIngest(td, `Bearer ${td.token}`);
    const pump = setInterval(() => c.write('x'), 50);
    try {
      const res = await c.response;
      expect(res.status).toBe(408);
      expect(res.body).toBe('{"error":"request_timeout","message":"the request was not received in time"}');
      expect(res.headers.connection).toBe('close');
      // 600 ms, checked every 150 ms.
      expect(res.atMs).toBeGreaterThanOrEqual(550);
      expect(res.atMs).toBeLessThan(1500);
      expect((await c.closed).atMs).toBeLessThan(1600);
    } finally {
      clearInterval(pump);
    }
    await until(() => td.daemon.app.door.bodies() === 0);
  });

  it('headers sent too slowly, or none at all, are cut after the header timeout', async () => {
    const slow = openRaw(td.url);
    slow.write('POST /v1/ingest HTTP/1.1\r\nhost: x\r\n');
    const res = await slow.response;
    expect(res.status).toBe(408);
    expect(res.atMs).toBeLessThan(1000);

    const idle = openRaw(td.url);
    expect((await idle.closed).atMs).toBeLessThan(1000);
  });

  it('a complete request is not cut by the timeouts, however long its answer takes', async () => {
    // The timeouts bound receiving the request only; this one is received at once.
    const res = await td.request('POST', '/v1/ingest', { body: nativeBatch() });
    expect(res.status).toBe(202);
  });
});

describe('connection caps', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ work: false, env: { SERVICE_MAX_CONNECTIONS: '5', SERVICE_MAX_CONNECTIONS_PER_ADDRESS: '3' } });
  }, 60_000);
  afterAll(async () => td?.close());

  it('refuse connections beyond the limit per address and in total with 503 server_busy, and count closed ones out', async () => {
    const held = [1, 2, 3].map(() => openRaw(td.url, { localAddress: '127.0.0.1' }));
    await until(() => td.daemon.app.door.connections() === 3);
    const fourth = openRaw(td.url, { localAddress: '127.0.0.1' });
    const refused = await fourth.response;
    expect(refused.status).toBe(503);
    expect(refused.body).toBe('{"error":"server_busy","message":"too many open connections from your address (at most 3); retry shortly"}');
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers.connection).toBe('close');
    await fourth.closed;

    // Another address still gets in, up to the total.
    const other = [1, 2].map(() => openRaw(td.url, { localAddress: '127.0.0.2' }));
    await until(() => td.daemon.app.door.connections() === 5);
    const sixth = openRaw(td.url, { localAddress: '127.0.0.3' });
    expect((await sixth.response).body).toBe('{"error":"server_busy","message":"too many open connections (at most 5); retry shortly"}');

    // A connection let in works; once the others close, there is room again.
    held[0]!.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n');
    expect((await held[0]!.response).status).toBe(200);
    for (const c of [...held, ...other]) c.socket.destroy();
    await until(() => td.daemon.app.door.connections() === 0);
    expect((await td.request('GET', '/v1/runs')).status).toBe(200);
  });
});

describe('bodies being received at once', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ work: false, env: { SERVICE_MAX_CONCURRENT_BODIES: '2', SERVICE_BODY_WAIT_MS: '300', SERVICE_REQUEST_TIMEOUT_MS: '20000' } });
  }, 60_000);
  afterAll(async () => td?.close());

  it('beyond the cap a request waits, then gets 503 server_busy without its body being read', async () => {
    const auth = `Bearer ${td.token}`;
    const slow = [unfinishedIngest(td, auth), unfinishedIngest(td, auth)];
    await until(() => td.daemon.app.door.bodies() === 2);
    const third = unfinishedIngest(td, auth);
    const res = await third.response;
    expect(res.status).toBe(503);
    expect(res.body).toBe('{"error":"server_busy","message":"too many request bodies are being received at once (at most 2); retry shortly"}');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers.connection).toBe('close');
    expect(res.atMs).toBeGreaterThanOrEqual(250);
    await third.closed;

    // A waiting request gets the slot a closed one frees.
    const waiting = td.request('POST', '/v1/ingest', { body: nativeBatch() });
    // A moment for it to reach the door and wait (the door does not count waiters; were it late, it
    // would find the slot free and pass all the same).
    await new Promise((r) => setTimeout(r, 50));
    slow[0]!.socket.destroy();
    expect((await waiting).status).toBe(202);
    slow[1]!.socket.destroy();
    await until(() => td.daemon.app.door.bodies() === 0);
  });

  it('requests not authenticated from their headers get at most half the slots', async () => {
    // An unknown path is not authenticated at the door: its body takes an anonymous slot.
    const anonymous = openRaw(td.url);
    anonymous.write(postHead('/v1/no-such-route', EIGHT_MIB));
    anonymous.write(CHUNK);
    await until(() => td.daemon.app.door.bodies() === 1);
    const second = openRaw(td.url);
    second.write(postHead('/v1/no-such-route', 100));
    expect((await second.response).status).toBe(503);
    // The other slot stays for authenticated requests.
    expect((await td.request('POST', '/v1/ingest', { body: nativeBatch() })).status).toBe(202);
    anonymous.socket.destroy();
    await until(() => td.daemon.app.door.bodies() === 0);
  });
});

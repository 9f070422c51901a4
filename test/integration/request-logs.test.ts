// Request logs: at the default level the daemon writes no line per request (fastify wrote two at
// `info`, "incoming request" and "request completed"); each answered request has one
// "request completed" line at `debug`, and at `info` with SERVICE_LOG_REQUESTS=true.
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { Logger } from 'pino';
import { createLogger } from '../../src/telemetry/logger.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

interface Line {
  level: number;
  msg?: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
}

function capture(level: string): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Line);
      cb();
    },
  });
  return { logger: createLogger(level, sink), lines };
}

/** Three requests (200, 401, 404) tagged with `marker`, and the lines that name them, once all three are logged or 500 ms passed. */
async function requestsAndTheirLines(td: TestDaemon, lines: Line[], marker: string, expected: number): Promise<Line[]> {
  expect((await td.request('GET', `/v1/runs?limit=1&m=${marker}`)).status).toBe(200);
  expect((await td.request('GET', `/v1/runs?m=${marker}`, { token: null })).status).toBe(401);
  expect((await td.request('GET', `/nowhere?m=${marker}`, { token: null })).status).toBe(404);
  const mine = () => lines.filter((l) => (l.req?.url ?? '').includes(`m=${marker}`) || JSON.stringify(l).includes(marker));
  // The line is written once the answer has gone out: a moment after the client has it.
  const until = Date.now() + 500;
  while (mine().length < expected && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  // None expected: a window of 0.2 s for a line that must not come (there is no event to wait for).
  if (expected === 0) await new Promise((r) => setTimeout(r, 200));
  return mine();
}

describe('request logs', () => {
  const daemons: TestDaemon[] = [];
  afterAll(async () => {
    for (const td of daemons) await td.close();
  });

  it('at the default level (info) a daemon writes no line per request', async () => {
    const { logger, lines } = capture('info');
    const td = await startTestDaemon({ logger });
    daemons.push(td);
    const mine = await requestsAndTheirLines(td, lines, 'default-info', 0);
    expect(mine).toEqual([]);
    expect(lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed')).toEqual([]);
  }, 60_000);

  it('at debug: one line per request, at debug, with its status and time', async () => {
    const { logger, lines } = capture('debug');
    const td = await startTestDaemon({ logger });
    daemons.push(td);
    const mine = await requestsAndTheirLines(td, lines, 'default-debug', 3);
    expect(mine.map((l) => [l.level, l.msg, l.req?.method, l.res?.statusCode])).toEqual([
      [20, 'request completed', 'GET', 200],
      [20, 'request completed', 'GET', 401],
      [20, 'request completed', 'GET', 404],
    ]);
    expect(lines.filter((l) => l.msg === 'incoming request')).toEqual([]);
  }, 60_000);

  it('with SERVICE_LOG_REQUESTS=true: exactly one `info` line per request', async () => {
    const { logger, lines } = capture('info');
    const td = await startTestDaemon({ logger, env: { SERVICE_LOG_REQUESTS: 'true' } });
    daemons.push(td);
    const mine = await requestsAndTheirLines(td, lines, 'asked-info', 3);
    expect(mine.map((l) => [l.level, l.msg, l.req?.method, l.res?.statusCode])).toEqual([
      [30, 'request completed', 'GET', 200],
      [30, 'request completed', 'GET', 401],
      [30, 'request completed', 'GET', 404],
    ]);
    expect(mine[0]!.req!.url).toBe('/v1/runs?limit=1&m=asked-info');
    for (const l of mine) expect(l.responseTime).toEqual(expect.any(Number));
  }, 60_000);
});

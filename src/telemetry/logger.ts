// pino JSON logs. Credentials never reach a log line, by one rule rather than per route
// (src/domain/log-redaction.ts): every line the logger writes passes through redactLogLine, which
// replaces the values of query parameters, headers and fields named like credentials (token,
// password, key, secret, authorization, cookie, x-clickhouse-key, …) at any depth, and our token
// format wherever it appears. pino's own `redact` drops the usual header paths before they are
// even serialized, and the request serializer writes the URL with its credentials redacted.
import pino, { type Logger } from 'pino';
import { REDACTED, redactLogLine, redactUrl } from '../domain/log-redaction.js';

/** Headers that carry credentials, as Node names them (lowercase). */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-clickhouse-key'];

export const REDACT_PATHS = [
  ...['req.headers', 'request.headers', 'headers', 'res.headers'].flatMap((h) => CREDENTIAL_HEADERS.map((name) => `${h}["${name}"]`)),
  'authorization',
  '*.authorization',
  'token',
  '*.token',
  'password',
  '*.password',
];

/** What fastify logs of a request (its own serializer, with `url` redacted); fastify uses the logger's serializer over its own. */
interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number } | null;
}

function requestSerializer(req: LoggedRequest): unknown {
  // Not a request (something else logged under `req`): left to the redaction of every line.
  if (typeof req !== 'object' || req === null || typeof req.url !== 'string') return req;
  return {
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'flakehouse' },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      serializers: { req: requestSerializer },
      timestamp: pino.stdTimeFunctions.isoTime,
      // The last step before a line is written, for every logger and child: bindings, message,
      // fields and error stacks alike.
      hooks: { streamWrite: redactLogLine },
    },
    destination,
  );
}

// pino JSON logs. Credentials never reach a log line: authorization headers and token-like fields
// are redacted wherever they appear.
import pino, { type Logger } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'request.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'token',
  '*.token',
  'password',
  '*.password',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'flakehouse' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

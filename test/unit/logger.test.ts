import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/telemetry/logger.js';

describe('logger', () => {
  it('redacts authorization headers and tokens wherever they appear', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const log = createLogger('info', sink);
    const secret = 'fh_0123456789abcdef0123456789abcdef0123456789abcdef';
    log.info({ req: { headers: { authorization: `Bearer ${secret}` } } }, 'request');
    log.info({ headers: { authorization: `Bearer ${secret}` }, token: secret }, 'other');
    log.info({ config: { token: secret } }, 'nested');
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).not.toContain(secret);
      expect(line).toContain('[redacted]');
    }
  });
});

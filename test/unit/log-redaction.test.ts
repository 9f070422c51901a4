// The log's redaction rule (src/domain/log-redaction.ts) and the logger that applies it to every line.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CREDENTIAL_NAMES, CREDENTIAL_SUFFIXES, isCredentialName, redactLogLine, redactText } from '../../src/domain/log-redaction.js';
import { createLogger } from '../../src/telemetry/logger.js';

const TOKEN = `fh_${'ab12'.repeat(12)}`;

function capture(): { lines: () => string[]; logger: ReturnType<typeof createLogger> } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString('utf8'));
      cb();
    },
  });
  return { logger: createLogger('trace', sink), lines: () => chunks.join('').split('\n').filter(Boolean) };
}

describe('credential names', () => {
  it('are matched whatever the case and separators, by name or by suffix; plain names are not', () => {
    for (const n of ['token', 'TOKEN', 'password', 'key', 'secret', 'Authorization', 'X-ClickHouse-Key', 'x_clickhouse_key', 'cookie', 'access_token', 'adminToken', 'client_secret', 'x-csrf-token', 'flakehouse_session', 'api-key', 'token[]']) {
      expect(isCredentialName(n), n).toBe(true);
    }
    for (const n of ['tokenId', 'tokenPresent', 'tokens', 'idempotencyKey', 'x-clickhouse-user', 'user', 'query', 'database', 'url', '']) {
      expect(isCredentialName(n), n).toBe(false);
    }
  });

  it('are the ones docs/operations.md lists', () => {
    const doc = readFileSync(path.resolve(import.meta.dirname, '../../docs/operations.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Logs'));
    const listed = new Set([...section.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!.toLowerCase().replace(/[-_.]/g, '')));
    expect([...CREDENTIAL_NAMES, ...CREDENTIAL_SUFFIXES].filter((n) => !listed.has(n))).toEqual([]);
  });
});

describe('redactText', () => {
  it('redacts credential query parameters and keeps the others', () => {
    expect(redactText(`/clickhouse?query=SELECT%201&user=web&password=${TOKEN}&database=x`)).toBe('/clickhouse?query=SELECT%201&user=web&password=[redacted]&database=x');
    expect(redactText('/badge/x/health.svg?token=abc&style=flat')).toBe('/badge/x/health.svg?token=[redacted]&style=flat');
    expect(redactText('/v1/runs?key=1&KEY=2&api_key=3&access_token=4&limit=5')).toBe('/v1/runs?key=[redacted]&KEY=[redacted]&api_key=[redacted]&access_token=[redacted]&limit=5');
  });

  it('sees through percent-encoded names, brackets and values with quotes or `=`', () => {
    expect(redactText('/x?tok%65n=abc')).toBe('/x?tok%65n=[redacted]');
    expect(redactText('/x?token[]=abc&token[0]=def')).toBe('/x?token[]=[redacted]&token[0]=[redacted]');
    expect(redactText('/x?token=a"b=c')).toBe('/x?token=[redacted]');
  });

  it('redacts name=value pairs in text, URL userinfo, Bearer/Basic credentials and our token format anywhere', () => {
    expect(redactText('connect failed: password=hunter22 host=db')).toBe('connect failed: password=[redacted] host=db');
    expect(redactText('https://user:s3cret@host/x and https://ghp_abc@github.com/o/r')).toBe('https://user:[redacted]@host/x and https://[redacted]@github.com/o/r');
    expect(redactText('sent Authorization: Bearer abcdef123456')).toBe('sent Authorization: Bearer [redacted]');
    expect(redactText(`Basic ${Buffer.from(`web:${TOKEN}`).toString('base64')}`)).toBe('Basic [redacted]');
    expect(redactText('send it as basic auth or X-ClickHouse-Key')).toBe('send it as basic auth or X-ClickHouse-Key');
    expect(redactText(`/v1/runs/${TOKEN}/rca`)).toBe('/v1/runs/fh_[redacted]/rca');
  });
});

describe('redactLogLine', () => {
  it('redacts credential-named fields at any depth, of any type but booleans', () => {
    const line = `${JSON.stringify({ a: { b: { c: { token: 'x', cookie: ['s=1'], pin_password: 123456, tokenId: 't1', tokens: 12, tokenPresent: true } } } })}\n`;
    expect(JSON.parse(redactLogLine(line))).toEqual({ a: { b: { c: { token: '[redacted]', cookie: '[redacted]', pin_password: '[redacted]', tokenId: 't1', tokens: 12, tokenPresent: true } } } });
    expect(redactLogLine(line).endsWith('\n')).toBe(true);
    // Whatever separators a name is written with, and with no other hint in the line.
    expect(JSON.parse(redactLogLine('{"s":{"SID":"abc","X_Csrf":"def"}}\n'))).toEqual({ s: { SID: '[redacted]', X_Csrf: '[redacted]' } });
  });

  it('returns a line with nothing to redact as it was (big numbers keep their digits)', () => {
    const line = '{"level":30,"n":123456789012345678901,"msg":"key rotated"}\n';
    expect(redactLogLine(line)).toBe(line);
  });
});

describe('createLogger', () => {
  it("writes fastify's request fields with the URL redacted, and redacts fields, bindings, messages and error stacks", () => {
    const { logger, lines } = capture();
    logger.info({ req: { method: 'GET', url: `/clickhouse?password=${TOKEN}`, host: 'h', ip: '127.0.0.1', socket: { remotePort: 5 } } }, 'incoming request');
    logger.child({ adminToken: 'adm-secret-1' }).warn({ headers: { authorization: 'Bearer zz', 'x-clickhouse-key': 'k', 'x-clickhouse-user': 'web' } }, `called /x?token=${TOKEN}`);
    logger.error(new Error(`request to https://api.example.com/v1?key=AIzaSecret1 failed`));
    const text = lines().join('\n');
    for (const secret of [TOKEN, 'adm-secret-1', 'Bearer zz', '"k"', 'AIzaSecret1']) expect(text).not.toContain(secret);
    const [req, warn, err] = lines().map((l) => JSON.parse(l) as { req?: unknown; err?: { stack: string } });
    expect(req!.req).toEqual({ method: 'GET', url: '/clickhouse?password=[redacted]', host: 'h', remoteAddress: '127.0.0.1', remotePort: 5 });
    expect(warn).toMatchObject({ adminToken: '[redacted]', headers: { authorization: '[redacted]', 'x-clickhouse-key': '[redacted]', 'x-clickhouse-user': 'web' }, msg: 'called /x?token=[redacted]' });
    expect(err!.err!.stack).toContain('?key=[redacted] failed');
  });
});

// The run buffer on a real directory: atomic claims (one replayer per entry), release, reject,
// corrupt entries set aside, and claims of killed processes taken back.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunBuffer, type BufferEntry } from '../../client/src/reporter/buffer.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fh-buffer-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const entry = (key: string): BufferEntry => ({
  version: 1,
  idempotencyKey: key,
  endpoint: 'http://127.0.0.1:8080',
  project: null,
  transport: 'otlp',
  executions: 3,
  createdAt: new Date().toISOString(),
  reason: 'ECONNREFUSED',
  requests: [{ path: '/v1/traces', contentType: 'application/x-protobuf', bodyBase64: 'AAEC' }],
});

describe('RunBuffer', () => {
  it('writes owner-only entries, oldest first, and a claimed entry is claimed once', () => {
    const buf = new RunBuffer(path.join(dir, 'b'));
    const a = buf.write(entry('key-a/with:odd chars'));
    const b = buf.write(entry('key-b'));
    expect(fs.statSync(a).mode & 0o777).toBe(0o600);
    expect(path.basename(a)).toMatch(/^\d{14}-key-a_with_odd_chars-[0-9a-f]{6}\.run\.json$/);
    expect(buf.pending()).toEqual([a, b].sort());
    const claim = buf.claim(a);
    expect(claim && 'entry' in claim ? claim.entry.idempotencyKey : null).toBe('key-a/with:odd chars');
    expect(buf.claim(a)).toBeUndefined();
    expect(buf.pending()).toEqual([b]);
    if (!claim || !('entry' in claim)) throw new Error('unreachable');
    buf.release(claim);
    expect(buf.pending()).toEqual([a, b].sort());
    const again = buf.claim(a);
    if (!again || !('entry' in again)) throw new Error('expected a claim');
    buf.complete(again);
    expect(buf.pending()).toEqual([b]);
    const third = buf.claim(b);
    if (!third || !('entry' in third)) throw new Error('expected a claim');
    const rejected = buf.reject(third);
    expect(rejected.endsWith('.rejected.json')).toBe(true);
    expect(fs.existsSync(rejected)).toBe(true);
    expect(buf.pending()).toEqual([]);
  });

  it('sets a corrupt entry aside instead of failing every later report', () => {
    const buf = new RunBuffer(dir);
    const file = path.join(dir, '00000000000001-broken-abcdef.run.json');
    fs.writeFileSync(file, '{"version": 1, "requests": ');
    const res = buf.claim(file);
    expect(res && 'corrupt' in res ? res.corrupt : '').toContain('00000000000001-broken-abcdef.rejected.json');
    expect(buf.pending()).toEqual([]);
  });

  it('takes back a claim left by a killed process after ten minutes, not before', () => {
    const buf = new RunBuffer(dir);
    const file = buf.write(entry('key-stale'));
    const claim = buf.claim(file);
    if (!claim || !('entry' in claim)) throw new Error('expected a claim');
    expect(buf.pending()).toEqual([]);
    expect(buf.pending(Date.now() + 11 * 60_000)).toEqual([file]);
  });

  it('an absent directory has nothing pending', () => {
    expect(new RunBuffer(path.join(dir, 'missing')).pending()).toEqual([]);
  });
});

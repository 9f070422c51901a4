// The one extension → content-type table: the JUnit receiver, the reporters and the uploader type a
// known file alike, and only ever with a type the server accepts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ALLOWED_CONTENT_TYPES, UNKNOWN_CONTENT_TYPE, allowedContentType, contentTypeForFile } from '../../client/src/contract/content-types.js';
import { guessContentType } from '../../client/src/contract/junit/helpers.js';
import { fileArtifact } from '../../client/src/reporter/collect.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'content-types-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const NAMES = ['a.png', 'a.JPG', 'a.jpeg', 'a.webp', 'a.webm', 'a.mp4', 'trace.zip', 'a.json', 'net.har', 'a.txt', 'run.log', 'error-context.md', 'a.html', 'a.HTM'];
const UNKNOWN = ['anim.gif', 'blob.bin', 'Makefile', 'notes', 'image.svg'];

describe('contentTypeForFile', () => {
  it('types every known extension with an allowed type, case-insensitively', () => {
    expect(NAMES.map(contentTypeForFile)).toEqual([
      'image/png',
      'image/jpeg',
      'image/jpeg',
      'image/webp',
      'video/webm',
      'video/mp4',
      'application/zip',
      'application/json',
      'application/json',
      'text/plain',
      'text/plain',
      'text/plain',
      'text/html',
      'text/html',
    ]);
    for (const n of NAMES) expect(ALLOWED_CONTENT_TYPES).toContain(contentTypeForFile(n));
  });

  it('gives null for anything else, and the unknown type is not on the allow-list', () => {
    for (const n of UNKNOWN) expect(contentTypeForFile(n), n).toBeNull();
    expect(allowedContentType(UNKNOWN_CONTENT_TYPE)).toBeNull();
  });
});

describe('the JUnit receiver and the reporters use the same table', () => {
  it('agree on every known name', () => {
    for (const n of NAMES) {
      const file = path.join(dir, n);
      fs.writeFileSync(file, 'x');
      expect(guessContentType(n), n).toBe(contentTypeForFile(n));
      expect(fileArtifact(n, undefined, file)?.contentType, n).toBe(contentTypeForFile(n));
    }
  });

  it('label unknown names as before: JUnit text/plain, the reporters octet-stream', () => {
    for (const n of UNKNOWN) {
      const file = path.join(dir, n);
      fs.writeFileSync(file, 'x');
      expect(guessContentType(n), n).toBe('text/plain');
      expect(fileArtifact(n, undefined, file)?.contentType, n).toBe(UNKNOWN_CONTENT_TYPE);
    }
  });

  it('keeps a type the runner gave', () => {
    const file = path.join(dir, 'shot.bin');
    fs.writeFileSync(file, 'x');
    expect(fileArtifact('shot', 'image/png', file)?.contentType).toBe('image/png');
  });
});

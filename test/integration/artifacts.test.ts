// Artifacts end to end against a real S3-compatible server (s3rver on loopback) and the real
// daemon: POST /v1/artifacts/presign, a PUT of real bytes to the signed URL, the refs carried by
// the batch, and run/test detail handing out download URLs that give the same bytes back.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifactKey } from '../../client/src/contract/artifact-keys.js';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { parseJUnit } from '../../client/src/contract/junit/parse.js';
import { uploadArtifacts } from '../../client/src/reporter/artifacts.js';
import { ProjectRepo } from '../../src/store/projects.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { BIN } from '../helpers/process.js';
import { presignedUrlAccepts, startTestS3, type TestS3 } from '../helpers/s3.js';

let s3: TestS3;
let td: TestDaemon;
let projectId: string;
let scratch: string;

beforeAll(async () => {
  s3 = await startTestS3();
  // Polling the read API counts against the per-project rate limit; this file is not about it.
  td = await startTestDaemon({ env: { ...s3.env, SERVICE_RATE_LIMIT_MAX: '100000' } });
  projectId = (await new ProjectRepo(td.daemon.store).bySlug('default'))!.id;
  scratch = mkdtempSync(path.join(tmpdir(), 'fh-artifacts-'));
});

afterAll(async () => {
  await td?.close();
  await s3?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** PNG signature, then random bytes: every byte value, CR/LF and NUL included. */
function pngLike(size: number): Buffer {
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(size - 8)]);
}

function uniqueKey(label: string): string {
  return `${label}-${randomBytes(6).toString('hex')}`;
}

async function download(url: string): Promise<{ status: number; bytes: Buffer }> {
  const res = await fetch(url);
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** Ingests a batch on its own branch and returns that run's detail. */
async function ingestAndRead(executions: unknown[], key: string, token = td.token): Promise<any> {
  const branch = `art-${randomBytes(5).toString('hex')}`;
  const res = await td.request('POST', '/v1/ingest', { token, body: nativeBatch({ key, executions, resource: { branch } }) });
  expect(res.status, res.text).toBe(202);
  await td.settled();
  const run = await td.waitFor(async () => (await td.request('GET', `/v1/runs?branch=${branch}`, { token })).json.items[0]);
  const detail = await td.request('GET', `/v1/runs/${run.id}`, { token });
  expect(detail.status).toBe(200);
  return detail.json;
}

const exec = (title: string, artifacts: unknown[], i = 0, status = 'fail'): Record<string, unknown> => ({
  filePath: 'src/checkout.test.ts',
  suite: 'checkout',
  title,
  status,
  startedAt: Date.parse('2026-11-20T10:00:00Z') + i,
  durationMs: 5,
  ...(status === 'fail' ? { error: { message: 'boom' } } : {}),
  artifacts,
});

describe('POST /v1/artifacts/presign → PUT → run and test detail', () => {
  it('signs PUT URLs bound to type and length, and the download URLs give the bytes back', async () => {
    const idempotencyKey = `ci run/${randomBytes(4).toString('hex')} attempt 1`;
    const png = pngLike(300_000);
    const zip = Buffer.concat([Buffer.from('PK\x03\x04'), randomBytes(5000)]);
    const res = await td.request('POST', '/v1/artifacts/presign', {
      body: {
        idempotencyKey,
        artifacts: [
          { executionIndex: 0, name: 'login page.png', contentType: 'image/png', sizeBytes: png.length },
          { executionIndex: 1, name: 'trace.zip', contentType: 'Application/Zip; x=1', sizeBytes: zip.length },
        ],
      },
    });
    expect(res.status, res.text).toBe(200);
    const [first, second] = res.json.items;
    expect(res.json.items).toHaveLength(2);
    expect({ url: res.json.url, key: res.json.key, headers: res.json.headers }).toEqual({ url: first.url, key: first.key, headers: first.headers });
    expect(first).toMatchObject({ executionIndex: 0, name: 'login page.png', key: artifactKey(projectId, idempotencyKey, 0, 'login page.png') });
    expect(first.key).toMatch(new RegExp(`^proj/${projectId}/run/[A-Za-z0-9._-]+/0/login_page-[0-9a-f]{10}\\.png$`));
    expect(first.headers).toEqual({ 'content-type': 'image/png', 'content-length': String(png.length) });
    // Flakemetry's SDK reads `uploadUrl`.
    expect([first.uploadUrl, second.uploadUrl]).toEqual([first.url, second.url]);
    expect(second.headers).toEqual({ 'content-type': 'application/zip', 'content-length': String(zip.length) });

    // Upload URLs: the internal endpoint, 900 s, and a signature that covers type and length.
    const put = new URL(first.url);
    expect(put.origin).toBe(s3.endpoint);
    expect(put.pathname.startsWith(`/${s3.bucket}/proj/${projectId}/`)).toBe(true);
    expect(put.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(put.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(expect.arrayContaining(['content-type', 'content-length', 'host']));
    expect(put.searchParams.has('x-amz-checksum-crc32')).toBe(false);
    expect(presignedUrlAccepts(first.url, 'PUT', first.headers, s3.secretAccessKey)).toBe(true);
    expect(presignedUrlAccepts(first.url, 'PUT', { ...first.headers, 'content-type': 'text/html' }, s3.secretAccessKey)).toBe(false);
    expect(presignedUrlAccepts(first.url, 'PUT', { ...first.headers, 'content-length': String(png.length + 1) }, s3.secretAccessKey)).toBe(false);
    expect(presignedUrlAccepts(first.url, 'PUT', first.headers, 'another-secret')).toBe(false);

    for (const [item, bytes] of [
      [first, png],
      [second, zip],
    ] as const) {
      const up = await fetch(item.url, { method: 'PUT', headers: item.headers, body: bytes });
      expect(up.status, await up.text()).toBe(200);
    }

    const foreignKey = `proj/${randomBytes(16).toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-')}/run/x/0/a.png`;
    const detail = await ingestAndRead(
      [
        exec('logs in', [
          { name: 'login page.png', contentType: 'image/png', path: '/ci/shots/login page.png', key: first.key, sizeBytes: png.length },
          { name: 'not uploaded.png', contentType: 'image/png', path: '/ci/shots/not uploaded.png' },
          { name: 'foreign.png', contentType: 'image/png', path: '/x', key: foreignKey },
          { name: 'climbing.png', contentType: 'image/png', path: '/x', key: `proj/${projectId}/../../${foreignKey}` },
        ]),
        exec('pays', [{ name: 'trace.zip', contentType: 'application/zip', path: 'trace.zip', key: second.key, sizeBytes: zip.length }], 1, 'pass'),
      ],
      idempotencyKey,
    );
    const logsIn = detail.executions.find((e: any) => e.title === 'logs in');
    const pays = detail.executions.find((e: any) => e.title === 'pays');
    expect(logsIn.artifacts).toHaveLength(4);
    const [shot, notUploaded, foreign, climbing] = logsIn.artifacts;
    expect(shot).toMatchObject({ name: 'login page.png', contentType: 'image/png', path: '/ci/shots/login page.png', key: first.key, sizeBytes: png.length });
    expect(notUploaded).toEqual({ name: 'not uploaded.png', contentType: 'image/png', path: '/ci/shots/not uploaded.png', url: null });
    expect(foreign.url).toBeNull();
    expect(climbing.url).toBeNull();

    // Download URLs: the public endpoint, 300 s, signed for a plain GET.
    const get = new URL(shot.url);
    expect(get.origin).toBe(s3.publicEndpoint);
    expect(get.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(presignedUrlAccepts(shot.url, 'GET', {}, s3.secretAccessKey)).toBe(true);
    const got = await download(shot.url);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(png)).toBe(true);
    expect((await download(pays.artifacts[0].url)).bytes.equals(zip)).toBe(true);

    // The test page lists the same refs with their own fresh URLs.
    const test = await td.request('GET', `/v1/tests/${logsIn.testIdentityId}`);
    expect(test.status).toBe(200);
    const entry = test.json.history.find((h: any) => h.executionId === logsIn.id);
    expect(entry.artifacts.map((a: any) => a.name)).toEqual(['login page.png', 'not uploaded.png', 'foreign.png', 'climbing.png']);
    expect(entry.artifacts.map((a: any) => a.url === null)).toEqual([false, true, true, true]);
    expect((await download(entry.artifacts[0].url)).bytes.equals(png)).toBe(true);
  });

  it('gives no download URL to another project for a key of this one', async () => {
    const png = pngLike(1000);
    const idempotencyKey = uniqueKey('cross');
    const p = await td.request('POST', '/v1/artifacts/presign', {
      body: { idempotencyKey, artifacts: [{ executionIndex: 0, name: 'a.png', contentType: 'image/png', sizeBytes: png.length }] },
    });
    expect((await fetch(p.json.url, { method: 'PUT', headers: p.json.headers, body: png })).status).toBe(200);

    const created = await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug: `other-${randomBytes(3).toString('hex')}` } });
    expect(created.status, created.text).toBe(201);
    const other = await td.request('POST', `/v1/admin/projects/${created.json.slug}/tokens`, { token: td.adminToken, body: { scopes: ['ingest', 'read'] } });
    const ref = { name: 'a.png', contentType: 'image/png', path: 'a.png', key: p.json.key, sizeBytes: png.length };
    const theirs = await ingestAndRead([exec('steals', [ref])], uniqueKey('thief'), other.json.token);
    expect(theirs.executions[0].artifacts[0]).toMatchObject({ key: p.json.key, url: null });
    const ours = await ingestAndRead([exec('owns', [ref])], idempotencyKey);
    expect((await download(ours.executions[0].artifacts[0].url)).bytes.equals(png)).toBe(true);
  });
});

describe('POST /v1/artifacts/presign refusals', () => {
  const item = { executionIndex: 0, name: 'a.png', contentType: 'image/png', sizeBytes: 10 };

  it('answers 415 for a type outside the allow-list, naming the type and where it is', async () => {
    const res = await td.request('POST', '/v1/artifacts/presign', {
      body: { idempotencyKey: uniqueKey('type'), artifacts: [item, { ...item, name: 'b.gif', contentType: 'image/gif' }] },
    });
    expect(res.status).toBe(415);
    expect(res.json).toMatchObject({ error: 'unsupported_content_type', contentType: 'image/gif', issues: [{ path: 'artifacts.1.contentType' }] });
    expect(res.json.message).toContain('image/png');
  });

  it('answers 400 naming the path for an oversized artifact, too many, none, bad fields or a duplicate', async () => {
    const cases: [unknown, string][] = [
      [{ idempotencyKey: uniqueKey('size'), artifacts: [item, { ...item, name: 'big.mp4', contentType: 'video/mp4', sizeBytes: 50 * 1024 * 1024 + 1 }] }, 'artifacts.1.sizeBytes'],
      [{ idempotencyKey: uniqueKey('count'), artifacts: Array.from({ length: 201 }, (_, i) => ({ ...item, name: `${i}.png` })) }, 'artifacts'],
      [{ idempotencyKey: uniqueKey('none'), artifacts: [] }, 'artifacts'],
      [{ idempotencyKey: 'short', artifacts: [item] }, 'idempotencyKey'],
      [{ idempotencyKey: uniqueKey('index'), artifacts: [{ ...item, executionIndex: -1 }] }, 'artifacts.0.executionIndex'],
      [{ idempotencyKey: uniqueKey('dup'), artifacts: [item, { ...item, sizeBytes: 20 }] }, 'artifacts.1.name'],
    ];
    for (const [body, path] of cases) {
      const res = await td.request('POST', '/v1/artifacts/presign', { body });
      expect(res.status, path).toBe(400);
      expect(res.json.error).toBe('invalid_payload');
      expect(res.json.issues.map((i: any) => i.path), res.text).toContain(path);
    }
    // The bounds themselves are allowed.
    const edge = await td.request('POST', '/v1/artifacts/presign', {
      body: { idempotencyKey: uniqueKey('edge'), artifacts: Array.from({ length: 200 }, (_, i) => ({ ...item, name: `${i}.mp4`, contentType: 'video/mp4', sizeBytes: 50 * 1024 * 1024 })) },
    });
    expect(edge.status, edge.text).toBe(200);
    expect(edge.json.items).toHaveLength(200);
  });

  it('needs a token (401) with the ingest scope (403)', async () => {
    const body = { idempotencyKey: uniqueKey('auth'), artifacts: [item] };
    const anonymous = await td.request('POST', '/v1/artifacts/presign', { token: null, body });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error).toBe('unauthorized');
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    const readOnly = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    const denied = await td.request('POST', '/v1/artifacts/presign', { token: readOnly.json.token, body });
    expect(denied.status).toBe(403);
    expect(denied.json.error).toBe('insufficient_scope');
  });

  it('answers 404 for a project whose policy turns artifacts off, and the reporter stops uploading for the run', async () => {
    const slug = `noart-${randomBytes(3).toString('hex')}`;
    expect((await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug } })).status).toBe(201);
    const patched = await td.request('PATCH', `/v1/admin/projects/${slug}/settings`, { token: td.adminToken, body: { artifacts: { enabled: false } } });
    expect(patched.status, patched.text).toBe(200);
    const token = (await td.request('POST', `/v1/admin/projects/${slug}/tokens`, { token: td.adminToken, body: { scopes: ['ingest'] } })).json.token;
    const body = { idempotencyKey: uniqueKey('policy'), artifacts: [item] };
    const res = await td.request('POST', '/v1/artifacts/presign', { token, body });
    expect(res.status).toBe(404);
    expect(res.json.error).toBe('not_found');
    // Other projects keep theirs.
    expect((await td.request('POST', '/v1/artifacts/presign', { body })).status).toBe(200);

    const file = path.join(scratch, 'policy.png');
    writeFileSync(file, pngLike(64));
    const executions: ExecutionInput[] = [
      { filePath: 'a', suite: '', title: 't', status: 'fail', attempt: 1, startedAt: 0, durationMs: 1, artifacts: [{ name: 'p.png', contentType: 'image/png', path: file }] },
    ];
    const warnings: string[] = [];
    const result = await uploadArtifacts({ idempotencyKey: uniqueKey('policy'), executions, endpoint: td.url, token, warn: (l) => warnings.push(l) });
    expect(result).toEqual({ uploaded: 0, skipped: 1, failed: 0, disabled: true });
    expect(warnings).toEqual([expect.stringMatching(/artifact uploads are off for this run.*404/)]);
  });

  it('answers 501 artifacts_disabled when no bucket is configured, after auth and whatever the body', async () => {
    const off = await startTestDaemon();
    try {
      const valid = await off.request('POST', '/v1/artifacts/presign', { body: { idempotencyKey: uniqueKey('off'), artifacts: [item] } });
      expect(valid.status).toBe(501);
      expect(valid.json.error).toBe('artifacts_disabled');
      expect((await off.request('POST', '/v1/artifacts/presign', { body: { artifacts: 'nope' } })).status).toBe(501);
      expect((await off.request('POST', '/v1/artifacts/presign', { token: null, body: { artifacts: [item] } })).status).toBe(401);

      // Refs still show on the run, without URLs.
      const branch = `off-${randomBytes(4).toString('hex')}`;
      await off.ingest(nativeBatch({ resource: { branch }, executions: [exec('t', [{ name: 'a.png', contentType: 'image/png', path: 'a.png', key: `proj/x/a.png` }])] }));
      const run = (await off.request('GET', `/v1/runs?branch=${branch}`)).json.items[0];
      const detail = await off.request('GET', `/v1/runs/${run.id}`);
      expect(detail.json.executions[0].artifacts).toEqual([{ name: 'a.png', contentType: 'image/png', path: 'a.png', key: 'proj/x/a.png', url: null }]);
    } finally {
      await off.close();
    }
  });
});

describe('reporter: uploadArtifacts', () => {
  it('uploads JUnit and runner attachments, skips missing and refused files with a warning, and the batch carries the keys', async () => {
    const dir = mkdtempSync(path.join(scratch, 'junit-'));
    mkdirSync(path.join(dir, 'shots'));
    const shot = pngLike(120_000);
    const log = Buffer.from('line 1\r\nline 2\u0000\n');
    writeFileSync(path.join(dir, 'shots', 'cart.png'), shot);
    writeFileSync(path.join(dir, 'out.log'), log);
    writeFileSync(path.join(dir, 'anim.gif'), randomBytes(100));
    const har = Buffer.from(JSON.stringify({ log: { entries: [] } }));
    writeFileSync(path.join(dir, 'network.har'), har);
    const markdown = Buffer.from('# Page snapshot\n\n- button "Pay"\n');
    writeFileSync(path.join(dir, 'error-context.md'), markdown);
    const xml = `<?xml version="1.0"?>
<testsuite name="cart" timestamp="2026-11-20T10:00:00Z">
  <testcase classname="cart" name="applies a coupon" file="src/cart.test.ts" time="0.1">
    <failure message="expected 90 to be 80">stack</failure>
    <system-out>[[ATTACHMENT|shots/cart.png]]
[[ATTACHMENT|shots/missing.png]]</system-out>
  </testcase>
  <testcase classname="cart" name="adds an item" file="src/cart.test.ts" time="0.1"/>
</testsuite>`;
    const parsed = parseJUnit(xml, { now: Date.now() });
    if (!parsed.ok) throw new Error(parsed.message);
    const executions: ExecutionInput[] = parsed.executions;
    expect(executions[0]!.artifacts?.map((a) => a.path)).toEqual(['shots/cart.png', 'shots/missing.png']);
    // As a runner reporter would add them: an accepted text file, a refused type, a file the
    // runner could not type (octet-stream), typed by its name, and text of another kind
    // (Playwright's error-context is text/markdown), sent as text/plain.
    executions[1]!.artifacts = [
      { name: 'out.log', contentType: 'text/plain; charset=utf-8', path: path.join(dir, 'out.log') },
      { name: 'anim.gif', contentType: 'image/gif', path: path.join(dir, 'anim.gif') },
      { name: 'network', contentType: 'application/octet-stream', path: 'network.har' },
      { name: 'error-context', contentType: 'text/markdown', path: 'error-context.md' },
    ];

    const idempotencyKey = uniqueKey('reporter');
    const warnings: string[] = [];
    const result = await uploadArtifacts({ idempotencyKey, executions, endpoint: td.url, token: td.token, rootDir: dir, warn: (l) => warnings.push(l) });
    expect(result).toEqual({ uploaded: 4, skipped: 2, failed: 0, disabled: false });
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/missing\.png skipped: no such file/);
    expect(warnings[1]).toMatch(/anim\.gif skipped: content type "image\/gif" is not accepted/);
    const [cart, missing] = executions[0]!.artifacts!;
    expect(cart).toMatchObject({ key: artifactKey(projectId, idempotencyKey, 0, 'cart.png'), sizeBytes: shot.length });
    expect(missing?.key).toBeUndefined();
    expect(executions[1]!.artifacts[0]).toMatchObject({ key: artifactKey(projectId, idempotencyKey, 1, 'out.log'), sizeBytes: log.length, contentType: 'text/plain' });
    expect(executions[1]!.artifacts[2]).toMatchObject({ key: artifactKey(projectId, idempotencyKey, 1, 'network'), contentType: 'application/json' });
    expect(executions[1]!.artifacts[3]).toMatchObject({ key: artifactKey(projectId, idempotencyKey, 1, 'error-context'), contentType: 'text/plain' });
    expect(executions[1]!.artifacts[1]?.key).toBeUndefined();

    const detail = await ingestAndRead(executions.map((e) => ({ ...e })), idempotencyKey);
    const coupon = detail.executions.find((e: any) => e.title === 'applies a coupon');
    const item = detail.executions.find((e: any) => e.title === 'adds an item');
    expect((await download(coupon.artifacts[0].url)).bytes.equals(shot)).toBe(true);
    expect(coupon.artifacts[1].url).toBeNull();
    expect((await download(item.artifacts[0].url)).bytes.equals(log)).toBe(true);
    expect(item.artifacts[1].url).toBeNull();
    expect((await download(item.artifacts[2].url)).bytes.equals(har)).toBe(true);
    expect((await download(item.artifacts[3].url)).bytes.equals(markdown)).toBe(true);
  });

  it('presigns in chunks of at most 200', async () => {
    const dir = mkdtempSync(path.join(scratch, 'many-'));
    const executions: ExecutionInput[] = Array.from({ length: 3 }, (_, i) => ({
      filePath: 'src/many.test.ts',
      suite: '',
      title: `case ${i}`,
      status: 'pass',
      attempt: 1,
      startedAt: 0,
      durationMs: 1,
      artifacts: [],
    }));
    // 205 files, all named `same.txt`: one execution's duplicates get distinct keys.
    for (let i = 0; i < 205; i++) {
      const file = path.join(dir, `f${i}.txt`);
      writeFileSync(file, `file ${i}`);
      executions[i % 3]!.artifacts!.push({ name: 'same.txt', contentType: 'text/plain', path: file });
    }
    const warnings: string[] = [];
    const result = await uploadArtifacts({ idempotencyKey: uniqueKey('chunks'), executions, endpoint: td.url, token: td.token, warn: (l) => warnings.push(l) });
    expect(warnings).toEqual([]);
    expect(result.uploaded).toBe(205);
    const keys = executions.flatMap((e) => e.artifacts!.map((a) => a.key));
    expect(new Set(keys).size).toBe(205);
    // The last file went out in the second presign call; it comes back from the run as it was.
    const last = executions[204 % 3]!.artifacts!.at(-1)!;
    expect(last.key).toMatch(/\/0\/same-69\.txt$/);
    const detail = await ingestAndRead(executions.map((e) => ({ ...e })), uniqueKey('chunks-run'));
    const refs = detail.executions.find((e: any) => e.title === 'case 0').artifacts;
    expect(refs).toHaveLength(69);
    expect((await download(refs.at(-1).url)).bytes.toString()).toBe('file 204');
  });

  it('turns uploads off for the run with one warning when the server has no storage, and never throws', async () => {
    const off = await startTestDaemon();
    try {
      const file = path.join(scratch, 'off.png');
      writeFileSync(file, pngLike(100));
      const executions: ExecutionInput[] = Array.from({ length: 250 }, (_, i) => ({
        filePath: 'a.test.ts',
        suite: '',
        title: `t${i}`,
        status: 'fail',
        attempt: 1,
        startedAt: 0,
        durationMs: 1,
        artifacts: [{ name: 'off.png', contentType: 'image/png', path: file }],
      }));
      const warnings: string[] = [];
      const result = await uploadArtifacts({ idempotencyKey: uniqueKey('off'), executions, endpoint: off.url, token: off.token, warn: (l) => warnings.push(l) });
      expect(result).toEqual({ uploaded: 0, skipped: 250, failed: 0, disabled: true });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/artifact uploads are off for this run.*501 artifacts_disabled/);
      expect(executions.every((e) => e.artifacts![0]!.key === undefined)).toBe(true);
    } finally {
      await off.close();
    }

    // Nobody listening: a warning, no throw.
    const warnings: string[] = [];
    const file = path.join(scratch, 'nobody.png');
    writeFileSync(file, pngLike(100));
    const executions: ExecutionInput[] = [
      { filePath: 'a', suite: '', title: 't', status: 'fail', attempt: 1, startedAt: 0, durationMs: 1, artifacts: [{ name: 'n.png', contentType: 'image/png', path: file }] },
    ];
    const result = await uploadArtifacts({ idempotencyKey: uniqueKey('nobody'), executions, endpoint: 'http://127.0.0.1:9', token: 'fh_x', warn: (l) => warnings.push(l) });
    expect(result).toMatchObject({ uploaded: 0, failed: 1 });
    expect(warnings[0]).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9\/v1\/artifacts\/presign/);
  });
});

describe('flakehouse report with attachments', () => {
  /** Runs the CLI as CI would: its own process and cwd, a clean environment. */
  function runReport(cwd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
    const child = spawn(process.execPath, [BIN, 'report', ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: cwd, SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token, SERVICE_BUFFER_DIR: path.join(cwd, '.buffer'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, output }));
    });
  }

  for (const transport of ['otlp', 'json']) {
    it(`uploads [[ATTACHMENT|…]] files and --attach matches, and the run serves them byte for byte (${transport})`, async () => {
      const dir = mkdtempSync(path.join(scratch, `report-${transport}-`));
      mkdirSync(path.join(dir, 'shots'));
      mkdirSync(path.join(dir, 'videos'));
      const shot = pngLike(64_000);
      const video = Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), randomBytes(90_000)]);
      writeFileSync(path.join(dir, 'shots', 'coupon.png'), shot);
      writeFileSync(path.join(dir, 'videos', 'cart-adds-an-item.webm'), video);
      writeFileSync(path.join(dir, 'videos', 'unrelated.webm'), randomBytes(10));
      writeFileSync(
        path.join(dir, 'junit.xml'),
        `<?xml version="1.0"?>
<testsuite name="cart" timestamp="2026-11-20T10:00:00Z">
  <testcase classname="cart" name="applies a coupon" file="src/cart.test.ts" time="0.1">
    <failure message="expected 90 to be 80">at cart.test.ts:12</failure>
    <system-err>saved [[ATTACHMENT|shots/coupon.png]]</system-err>
  </testcase>
  <testcase classname="cart" name="adds an item" file="src/cart.test.ts" time="0.2"/>
</testsuite>`,
      );
      const branch = `report-${transport}-${randomBytes(4).toString('hex')}`;
      const { code, output } = await runReport(dir, ['--attach', 'videos/*.webm', 'junit.xml'], {
        SERVICE_TRANSPORT: transport,
        SERVICE_COMMIT_SHA: 'abc1234',
        SERVICE_BRANCH: branch,
      });
      expect(code, output).toBe(0);
      expect(output).toContain('uploaded 2 artifact(s)');
      expect(output).toMatch(/unrelated\.webm skipped: its path names no test/);

      await td.settled();
      const run = await td.waitFor(async () => (await td.request('GET', `/v1/runs?branch=${branch}`)).json.items[0]);
      const detail = (await td.request('GET', `/v1/runs/${run.id}`)).json;
      const coupon = detail.executions.find((e: any) => e.title === 'applies a coupon');
      const item = detail.executions.find((e: any) => e.title === 'adds an item');
      expect(coupon.artifacts).toHaveLength(1);
      expect(coupon.artifacts[0]).toMatchObject({ name: 'coupon.png', contentType: 'image/png', sizeBytes: shot.length });
      expect((await download(coupon.artifacts[0].url)).bytes.equals(shot)).toBe(true);
      expect(item.artifacts).toHaveLength(1);
      expect(item.artifacts[0]).toMatchObject({ name: 'cart-adds-an-item.webm', contentType: 'video/webm', sizeBytes: video.length });
      expect((await download(item.artifacts[0].url)).bytes.equals(video)).toBe(true);
    });
  }
});

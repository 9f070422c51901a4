// Artifact keys, the content-type allow-list, and which executions an `--attach` file belongs to.
import { describe, expect, it } from 'vitest';
import { artifactKey, isProjectKey, seg } from '../../client/src/contract/artifact-keys.js';
import { allowedContentType, contentTypeForFile, normalizeContentType } from '../../client/src/contract/content-types.js';
import { S3ArtifactStore } from '../../src/artifacts/s3.js';
import { loadServerSettings } from '../../src/config/daemon-env.js';
import type { ExecutionInput, IngestBatch } from '../../client/src/contract/batch.js';
import { decodeOtlpJson, decodeOtlpProtobuf } from '../../src/receivers/otlp/decode.js';
import { mapOtlpToBatches } from '../../src/receivers/otlp/map.js';
import { encodeOtlpRun } from '../../client/src/contract/otlp-encode.js';
import { presignedUrlAccepts } from '../helpers/s3.js';
import { executionsNamedBy } from '../../client/src/reporter/artifacts.js';

const PID = '0b6f3c1e-2d4a-4f6b-9c8d-7e5f4a3b2c1d';
const SAFE = /^[A-Za-z0-9._-]+$/;

describe('seg', () => {
  it('keeps a safe segment as it is', () => {
    expect(seg('ci-run-4711-attempt-1')).toBe('ci-run-4711-attempt-1');
    expect(seg('screenshot.png')).toBe('screenshot.png');
  });

  it('makes any other value a safe segment, keeping a short extension', () => {
    for (const v of ['login page.png', '../../etc/passwd', 'a/b\\c', '..', '.', '', 'ünïcödé.webm', 'x'.repeat(500), 'a\u0000b', '%2e%2e']) {
      const s = seg(v);
      expect(s, v).toMatch(SAFE);
      expect(s, v).not.toMatch(/^\.+$/);
      expect(s.length, v).toBeLessThanOrEqual(135);
    }
    expect(seg('login page.png')).toMatch(/^login_page-[0-9a-f]{10}\.png$/);
    expect(seg('ünïcödé.webm').endsWith('.webm')).toBe(true);
  });

  it('never maps two different values to one segment', () => {
    const values = ['a b.png', 'a_b.png', 'a?b.png', 'a/b.png', 'a\\b.png', 'x'.repeat(200), `${'x'.repeat(200)}y`, '..', '.', '', '...'];
    const segs = values.map(seg);
    expect(new Set(segs).size).toBe(values.length);
  });
});

describe('artifactKey', () => {
  it('files an artifact under the project, the run and the execution', () => {
    expect(artifactKey(PID, 'ci-run-1', 3, 'shot.png')).toBe(`proj/${PID}/run/ci-run-1/3/shot.png`);
    const key = artifactKey(PID, 'run 1/../../other', 0, '../../../x.png');
    expect(key.startsWith(`proj/${PID}/run/`)).toBe(true);
    expect(key.split('/')).toHaveLength(6);
    expect(isProjectKey(key, PID)).toBe(true);
  });
});

describe('isProjectKey', () => {
  it('accepts only plain keys under the project prefix', () => {
    expect(isProjectKey(`proj/${PID}/run/k/0/a.png`, PID)).toBe(true);
    expect(isProjectKey(`proj/${PID.replace('0b', '1b')}/run/k/0/a.png`, PID)).toBe(false);
    expect(isProjectKey(`proj/${PID}/../other/run/k/0/a.png`, PID)).toBe(false);
    expect(isProjectKey(`proj/${PID}/run/k/./a.png`, PID)).toBe(false);
    expect(isProjectKey(`proj/${PID}//a.png`, PID)).toBe(false);
    expect(isProjectKey(`proj/${PID}`, PID)).toBe(false);
    expect(isProjectKey(`x/proj/${PID}/a.png`, PID)).toBe(false);
  });
});

describe('content types', () => {
  it('compares lowercased with parameters cut, against the allow-list', () => {
    expect(normalizeContentType(' Text/HTML; charset=utf-8')).toBe('text/html');
    expect(allowedContentType('IMAGE/PNG')).toBe('image/png');
    expect(allowedContentType('application/zip; x=y')).toBe('application/zip');
    for (const t of ['image/gif', 'application/octet-stream', 'text/javascript', 'image/svg+xml', '']) expect(allowedContentType(t), t).toBeNull();
  });

  it('types a file by extension, and refuses unknown ones rather than calling them text', () => {
    expect(contentTypeForFile('trace.ZIP')).toBe('application/zip');
    expect(contentTypeForFile('network.har')).toBe('application/json');
    expect(contentTypeForFile('run.log')).toBe('text/plain');
    expect(contentTypeForFile('anim.gif')).toBeNull();
    expect(contentTypeForFile('Makefile')).toBeNull();
  });
});

describe('executionsNamedBy (--attach)', () => {
  const ex = (title: string, status: ExecutionInput['status'], filePath = 'src/cart.test.ts', attempt = 1): ExecutionInput => ({
    filePath,
    suite: 'cart',
    title,
    status,
    attempt,
    startedAt: 0,
    durationMs: 1,
  });

  it('picks the failed attempts of the test whose title the path names, the longest title winning', () => {
    const executions = [ex('adds', 'pass'), ex('adds an item', 'fail'), ex('adds an item', 'pass', 'src/cart.test.ts', 2), ex('applies a coupon', 'pass')];
    expect(executionsNamedBy(executions, 'test-results/cart-adds-an-item-failed.png')).toEqual([1]);
    expect(executionsNamedBy(executions, 'shots/Applies A Coupon.png')).toEqual([3]);
    expect(executionsNamedBy(executions, 'shots/adds.png')).toEqual([0]);
    expect(executionsNamedBy(executions, 'shots/additem.png')).toEqual([]);
  });

  it('between tests of one title, keeps those whose file the path also names', () => {
    const executions = [ex('renders', 'fail', 'src/header.test.tsx'), ex('renders', 'fail', 'src/footer.test.tsx')];
    expect(executionsNamedBy(executions, 'shots/footer-renders.png')).toEqual([1]);
    expect(executionsNamedBy(executions, 'shots/renders.png')).toEqual([0, 1]);
  });
});

describe('SERVICE_S3_* settings', () => {
  const cwd = '/tmp';

  it('leaves artifacts off without a bucket, and still checks the other variables', () => {
    expect(loadServerSettings({ SERVICE_S3_ENDPOINT: 'http://minio:9000' }, cwd).s3).toBeUndefined();
    expect(() => loadServerSettings({ SERVICE_S3_ENDPOINT: 'minio:9000' }, cwd)).toThrow(/env: SERVICE_S3_ENDPOINT: expected an http\(s\) URL/);
    expect(() => loadServerSettings({ SERVICE_S3_FORCE_PATH_STYLE: 'maybe' }, cwd)).toThrow(/env: SERVICE_S3_FORCE_PATH_STYLE: expected a boolean/);
  });

  it('defaults the region, and path style on exactly when an endpoint is set', () => {
    expect(loadServerSettings({ SERVICE_S3_BUCKET: 'b' }, cwd).s3).toEqual({ bucket: 'b', region: 'us-east-1', forcePathStyle: false });
    expect(loadServerSettings({ SERVICE_S3_BUCKET: 'b', SERVICE_S3_ENDPOINT: 'http://minio:9000' }, cwd).s3).toMatchObject({ forcePathStyle: true });
    const s3 = loadServerSettings({ SERVICE_S3_BUCKET: 'b', SERVICE_S3_ENDPOINT: 'http://minio:9000', SERVICE_S3_FORCE_PATH_STYLE: 'false', SERVICE_S3_REGION: 'eu-west-1' }, cwd).s3;
    expect(s3).toMatchObject({ forcePathStyle: false, region: 'eu-west-1' });
  });

  it('takes SERVICE_S3_* credentials, else the AWS_* pair, and refuses half a pair', () => {
    const own = { SERVICE_S3_BUCKET: 'b', SERVICE_S3_ACCESS_KEY_ID: 'id1', SERVICE_S3_SECRET_ACCESS_KEY: ' s1 ', AWS_ACCESS_KEY_ID: 'id2', AWS_SECRET_ACCESS_KEY: 's2' };
    expect(loadServerSettings(own, cwd).s3).toMatchObject({ accessKeyId: 'id1', secretAccessKey: ' s1 ' });
    const aws = { SERVICE_S3_BUCKET: 'b', AWS_ACCESS_KEY_ID: 'id2', AWS_SECRET_ACCESS_KEY: 's2', AWS_SESSION_TOKEN: 't2' };
    expect(loadServerSettings(aws, cwd).s3).toMatchObject({ accessKeyId: 'id2', secretAccessKey: 's2', sessionToken: 't2' });
    expect(() => loadServerSettings({ SERVICE_S3_BUCKET: 'b', SERVICE_S3_ACCESS_KEY_ID: 'id1' }, cwd)).toThrow(
      /env: SERVICE_S3_SECRET_ACCESS_KEY: required when SERVICE_S3_ACCESS_KEY_ID/,
    );
  });
});

describe('artifact refs over OTLP (test.artifacts)', () => {
  it('survive the reporter encoding and the receiver mapping', () => {
    const artifacts = [
      { name: 'shot.png', contentType: 'image/png', path: '/ci/shot.png', key: `proj/${PID}/run/k/0/shot.png`, sizeBytes: 1234 },
      { name: 'log', contentType: 'text/plain', path: 'log.txt' },
    ];
    const batch: IngestBatch = {
      contractVersion: '0.1.0',
      idempotencyKey: 'otlp-artifacts-1',
      resource: { ciProvider: 'local', commitSha: 'abcdef1', branch: 'main', trigger: 'push' },
      run: { status: 'failed', startedAt: 1_795_255_200_000 },
      executions: [{ filePath: 'a.test.ts', suite: 's', title: 't', status: 'fail', attempt: 1, startedAt: 1_795_255_200_000, durationMs: 3, artifacts }],
    };
    const [bytes] = encodeOtlpRun(batch);
    const [mapped] = mapOtlpToBatches(decodeOtlpProtobuf(bytes!), { now: Date.now() }).batches;
    expect(mapped!.executions[0]!.artifacts).toEqual(artifacts);
    expect(mapped!.executions[0]!.attributes?.['test.artifacts']).toBeUndefined();
  });

  it('are dropped, not fatal, when malformed', () => {
    const span = (artifactsAttr: string) => ({
      traceId: '5b8efff798038103d269b633813fc60c',
      spanId: 'eee19b7ec3c1b175',
      name: 'test.case',
      startTimeUnixNano: '1795255200100000000',
      endTimeUnixNano: '1795255200200000000',
      attributes: [
        { key: 'test.case.name', value: { stringValue: 'a > b' } },
        { key: 'test.artifacts', value: { stringValue: artifactsAttr } },
      ],
    });
    for (const bad of ['not json', '[]', '[{"name":"x"}]', '{"name":"x","contentType":"image/png","path":"p"}']) {
      const req = decodeOtlpJson({ resourceSpans: [{ scopeSpans: [{ spans: [span(bad)] }] }] });
      const [mapped] = mapOtlpToBatches(req, { now: Date.now() }).batches;
      expect(mapped!.executions).toHaveLength(1);
      expect(mapped!.executions[0]!.artifacts, bad).toBeUndefined();
    }
  });
});

describe('S3ArtifactStore URLs', () => {
  const creds = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
  const key = `proj/${PID}/run/k/0/shot.png`;

  it('puts the bucket where the store wants it, and signs what it says', async () => {
    const cases = [
      { s: { bucket: 'arts', endpoint: 'http://minio.local:9000', region: 'us-east-1', forcePathStyle: true }, origin: 'http://minio.local:9000', path: `/arts/${key}` },
      { s: { bucket: 'arts', endpoint: 'https://r2.example.com', region: 'auto', forcePathStyle: false }, origin: 'https://arts.r2.example.com', path: `/${key}` },
      { s: { bucket: 'arts', region: 'eu-west-1', forcePathStyle: false }, origin: 'https://arts.s3.eu-west-1.amazonaws.com', path: `/${key}` },
    ];
    for (const c of cases) {
      const store = new S3ArtifactStore({ ...c.s, ...creds });
      const put = new URL(await store.uploadUrl(key, 'image/png', 1234));
      expect(`${put.origin}${put.pathname}`).toBe(`${c.origin}${c.path}`);
      expect(put.searchParams.get('X-Amz-Credential')).toContain(`/${c.s.region}/s3/aws4_request`);
      const headers = { 'content-type': 'image/png', 'content-length': '1234' };
      expect(presignedUrlAccepts(put.toString(), 'PUT', headers, creds.secretAccessKey)).toBe(true);
      expect(presignedUrlAccepts(put.toString(), 'PUT', { ...headers, 'content-length': '1235' }, creds.secretAccessKey)).toBe(false);
      const get = await store.downloadUrl(key);
      expect(presignedUrlAccepts(get, 'GET', {}, creds.secretAccessKey)).toBe(true);
      store.close();
    }
  });

  it('signs download URLs against the public endpoint, and any key character survives', async () => {
    const store = new S3ArtifactStore({ bucket: 'arts', endpoint: 'http://minio:9000', publicEndpoint: 'https://files.example.com', region: 'us-east-1', forcePathStyle: true, ...creds });
    const odd = `proj/${PID}/run/a b+c/0/ü%?#&=.png`;
    const get = new URL(await store.downloadUrl(odd));
    expect(get.origin).toBe('https://files.example.com');
    expect(decodeURIComponent(get.pathname)).toBe(`/arts/${odd}`);
    expect(get.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(presignedUrlAccepts(get.toString(), 'GET', {}, creds.secretAccessKey)).toBe(true);
    expect(new URL(await store.uploadUrl(odd, 'image/png', 1)).origin).toBe('http://minio:9000');
    store.close();
  });
});

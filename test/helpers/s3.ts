// A real S3-compatible server (s3rver) on a random loopback port with its own temp directory,
// plus an independent SigV4 check of presigned URLs: s3rver stores what it is sent but does not
// verify V4 signatures, so the tests prove what a URL is bound to with this check instead.
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

export interface TestS3 {
  /** `http://127.0.0.1:<port>`: what the daemon and the reporter use. */
  endpoint: string;
  /** `http://localhost:<port>`: the same server under another host, as a browser-facing name. */
  publicEndpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** SERVICE_S3_* for a daemon using this store. */
  env: Record<string, string>;
  close(): Promise<void>;
}

// s3rver's built-in account.
const ACCESS_KEY_ID = 'S3RVER';
const SECRET_ACCESS_KEY = 'S3RVER';

export async function startTestS3(bucket = 'flakehouse-artifacts'): Promise<TestS3> {
  const directory = mkdtempSync(path.join(tmpdir(), 'fh-test-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  // The bucket is made through the S3 API, as an operator would.
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET_ACCESS_KEY },
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  client.destroy();
  const publicEndpoint = `http://localhost:${port}`;
  return {
    endpoint,
    publicEndpoint,
    bucket,
    accessKeyId: ACCESS_KEY_ID,
    secretAccessKey: SECRET_ACCESS_KEY,
    env: {
      SERVICE_S3_BUCKET: bucket,
      SERVICE_S3_ENDPOINT: endpoint,
      SERVICE_S3_PUBLIC_ENDPOINT: publicEndpoint,
      SERVICE_S3_ACCESS_KEY_ID: ACCESS_KEY_ID,
      SERVICE_S3_SECRET_ACCESS_KEY: SECRET_ACCESS_KEY,
    },
    async close() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

const rfc3986 = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();

/**
 * Whether a presigned SigV4 URL is valid for a request with `method` and `headers` (plus the URL's
 * host), per AWS's query-string signing rules, written here from the spec rather than the SDK.
 */
export function presignedUrlAccepts(urlText: string, method: string, headers: Record<string, string>, secretAccessKey: string): boolean {
  const url = new URL(urlText);
  const q = url.searchParams;
  const signature = q.get('X-Amz-Signature');
  const signedHeaders = (q.get('X-Amz-SignedHeaders') ?? '').split(';');
  const [, date = '', region = '', service = ''] = (q.get('X-Amz-Credential') ?? '').split('/');
  const sent: Record<string, string> = { host: url.host };
  for (const [k, v] of Object.entries(headers)) sent[k.toLowerCase()] = v.trim();
  const canonicalQuery = [...q.entries()]
    .filter(([k]) => k !== 'X-Amz-Signature')
    .map(([k, v]) => [rfc3986(k), rfc3986(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonicalRequest = [
    method,
    url.pathname,
    canonicalQuery,
    signedHeaders.map((h) => `${h}:${sent[h] ?? ''}\n`).join(''),
    signedHeaders.join(';'),
    q.get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD',
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', q.get('X-Amz-Date') ?? '', scope, createHash('sha256').update(canonicalRequest).digest('hex')].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date), region), service), 'aws4_request');
  return createHmac('sha256', key).update(stringToSign).digest('hex') === signature;
}

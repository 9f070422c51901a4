// The object store behind artifacts: any S3-compatible service (AWS S3, MinIO, R2, …). The daemon
// never moves artifact bytes itself; it only signs URLs: PUT URLs for the reporter, GET URLs for
// people looking at a run. Signing is local (HMAC over the request), no round trip to the store.
import { GetObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { S3RequestPresigner, getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { DOWNLOAD_URL_TTL_SECONDS, UPLOAD_URL_TTL_SECONDS } from '../../client/src/contract/artifact-keys.js';

export interface S3Settings {
  bucket: string;
  /** Unset: the default hosted store of the region. */
  endpoint?: string;
  /** Host the browser reaches for download URLs; unset: `endpoint`. */
  publicEndpoint?: string;
  region: string;
  /** Both or neither; neither leaves the SDK's default chain (instance roles, ~/.aws) in charge. */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** With the AWS_* fallback only: temporary credentials carry one. */
  sessionToken?: string;
  forcePathStyle: boolean;
}

/** What the routes need from the store; signing only. */
export interface ArtifactSigner {
  /** A PUT URL that only accepts exactly `sizeBytes` bytes sent with this content type. */
  uploadUrl(key: string, contentType: string, sizeBytes: number): Promise<string>;
  downloadUrl(key: string): Promise<string>;
}

type PresignRequest = Parameters<S3RequestPresigner['presign']>[0];

const PROBE_KEY = 'flakehouse-probe';

/**
 * Signs for one endpoint. The SDK's getSignedUrl runs the whole client middleware stack (endpoint
 * rules and all) for every URL, about 2 ms each: too slow for a run page with hundreds of
 * artifacts. So the SDK lays out one probe URL (bucket in the host or in the path, the region's
 * host, …) and every URL after it is that layout with another key, signed by the SDK's S3 signer
 * alone (about 0.1 ms).
 */
class EndpointSigner {
  private readonly client: S3Client;
  private readonly presigner: S3RequestPresigner;
  private base?: Promise<URL>;

  constructor(
    private readonly bucket: string,
    config: S3ClientConfig,
  ) {
    this.client = new S3Client(config);
    this.presigner = new S3RequestPresigner({ ...this.client.config });
  }

  /** The probe's URL without its query: where the object of key PROBE_KEY lives. */
  private layout(): Promise<URL> {
    this.base ??= getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: PROBE_KEY })).then((u) => {
      const url = new URL(u);
      if (!url.pathname.endsWith(`/${PROBE_KEY}`)) throw new Error(`unexpected S3 URL layout: ${url.origin}${url.pathname}`);
      url.search = '';
      url.pathname = url.pathname.slice(0, -PROBE_KEY.length);
      return url;
    });
    // A failure (credentials not resolvable yet) is not remembered: the next request tries again.
    this.base.catch(() => (this.base = undefined));
    return this.base;
  }

  async sign(method: 'GET' | 'PUT', key: string, headers: Record<string, string>, expiresIn: number): Promise<string> {
    const base = await this.layout();
    const request: PresignRequest = {
      method,
      protocol: base.protocol,
      hostname: base.hostname,
      port: base.port === '' ? undefined : Number(base.port),
      // S3 signs the path as sent, encoded once (no double encoding, unlike other services).
      path: `${base.pathname}${key.split('/').map(encodeRfc3986).join('/')}`,
      query: {},
      headers: { ...headers },
    };
    const signed = await this.presigner.presign(request, { expiresIn, signableHeaders: new Set(Object.keys(headers)) });
    const url = new URL(`${base.origin}${signed.path}`);
    for (const [k, v] of Object.entries(signed.query ?? {})) {
      if (typeof v === 'string') url.searchParams.append(k, v);
      else for (const item of v ?? []) url.searchParams.append(k, item);
    }
    return url.toString();
  }

  close(): void {
    this.client.destroy();
  }
}

function encodeRfc3986(segment: string): string {
  return encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export class S3ArtifactStore implements ArtifactSigner {
  private readonly internal: EndpointSigner;
  private readonly browser: EndpointSigner;

  constructor(settings: S3Settings) {
    this.internal = new EndpointSigner(settings.bucket, clientConfig(settings, settings.endpoint));
    this.browser = settings.publicEndpoint ? new EndpointSigner(settings.bucket, clientConfig(settings, settings.publicEndpoint)) : this.internal;
  }

  uploadUrl(key: string, contentType: string, sizeBytes: number): Promise<string> {
    // Both headers are signed, which binds the URL to them: another type or length is refused.
    return this.internal.sign('PUT', key, { 'content-type': contentType, 'content-length': String(sizeBytes) }, UPLOAD_URL_TTL_SECONDS);
  }

  downloadUrl(key: string): Promise<string> {
    return this.browser.sign('GET', key, {}, DOWNLOAD_URL_TTL_SECONDS);
  }

  close(): void {
    this.internal.close();
    if (this.browser !== this.internal) this.browser.close();
  }
}

/** The S3 client settings every user of the bucket shares (signer, pruner, export inventory). */
export function clientConfig(s: S3Settings, endpoint: string | undefined = s.endpoint): S3ClientConfig {
  return {
    region: s.region,
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: s.forcePathStyle,
    ...(s.accessKeyId && s.secretAccessKey
      ? { credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey, ...(s.sessionToken ? { sessionToken: s.sessionToken } : {}) } }
      : {}),
    // Otherwise the SDK signs a CRC32 of the (empty) body at presign time into the URL, and a store
    // that checks it refuses the real upload.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
}

/** The store when a bucket is configured; null means artifacts are disabled (presign answers 501). */
export function openArtifactStore(settings: S3Settings | undefined): S3ArtifactStore | null {
  return settings ? new S3ArtifactStore(settings) : null;
}

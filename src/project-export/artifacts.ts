// The artifact inventory of an export: every object under the project's prefix in the artifact
// bucket, listed a page (1,000 keys) at a time so a large bucket streams like the rows do.
import { HeadBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { clientConfig, type S3Settings } from '../artifacts/s3.js';

export interface ArtifactObject {
  key: string;
  size: number;
  /** ISO time; null when the store does not say. */
  lastModified: string | null;
}

export interface ArtifactInventory {
  list(prefix: string, signal?: AbortSignal): AsyncIterable<ArtifactObject>;
  /** Resolves when the bucket answers (HeadBucket: reachable, existing, these credentials let in), else rejects. */
  probe(signal?: AbortSignal): Promise<void>;
  close(): void;
}

/** Lists with the bucket's own settings (the signer in artifacts/s3.ts never lists). */
export function s3Inventory(settings: S3Settings): ArtifactInventory {
  const client = new S3Client(clientConfig(settings));
  return {
    async *list(prefix, signal) {
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: settings.bucket, Prefix: prefix, ContinuationToken: token }), {
          abortSignal: signal,
        });
        for (const o of page.Contents ?? []) {
          if (o.Key === undefined) continue;
          yield { key: o.Key, size: o.Size ?? 0, lastModified: o.LastModified ? o.LastModified.toISOString() : null };
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    },
    async probe(signal) {
      await client.send(new HeadBucketCommand({ Bucket: settings.bucket }), { abortSignal: signal });
    },
    close() {
      client.destroy();
    },
  };
}

// Artifact retention: deletes a project's objects (everything under its key prefix) last modified
// before a cutoff. By upload time rather than by the executions that reference them, so objects
// whose batch never arrived (the reporter uploads first) are pruned too.
import { DeleteObjectsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { projectPrefix } from '../../client/src/contract/artifact-keys.js';
import { clientConfig, type S3Settings } from './s3.js';

export interface ArtifactPruner {
  /** Deletes the project's objects last modified before `before` (epoch ms); returns how many. */
  pruneBefore(projectId: string, before: number): Promise<number>;
  close(): void;
}

export class S3ArtifactPruner implements ArtifactPruner {
  private readonly client: S3Client;

  constructor(private readonly settings: S3Settings) {
    this.client = new S3Client(clientConfig(settings));
  }

  async pruneBefore(projectId: string, before: number): Promise<number> {
    const bucket = this.settings.bucket;
    let deleted = 0;
    let token: string | undefined;
    do {
      // A page is at most 1000 keys, which is also DeleteObjects' limit.
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: projectPrefix(projectId), ContinuationToken: token }));
      const old = (page.Contents ?? []).filter((o) => o.Key !== undefined && o.LastModified !== undefined && o.LastModified.getTime() < before);
      if (old.length > 0) {
        const res = await this.client.send(
          new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: old.map((o) => ({ Key: o.Key! })), Quiet: true } }),
        );
        const failed = res.Errors?.length ?? 0;
        if (failed > 0) throw new Error(`artifact retention: ${failed} of ${old.length} objects could not be deleted (${res.Errors?.[0]?.Code ?? 'unknown'})`);
        deleted += old.length;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return deleted;
  }

  close(): void {
    this.client.destroy();
  }
}

/** The pruner when a bucket is configured; null when artifacts are disabled. */
export function openArtifactPruner(settings: S3Settings | undefined): ArtifactPruner | null {
  return settings ? new S3ArtifactPruner(settings) : null;
}

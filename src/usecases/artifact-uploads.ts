// Upload URLs for a run's artifacts (POST /v1/artifacts/presign, docs/contract.md §8): the reporter
// PUTs each file straight to the object store, then sends the batch carrying the keys.
import { z } from 'zod';
import { LIMITS } from '../../client/src/contract/batch.js';
import { MAX_ARTIFACT_BYTES, MAX_PRESIGN_ITEMS, artifactKey } from '../../client/src/contract/artifact-keys.js';
import { ALLOWED_CONTENT_TYPES, allowedContentType } from '../../client/src/contract/content-types.js';
import type { ArtifactSigner } from '../artifacts/s3.js';
import { idempotencyKeySchema } from '../receivers/native/schema.js';
import { errors, zodIssues } from '../errors/catalogue.js';

export const presignRequestSchema = z.object({
  idempotencyKey: idempotencyKeySchema,
  artifacts: z
    .array(
      z.object({
        executionIndex: z.number().int().min(0).max(LIMITS.maxExecutionsPerBatch - 1),
        name: z.string().min(1).max(1024),
        contentType: z.string().min(1).max(255),
        sizeBytes: z.number().int().min(0).max(MAX_ARTIFACT_BYTES, `at most ${MAX_ARTIFACT_BYTES} bytes (50 MiB) per artifact`),
      }),
    )
    .min(1, 'at least one artifact')
    .max(MAX_PRESIGN_ITEMS, `at most ${MAX_PRESIGN_ITEMS} artifacts per request`),
});
export type PresignRequest = z.infer<typeof presignRequestSchema>;

const uploadSchema = z.object({ url: z.string(), key: z.string(), headers: z.record(z.string(), z.string()) });
export const presignResponseSchema = uploadSchema.extend({
  // `uploadUrl` = `url`: Flakemetry's SDK reads `uploadUrl`, ours `url`.
  items: z.array(uploadSchema.extend({ executionIndex: z.number(), name: z.string(), uploadUrl: z.string() })),
});
export type PresignResponse = z.infer<typeof presignResponseSchema>;

export interface ArtifactUploadDeps {
  /** null when SERVICE_S3_BUCKET is unset: presign answers 501 artifacts_disabled. */
  signer: ArtifactSigner | null;
  /** The project's `artifacts.enabled` setting: off → 404 (docs/contract.md §8); absent: on. */
  projectArtifactsEnabled?: (projectId: string) => Promise<boolean>;
}

/**
 * The storage checks come before the body's: a server without storage says so whatever the body
 * (501 artifacts_disabled), so a reporter turns uploads off instead of chasing a 400.
 */
export async function presignUploads(d: ArtifactUploadDeps, projectId: string, body: unknown): Promise<PresignResponse> {
  const signer = d.signer;
  if (!signer) throw errors.artifactsDisabled();
  if (d.projectArtifactsEnabled && !(await d.projectArtifactsEnabled(projectId))) {
    throw errors.notFound('artifact storage is turned off for this project');
  }
  const parsed = presignRequestSchema.safeParse(body ?? {});
  if (!parsed.success) throw errors.invalidPayload(zodIssues(parsed.error));
  const req = parsed.data;

  const keys = new Set<string>();
  const planned = req.artifacts.map((a, i) => {
    const contentType = allowedContentType(a.contentType);
    if (!contentType) throw errors.artifactTypeNotAllowed(a.contentType, i, ALLOWED_CONTENT_TYPES);
    const key = artifactKey(projectId, req.idempotencyKey, a.executionIndex, a.name);
    // Two files under one key would overwrite each other.
    if (keys.has(key)) throw errors.invalidPayload([{ path: `artifacts.${i}.name`, message: 'duplicate name for this executionIndex' }]);
    keys.add(key);
    return { ...a, contentType, key };
  });

  const items = await Promise.all(
    planned.map(async (a) => {
      const url = await signer.uploadUrl(a.key, a.contentType, a.sizeBytes);
      return {
        executionIndex: a.executionIndex,
        name: a.name,
        url,
        uploadUrl: url,
        key: a.key,
        // Exactly the signed headers: the store refuses the PUT if either differs.
        headers: { 'content-type': a.contentType, 'content-length': String(a.sizeBytes) },
      };
    }),
  );
  const first = items[0]!;
  return { url: first.url, key: first.key, headers: first.headers, items };
}

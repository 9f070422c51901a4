// POST /v1/artifacts/presign (docs/contract.md §8): upload URLs for a run's artifacts, which the reporter
// PUTs straight to the object store before it sends the batch carrying the keys.
import { presignRequestSchema, presignResponseSchema, presignUploads, type ArtifactUploadDeps } from '../../usecases/artifact-uploads.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export function artifactRoutes(d: ArtifactUploadDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/artifacts/presign',
      summary: 'Presigned upload URLs for a run’s artifacts',
      tags: ['artifacts'],
      auth: { kind: 'token', anyOf: ['ingest'] },
      // Validated by the use case, after the storage checks (presignUploads).
      requestBodyDoc: presignRequestSchema,
      response: presignResponseSchema,
      handler: ({ body, principal }) => presignUploads(d, principal!.projectId, body),
    }),
  ];
}

// Artifact refs as the read API shows them: each stored ref with a short-lived signed download URL
// (docs/contract.md §6, §8). Only keys under the asking project's own prefix are signed.
import { z } from 'zod';
import { isProjectKey } from '../../client/src/contract/artifact-keys.js';
import type { ArtifactSigner } from './s3.js';

export const artifactViewSchema = z.object({
  name: z.string(),
  contentType: z.string(),
  path: z.string(),
  key: z.string().optional(),
  sizeBytes: z.number().optional(),
  /** Signed GET URL (300 s); null when the ref has no stored object, it lies outside the project, or storage is off. */
  url: z.string().nullable(),
});
export type ArtifactView = z.infer<typeof artifactViewSchema>;

/** Stored refs are our own JSON, written from validated batches; anything unexpected is dropped, not fatal. */
const storedRefSchema = z.object({
  name: z.string(),
  contentType: z.string(),
  path: z.string(),
  key: z.string().optional(),
  sizeBytes: z.number().optional(),
});

/** The `artifacts` column (JSON text, '' for none) as refs. */
export function parseStoredArtifacts(column: string): unknown[] {
  if (column === '') return [];
  try {
    const value: unknown = JSON.parse(column);
    return Array.isArray(value) ? value : [];
  } catch {
    return [];
  }
}

export async function artifactViews(projectId: string, refs: readonly unknown[], signer: ArtifactSigner | null): Promise<ArtifactView[]> {
  const out: ArtifactView[] = [];
  for (const raw of refs) {
    const r = storedRefSchema.safeParse(raw);
    if (!r.success) continue;
    const ref = r.data;
    const url = signer && ref.key !== undefined && isProjectKey(ref.key, projectId) ? await signer.downloadUrl(ref.key) : null;
    out.push({ ...ref, url });
  }
  return out;
}

/** Replaces each item's stored `artifacts` with their views; items without refs cost nothing. */
export async function withArtifactLinks<T extends { artifacts: readonly unknown[] }>(
  projectId: string,
  items: readonly T[],
  signer: ArtifactSigner | null,
): Promise<(Omit<T, 'artifacts'> & { artifacts: ArtifactView[] })[]> {
  return Promise.all(items.map(async (item) => ({ ...item, artifacts: item.artifacts.length === 0 ? [] : await artifactViews(projectId, item.artifacts, signer) })));
}

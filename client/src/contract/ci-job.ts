// The CI job a run belongs to (issue 39, defect 3): its name (resource.ciJobName) and its matrix
// values (resource.ciJobMatrix). Two runs of one commit, branch and trigger are the same job run
// again only when these agree too (src/store/project-health.ts, src/store/board-impact.ts).
//
// A matrix is a flat object of text values: what `${{ toJSON(matrix) }}` gives on GitHub Actions,
// numbers and booleans written as text (20 and "20" are one leg), a nested value as its JSON. It is
// stored as canonical JSON (keys sorted), so the same leg sent with its keys in another order is
// the same job.

export type JobMatrix = Record<string, string>;

/** A matrix from what a client sent: a non-empty plain object, else undefined (absent). */
export function jobMatrixFrom(value: unknown): JobMatrix | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value).sort();
  if (keys.length === 0) return undefined;
  const out: JobMatrix = {};
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined) continue;
    out[k] = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' || v === null ? String(v) : JSON.stringify(v);
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

/** The stored form: canonical JSON with sorted keys; '' for none. */
export function jobMatrixText(matrix: JobMatrix | undefined): string {
  if (matrix === undefined) return '';
  const keys = Object.keys(matrix).sort();
  if (keys.length === 0) return '';
  const sorted: JobMatrix = {};
  for (const k of keys) sorted[k] = matrix[k]!;
  return JSON.stringify(sorted);
}

/** The stored form read back; null for none (or a value not written by jobMatrixText). */
export function parseJobMatrixText(text: string): JobMatrix | null {
  if (text === '') return null;
  try {
    return jobMatrixFrom(JSON.parse(text)) ?? null;
  } catch {
    return null;
  }
}

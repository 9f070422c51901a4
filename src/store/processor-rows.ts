// Table rows for the processors' typed outputs (src/domain/processor-outputs.ts): the one place
// that knows these tables' columns and time format. Used by the clickhouse exporter.
import type { ErrorSignatureRecord, HealthEvent, IdentityAlias, IdentityStitch } from '../domain/processor-outputs.js';
import { chTime } from './time.js';

export function identityAliasRow(a: IdentityAlias): Record<string, unknown> {
  return { project_id: a.projectId, fingerprint: a.fingerprint, test_id: a.testId, created_at: chTime(a.createdAt) };
}

export function identityStitchRow(s: IdentityStitch): Record<string, unknown> {
  return {
    project_id: s.projectId,
    test_id: s.testId,
    level: s.level,
    from_file_path: s.fromFilePath,
    from_title: s.fromTitle,
    to_file_path: s.toFilePath,
    to_title: s.toTitle,
    confidence: s.confidence,
    created_at: chTime(s.createdAt),
  };
}

export function errorSignatureRow(s: ErrorSignatureRecord): Record<string, unknown> {
  return {
    project_id: s.projectId,
    signature_id: s.signatureId,
    cluster_id: s.clusterId,
    error_type: s.errorType,
    normalized_message: s.normalizedMessage,
    frames: s.frames,
    sketch: [...s.sketch],
    similarity: s.similarity,
    first_seen_at: chTime(s.firstSeenAt),
    example_execution: s.exampleExecutionId,
  };
}

/** One `signature_bands` row per band key of the signature. */
export function signatureBandRows(s: ErrorSignatureRecord): Record<string, unknown>[] {
  return s.bandKeys.map((k) => ({ project_id: s.projectId, band_key: k, signature_id: s.signatureId }));
}

export function healthEventRow(h: HealthEvent): Record<string, unknown> {
  return { project_id: h.projectId, test_id: h.testId, kind: h.kind, at: chTime(h.at), score: h.score };
}

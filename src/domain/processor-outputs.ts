// What the executions processors derive from a lease besides its executions and test states, as
// typed records. Times are epoch milliseconds; only the clickhouse exporter turns these into table
// rows (src/store/processor-rows.ts), so the processors know nothing of columns or time formats.

/** Another fingerprint that now resolves to an existing identity (a move or a rename). */
export interface IdentityAlias {
  projectId: string;
  fingerprint: string;
  testId: string;
  createdAt: number;
}

/** How an identity came to carry a new name: L2 moved (another file), L3 renamed (a close title). */
export interface IdentityStitch {
  projectId: string;
  testId: string;
  level: 'L2' | 'L3';
  fromFilePath: string;
  fromTitle: string;
  toFilePath: string;
  toTitle: string;
  confidence: number;
  createdAt: number;
}

/** A new error signature, the cluster it joined and the LSH band keys that index it. */
export interface ErrorSignatureRecord {
  projectId: string;
  signatureId: string;
  clusterId: string;
  errorType: string;
  normalizedMessage: string;
  frames: string[];
  sketch: Uint32Array;
  bandKeys: string[];
  /** Estimated Jaccard similarity to the cluster it joined (1 when it starts its own). */
  similarity: number;
  firstSeenAt: number;
  exampleExecutionId: string;
}

/**
 * Transitions in a test's health log (test page, project health): `flaked`, `broke` and `fixed` are
 * test-state transitions (became flaky, became broken, proven fixed); `quarantined` and `released`
 * quarantine decisions. `stabilized` is only in logs written before test states existed (a score
 * that dipped under the threshold, which was no proof of a fix).
 */
export const HEALTH_EVENT_KINDS = ['flaked', 'broke', 'fixed', 'quarantined', 'released', 'stabilized'] as const;
export type HealthEventKind = (typeof HEALTH_EVENT_KINDS)[number];

/** A transition in a test's health (project health page). */
export interface HealthEvent {
  projectId: string;
  testId: string;
  kind: HealthEventKind;
  at: number;
  score: number;
}

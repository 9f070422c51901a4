// Domain events, emitted after the job that caused them commits (through the outbox).
export const DOMAIN_EVENT_TYPES = [
  'run.processed',
  'identity.created',
  'identity.moved',
  'score.updated',
  'flaky.detected',
  'quarantine.changed',
  'suite.regressed',
  'suite.slowed',
  'rca.created',
] as const;
export type DomainEventType = (typeof DOMAIN_EVENT_TYPES)[number];

export interface DomainEvent {
  /** Stable id: a redelivered job produces the same ids, so subscribers can deduplicate. */
  id: string;
  type: DomainEventType;
  projectId: string;
  occurredAt: number;
  data: Record<string, unknown>;
}

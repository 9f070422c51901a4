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
  // The project's daily AI token budget ran out: data { day: 'YYYY-MM-DD' (UTC), dailyTokenBudget?, tokensSpent? }.
  // Emitted by the RCA stage at most once per project and day; notified as `ai_budget_spent`.
  'ai.budget_spent',
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

// The notification channels service.yml may name and the events a channel may ask for: the
// server delivers them (src/domain/notifications.ts, exporters/notify) and the reporter syncs the
// file's channels to it.

export const NOTIFICATION_CHANNEL_KINDS = ['slack', 'discord', 'email', 'webhook'] as const;
export type NotificationChannelKind = (typeof NOTIFICATION_CHANNEL_KINDS)[number];

export const NOTIFICATION_EVENT_TYPES = [
  'flaky_detected',
  'quarantine_changed',
  'rca_ready',
  'suite_regressed',
  'suite_slowed',
  'ai_budget_spent',
] as const;
export type NotificationEventType = (typeof NOTIFICATION_EVENT_TYPES)[number];

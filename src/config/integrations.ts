// Outbound integrations' deployment settings (docs/architecture.md "Configuration": notifications and email, the tracker
// credentials): environment only, like the rest of ServerSettings, because they hold secrets and
// belong to the instance, not to a repository's service.yml.
import { z } from 'zod';
import { ConfigError, describeValue } from '../../client/src/contract/config/errors.js';
import type { Field } from './service-yml.js';
import { NOTIFICATION_EVENT_TYPES, booleanField, envReader, intField, readEnv, stringField, urlField, type NotificationEventType } from './service-yml.js';

export interface SmtpSettings {
  host: string;
  port: number;
  /** Implicit TLS (port 465 style); otherwise STARTTLS when the server offers it. */
  secure: boolean;
  from: string;
  user?: string;
  pass?: string;
}

export interface NotificationSettings {
  slackWebhook?: string;
  discordWebhook?: string;
  emailTo?: string;
  /** SERVICE_NOTIFY_EVENTS: the event types global channels receive; null = all. */
  events: NotificationEventType[] | null;
  dashboardUrl?: string;
  /** Present when SERVICE_SMTP_HOST and SERVICE_SMTP_FROM are both set. */
  smtp?: SmtpSettings;
  /** SERVICE_ALLOW_PRIVATE_WEBHOOKS: plain http and private/loopback targets (tests, closed networks). */
  allowPrivateWebhooks: boolean;
}

export interface TrackerSettings {
  /** SERVICE_TRACKER_TOKEN: the tracker is off without it. */
  token?: string;
  /** GitHub API base URL. */
  url: string;
  /** owner/name; unset = the repository the project's runs report. */
  repository?: string;
}

export interface IntegrationEnvVar {
  name: string;
  description: string;
  default?: string;
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+$/;
const emailField = (desc: string): Field<string> => ({ kind: 'string', desc, schema: z.string().regex(EMAIL_RE) });
const REPOSITORY_RE = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

export const INTEGRATION_ENV_VARS: readonly IntegrationEnvVar[] = [
  { name: 'SERVICE_SLACK_WEBHOOK', description: 'global Slack incoming-webhook URL, every project' },
  { name: 'SERVICE_DISCORD_WEBHOOK', description: 'global Discord webhook URL, every project' },
  { name: 'SERVICE_EMAIL_TO', description: 'global email recipient (needs SERVICE_SMTP_HOST and SERVICE_SMTP_FROM)' },
  { name: 'SERVICE_NOTIFY_EVENTS', description: 'comma-separated event types the global channels receive', default: 'all six' },
  { name: 'SERVICE_DASHBOARD_URL', description: 'dashboard base URL for deep links in messages and issues' },
  { name: 'SERVICE_SMTP_HOST', description: 'SMTP server; email is on when this and SERVICE_SMTP_FROM are set' },
  { name: 'SERVICE_SMTP_FROM', description: 'from address of notification email' },
  { name: 'SERVICE_SMTP_PORT', description: 'SMTP port; 465 implies implicit TLS', default: '587' },
  { name: 'SERVICE_SMTP_SECURE', description: '`true` forces implicit TLS, `false` forbids it (STARTTLS when offered)' },
  { name: 'SERVICE_SMTP_USER', description: 'SMTP user, when the server requires auth' },
  { name: 'SERVICE_SMTP_PASS', description: 'SMTP password' },
  { name: 'SERVICE_ALLOW_PRIVATE_WEBHOOKS', description: 'allow http and private/loopback webhook targets (tests, closed networks)', default: 'false' },
  { name: 'SERVICE_TRACKER_TOKEN', description: 'GitHub token with Issues: write; the tracker is off without it' },
  { name: 'SERVICE_TRACKER_URL', description: 'GitHub API base URL (GitHub Enterprise: https://host/api/v3)', default: 'https://api.github.com' },
  { name: 'SERVICE_TRACKER_REPOSITORY', description: 'owner/name for issues; unset = the repository the runs report' },
];

/** Reads the notification and tracker variables, appending every problem to `errors`. */
export function loadIntegrationSettings(env: NodeJS.ProcessEnv, errors: ConfigError[]): { notifications: NotificationSettings; tracker: TrackerSettings } {
  const read = envReader(env, errors);

  const smtpHost = read('SERVICE_SMTP_HOST', stringField('a host name'));
  const smtpFrom = read('SERVICE_SMTP_FROM', stringField('an email address or "Name <address>"'));
  const port = read('SERVICE_SMTP_PORT', intField(1, 65535)) ?? 587;
  const secure = read('SERVICE_SMTP_SECURE', booleanField()) ?? port === 465;
  const smtp: SmtpSettings | undefined =
    smtpHost && smtpFrom
      ? {
          host: smtpHost,
          port,
          secure,
          from: smtpFrom,
          user: read('SERVICE_SMTP_USER', stringField()),
          // Verbatim: whitespace may be part of a password.
          pass: read('SERVICE_SMTP_PASS', { ...stringField(), verbatim: true }),
        }
      : undefined;
  const emailTo = read('SERVICE_EMAIL_TO', emailField('an email address'));
  // Caught at start rather than silently never mailing: the variable says email was wanted.
  if (emailTo && !smtp) errors.push(new ConfigError('env', 'SERVICE_EMAIL_TO', 'email needs SERVICE_SMTP_HOST and SERVICE_SMTP_FROM'));

  const notifications: NotificationSettings = {
    slackWebhook: read('SERVICE_SLACK_WEBHOOK', urlField()),
    discordWebhook: read('SERVICE_DISCORD_WEBHOOK', urlField()),
    emailTo,
    events: parseEventList(readEnv(env, 'SERVICE_NOTIFY_EVENTS'), errors),
    dashboardUrl: read('SERVICE_DASHBOARD_URL', urlField())?.replace(/\/+$/, ''),
    smtp,
    allowPrivateWebhooks: read('SERVICE_ALLOW_PRIVATE_WEBHOOKS', booleanField()) ?? false,
  };
  const tracker: TrackerSettings = {
    token: read('SERVICE_TRACKER_TOKEN', { ...stringField(), verbatim: true }),
    url: (read('SERVICE_TRACKER_URL', urlField()) ?? 'https://api.github.com').replace(/\/+$/, ''),
    repository: read('SERVICE_TRACKER_REPOSITORY', { kind: 'string', desc: 'owner/name', schema: z.string().regex(REPOSITORY_RE) }),
  };
  return { notifications, tracker };
}

/** `flaky_detected, rca_ready` → the list; unset or `all` → null (every type). Unknown names are errors. */
function parseEventList(raw: string | undefined, errors: ConfigError[]): NotificationEventType[] | null {
  if (raw === undefined || raw.trim().toLowerCase() === 'all') return null;
  const names = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const known = new Set<string>(NOTIFICATION_EVENT_TYPES);
  const bad = names.filter((n) => !known.has(n));
  if (bad.length > 0) {
    errors.push(new ConfigError('env', 'SERVICE_NOTIFY_EVENTS', `expected event types from ${NOTIFICATION_EVENT_TYPES.join(', ')}, got ${describeValue(bad.join(','))}`));
    return null;
  }
  return [...new Set(names)] as NotificationEventType[];
}

/** For `flakehouse config`: webhook URLs carry their secret in the path, so only the origin is shown. */
export function redactIntegrationSettings(s: { notifications: NotificationSettings; tracker: TrackerSettings }): { notifications: NotificationSettings; tracker: TrackerSettings } {
  const url = (u: string | undefined): string | undefined => (u === undefined ? undefined : `${new URL(u).origin}/[redacted]`);
  const { notifications: n, tracker: t } = s;
  return {
    notifications: {
      ...n,
      slackWebhook: url(n.slackWebhook),
      discordWebhook: url(n.discordWebhook),
      smtp: n.smtp && { ...n.smtp, pass: n.smtp.pass === undefined ? undefined : '[redacted]' },
    },
    tracker: { ...t, token: t.token === undefined ? undefined : '[redacted]' },
  };
}

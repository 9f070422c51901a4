// Notifications, pure: which domain events become which of the six notification types, their
// dedupe keys (docs/contract.md §9), channel filters, the message each channel kind gets (Slack Block Kit,
// Discord embed, email, signed JSON webhook) and the webhook signature. Delivery is I/O and lives
// in exporters/notify.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { DomainEvent } from './events.js';

// The channel kinds and event types are the client's contract too: service.yml names them and the
// reporter syncs its channels to the server.
import { NOTIFICATION_EVENT_TYPES, type NotificationChannelKind, type NotificationEventType } from '../../client/src/contract/notification-kinds.js';
export { NOTIFICATION_CHANNEL_KINDS, NOTIFICATION_EVENT_TYPES, type NotificationChannelKind, type NotificationEventType } from '../../client/src/contract/notification-kinds.js';

export type NotificationType = NotificationEventType;
export const NOTIFICATION_TYPES: readonly NotificationType[] = NOTIFICATION_EVENT_TYPES;

export interface TestRef {
  testId: string;
  filePath: string | null;
  suite: string | null;
  title: string | null;
}

export type NotificationData =
  | { type: 'flaky_detected'; test: TestRef; score: number; reasons: string[] }
  | { type: 'quarantine_changed'; test: TestRef; quarantined: boolean; source: string; reason: string | null; score: number | null }
  | { type: 'rca_ready'; signatureId: string; clusterId: string | null; test: TestRef | null; summary: string | null; model: string | null }
  | { type: 'suite_regressed' | 'suite_slowed'; suite: string; day: string; today: SuiteNumbers; baseline: SuiteNumbers }
  | { type: 'ai_budget_spent'; day: string; budget: number | null; spent: number | null };

export interface SuiteNumbers {
  executions?: number;
  failRate: number;
  avgMs: number;
  days?: number;
}

export interface Notification {
  type: NotificationType;
  projectId: string;
  /** The domain event it comes from: stable, so a receiver can deduplicate on it. */
  eventId: string;
  occurredAt: number;
  /** docs/contract.md §9, unique per channel: a channel gets one message per key. */
  dedupeKey: string;
  data: NotificationData;
}

// Event payloads as the processors write them; parsed rather than cast, since a malformed event
// must be skipped, not delivered as "undefined".
const num = z.number().finite();
const flakyData = z.object({
  testIdentityId: z.string(),
  filePath: z.string().optional(),
  suite: z.string().optional(),
  title: z.string().optional(),
  score: num,
  reasons: z.array(z.object({ code: z.string() })).default([]),
});
const quarantineData = z.object({
  testIdentityId: z.string(),
  quarantined: z.boolean(),
  source: z.string().default('auto'),
  reason: z.string().nullish(),
  score: num.nullish(),
});
const suiteNumbers = z.object({ executions: num.optional(), failRate: num, avgMs: num, days: num.optional() });
const suiteData = z.object({ suite: z.string(), day: z.string(), today: suiteNumbers, baseline: suiteNumbers });
const rcaData = z.object({
  signatureId: z.string(),
  clusterId: z.string().nullish(),
  testIdentityId: z.string().nullish(),
  summary: z.string().nullish(),
  model: z.string().nullish(),
  llmModel: z.string().nullish(),
});
const budgetData = z.object({
  day: z.string().optional(),
  budget: num.nullish(),
  dailyTokenBudget: num.nullish(),
  spent: num.nullish(),
  tokensSpent: num.nullish(),
});


function testRef(d: { testIdentityId: string; filePath?: string | undefined; suite?: string | undefined; title?: string | undefined }): TestRef {
  return { testId: d.testIdentityId, filePath: d.filePath ?? null, suite: d.suite ?? null, title: d.title ?? null };
}

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The notification a domain event becomes, or null (most events notify nobody). */
export function toNotification(event: DomainEvent): Notification | null {
  const base = { projectId: event.projectId, eventId: event.id, occurredAt: event.occurredAt };
  const type = event.type;
  if (type === 'flaky.detected') {
    const d = flakyData.safeParse(event.data);
    if (!d.success) return null;
    return {
      ...base,
      type: 'flaky_detected',
      dedupeKey: `flaky_detected:${d.data.testIdentityId}`,
      data: { type: 'flaky_detected', test: testRef(d.data), score: d.data.score, reasons: d.data.reasons.map((r) => r.code) },
    };
  }
  if (type === 'quarantine.changed') {
    const d = quarantineData.safeParse(event.data);
    if (!d.success) return null;
    const state = d.data.quarantined ? 'quarantined' : 'released';
    return {
      ...base,
      type: 'quarantine_changed',
      dedupeKey: `quarantine_changed:${d.data.testIdentityId}:${state}`,
      data: {
        type: 'quarantine_changed',
        test: testRef(d.data),
        quarantined: d.data.quarantined,
        source: d.data.source,
        reason: d.data.reason ?? null,
        score: d.data.score ?? null,
      },
    };
  }
  if (type === 'suite.regressed' || type === 'suite.slowed') {
    const d = suiteData.safeParse(event.data);
    if (!d.success) return null;
    const t = type === 'suite.regressed' ? 'suite_regressed' : 'suite_slowed';
    return { ...base, type: t, dedupeKey: `${t}:${d.data.suite}:${d.data.day}`, data: { type: t, ...d.data } };
  }
  if (type === 'rca.created') {
    const d = rcaData.safeParse(event.data);
    if (!d.success) return null;
    const test = d.data.testIdentityId ? { testId: d.data.testIdentityId, filePath: null, suite: null, title: null } : null;
    return {
      ...base,
      type: 'rca_ready',
      dedupeKey: `rca_ready:${d.data.signatureId}`,
      data: {
        type: 'rca_ready',
        signatureId: d.data.signatureId,
        clusterId: d.data.clusterId ?? null,
        test,
        summary: d.data.summary ?? null,
        model: d.data.model ?? d.data.llmModel ?? null,
      },
    };
  }
  if (type === 'ai.budget_spent') {
    const d = budgetData.safeParse(event.data);
    if (!d.success) return null;
    const day = d.data.day ?? utcDay(event.occurredAt);
    return {
      ...base,
      type: 'ai_budget_spent',
      dedupeKey: `ai_budget_spent:${event.projectId}:${day}`,
      data: { type: 'ai_budget_spent', day, budget: d.data.budget ?? d.data.dailyTokenBudget ?? null, spent: d.data.spent ?? d.data.tokensSpent ?? null },
    };
  }
  return null;
}

/** A channel's filter: absent or empty means every type. */
export function channelAccepts(events: readonly NotificationType[] | null | undefined, type: NotificationType): boolean {
  return !events || events.length === 0 || events.includes(type);
}

/** Failed deliveries back off exponentially: initial, ×4 each time, capped. */
export function retryDelayMs(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 4 ** Math.max(0, attempt - 1));
}

// ---------------------------------------------------------------------------------------------
// Messages

export interface MessageContext {
  projectSlug: string;
  /** SERVICE_DASHBOARD_URL without a trailing slash. */
  dashboardUrl?: string;
}

export interface Message {
  heading: string;
  /** One sentence; `code` spans mark names. */
  summary: string;
  fields: { label: string; value: string }[];
  /** Deep link into the dashboard, when SERVICE_DASHBOARD_URL is set. */
  url: string | null;
  color: number;
}

const COLORS: Record<NotificationType, number> = {
  flaky_detected: 0xe67e22,
  quarantine_changed: 0x8e44ad,
  rca_ready: 0x3498db,
  suite_regressed: 0xe74c3c,
  suite_slowed: 0xf1c40f,
  ai_budget_spent: 0x95a5a6,
};

export function testName(t: TestRef): string {
  if (!t.title) return t.testId;
  return t.suite ? `${t.suite} › ${t.title}` : t.title;
}

const pct = (x: number): string => `${Math.round(x * 100)}%`;
const ms = (x: number): string => (x >= 1000 ? `${(x / 1000).toFixed(1)} s` : `${Math.round(x)} ms`);

/** Where in the dashboard a notification points. */
export function deepLink(n: Notification, ctx: MessageContext): string | null {
  if (!ctx.dashboardUrl) return null;
  const project = `${ctx.dashboardUrl}/projects/${encodeURIComponent(ctx.projectSlug)}`;
  const d = n.data;
  switch (d.type) {
    case 'flaky_detected':
    case 'quarantine_changed':
      return `${project}/tests/${d.test.testId}`;
    case 'rca_ready':
      return d.test ? `${project}/tests/${d.test.testId}` : `${project}/flaky`;
    case 'suite_regressed':
    case 'suite_slowed':
      return `${project}/suites?suite=${encodeURIComponent(d.suite)}&day=${d.day}`;
    case 'ai_budget_spent':
      return `${project}/settings`;
  }
}

/** The kind-neutral message: heading, a sentence, a few labelled values and the link. */
export function describe(n: Notification, ctx: MessageContext): Message {
  const url = deepLink(n, ctx);
  const color = COLORS[n.type];
  const project = { label: 'Project', value: ctx.projectSlug };
  const d = n.data;
  switch (d.type) {
    case 'flaky_detected':
      return {
        heading: 'Flaky test detected',
        summary: `\`${testName(d.test)}\` is now flaky (score ${d.score.toFixed(2)})`,
        fields: [project, ...(d.test.filePath ? [{ label: 'File', value: d.test.filePath }] : []), { label: 'Score', value: d.score.toFixed(2) }, ...(d.reasons.length ? [{ label: 'Reasons', value: d.reasons.join(', ') }] : [])],
        url,
        color,
      };
    case 'quarantine_changed': {
      const what = d.quarantined ? 'quarantined' : 'released from quarantine';
      const by = d.source === 'manual' ? 'by a person' : 'automatically';
      return {
        heading: d.quarantined ? 'Test quarantined' : 'Test released from quarantine',
        summary: `\`${testName(d.test)}\` was ${what} ${by}${d.reason ? `: ${d.reason}` : ''}`,
        fields: [project, ...(d.test.filePath ? [{ label: 'File', value: d.test.filePath }] : []), ...(d.score !== null ? [{ label: 'Score', value: d.score.toFixed(2) }] : [])],
        url,
        color,
      };
    }
    case 'rca_ready':
      return {
        heading: 'Root-cause analysis ready',
        summary: d.summary ? d.summary : `An AI root-cause analysis is ready for a new failure signature${d.test?.title ? ` of \`${testName(d.test)}\`` : ''}`,
        fields: [project, { label: 'Signature', value: d.signatureId }, ...(d.model ? [{ label: 'Model', value: d.model }] : [])],
        url,
        color,
      };
    case 'suite_regressed':
      return {
        heading: 'Suite regressed',
        summary: `\`${d.suite}\` fails ${pct(d.today.failRate)} of executions today (baseline ${pct(d.baseline.failRate)})`,
        fields: [project, { label: 'Day', value: d.day }, { label: 'Fail rate', value: pct(d.today.failRate) }, { label: 'Baseline', value: pct(d.baseline.failRate) }],
        url,
        color,
      };
    case 'suite_slowed':
      return {
        heading: 'Suite slowed down',
        summary: `\`${d.suite}\` averages ${ms(d.today.avgMs)} per execution today (baseline ${ms(d.baseline.avgMs)})`,
        fields: [project, { label: 'Day', value: d.day }, { label: 'Average', value: ms(d.today.avgMs) }, { label: 'Baseline', value: ms(d.baseline.avgMs) }],
        url,
        color,
      };
    case 'ai_budget_spent':
      return {
        heading: 'AI budget spent',
        summary: `The daily AI token budget of ${ctx.projectSlug} ran out on ${d.day}; root-cause analysis resumes tomorrow (UTC)`,
        fields: [project, { label: 'Day', value: d.day }, ...(d.budget !== null ? [{ label: 'Budget', value: `${d.budget} tokens` }] : []), ...(d.spent !== null ? [{ label: 'Spent', value: `${d.spent} tokens` }] : [])],
        url,
        color,
      };
  }
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Slack mrkdwn treats &, < and > as control characters. */
function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Slack incoming-webhook body: Block Kit with a plain-text fallback for notifications. */
export function slackPayload(m: Message): Record<string, unknown> {
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: clip(m.heading, 150) } },
    {
      type: 'section',
      text: { type: 'mrkdwn', text: clip(slackEscape(m.summary), 3000) },
      fields: m.fields.slice(0, 10).map((f) => ({ type: 'mrkdwn', text: clip(`*${slackEscape(f.label)}*\n${slackEscape(f.value)}`, 2000) })),
    },
  ];
  if (m.url) blocks.push({ type: 'actions', elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in Flakehouse' }, url: m.url }] });
  return { text: clip(`${m.heading}: ${m.summary}`, 3000), blocks };
}

/** Discord webhook body: one embed (title links to the dashboard). */
export function discordPayload(m: Message, occurredAt: number): Record<string, unknown> {
  const embed: Record<string, unknown> = {
    title: clip(m.heading, 256),
    description: clip(m.summary, 4096),
    color: m.color,
    fields: m.fields.slice(0, 25).map((f) => ({ name: clip(f.label, 256), value: clip(f.value, 1024), inline: true })),
    timestamp: new Date(occurredAt).toISOString(),
  };
  if (m.url) embed.url = m.url;
  // No mentions: a test title containing "@everyone" must not page a whole server.
  return { username: 'Flakehouse', embeds: [embed], allowed_mentions: { parse: [] } };
}

const htmlEscape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function emailMessage(m: Message, ctx: MessageContext): { subject: string; text: string; html: string } {
  const plain = m.summary.replace(/`/g, '');
  const subject = clip(`[Flakehouse] ${ctx.projectSlug}: ${m.heading}: ${plain}`.replace(/[\r\n]+/g, ' '), 200);
  const text = [plain, '', ...m.fields.map((f) => `${f.label}: ${f.value}`), ...(m.url ? ['', m.url] : [])].join('\n');
  const rows = m.fields.map((f) => `<tr><th align="left">${htmlEscape(f.label)}</th><td>${htmlEscape(f.value)}</td></tr>`).join('');
  const summary = htmlEscape(m.summary).replace(/`([^`]*)`/g, '<code>$1</code>');
  const html = `<h2>${htmlEscape(m.heading)}</h2><p>${summary}</p><table>${rows}</table>${m.url ? `<p><a href="${htmlEscape(m.url)}">Open in Flakehouse</a></p>` : ''}`;
  return { subject, text, html };
}

/** The JSON body of a generic webhook: the notification itself, plus the link. */
export function webhookPayload(n: Notification, ctx: MessageContext): Record<string, unknown> {
  const { type: _type, ...data } = n.data;
  return {
    id: n.eventId,
    type: n.type,
    projectId: n.projectId,
    project: ctx.projectSlug,
    occurredAt: new Date(n.occurredAt).toISOString(),
    dedupeKey: n.dedupeKey,
    url: deepLink(n, ctx),
    data,
  };
}

// ---------------------------------------------------------------------------------------------
// Webhook signature (docs/contract.md §9): X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">

export function signWebhook(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** What a receiver does: recompute over the raw body, compare in constant time, bound the age. */
export function verifyWebhookSignature(secret: string, header: string, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = new Map(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = Buffer.from(signWebhook(secret, body, t).split('v1=')[1]!, 'utf8');
  const given = Buffer.from(v1, 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** A channel as the notifier delivers to it (global from the environment, or a project's). */
export interface ChannelSpec {
  /** Stable per kind + target (+ project for a project's channel): dedupe keys are kept per channel. */
  id: string;
  kind: NotificationChannelKind;
  target: string;
  events: readonly NotificationType[] | null;
  /** HMAC secret of a webhook channel. */
  secret?: string;
  source: 'env' | 'config' | 'settings';
}

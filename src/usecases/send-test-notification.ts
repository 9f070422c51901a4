// "Send test" on the settings page: one message to one channel, now, through the same transports
// as real notifications (SSRF guard, signed webhooks, SMTP), answered with how it went in words.
import { randomUUID } from 'node:crypto';
import type { NotificationSettings } from '../config/integrations.js';
import type { NotificationChannelKind } from '../config/service-yml.js';
import { discordPayload, emailMessage, signWebhook, slackPayload, type Message } from '../domain/notifications.js';
import { DeliveryError, HTTP_TIMEOUT_MS, Mailer, postJson, redactUrl } from '../exporters/notify/transports.js';

export interface TestChannel {
  id: string;
  kind: NotificationChannelKind;
  target: string;
  signingSecret: string | null;
}

export interface SendTestResult {
  channelId: string;
  kind: NotificationChannelKind;
  delivered: boolean;
  /** What happened, in words (the HTTP status, or why it failed). */
  detail: string;
}

export async function sendTestNotification(channel: TestChannel, projectSlug: string, settings: NotificationSettings): Promise<SendTestResult> {
  const now = Date.now();
  const url = settings.dashboardUrl ? `${settings.dashboardUrl}/projects/${encodeURIComponent(projectSlug)}/settings` : null;
  const message: Message = {
    heading: 'Flakehouse test notification',
    summary: `This channel receives notifications for project \`${projectSlug}\`.`,
    fields: [{ label: 'Sent', value: new Date(now).toISOString() }],
    url,
    color: 0x2ecc71,
  };
  const post = (body: string, headers: Record<string, string> = {}): Promise<number> =>
    postJson(channel.target, body, { headers, allowPrivate: settings.allowPrivateWebhooks, timeoutMs: HTTP_TIMEOUT_MS, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
  const result = (delivered: boolean, detail: string): SendTestResult => ({ channelId: channel.id, kind: channel.kind, delivered, detail });
  try {
    switch (channel.kind) {
      case 'slack':
        return result(true, `${redactUrl(channel.target)} answered ${await post(JSON.stringify(slackPayload(message)))}`);
      case 'discord':
        return result(true, `${redactUrl(channel.target)} answered ${await post(JSON.stringify(discordPayload(message, now)))}`);
      case 'webhook': {
        if (!channel.signingSecret) return result(false, 'this webhook has no signing secret yet; it gets one at its next sync');
        const body = JSON.stringify({ id: randomUUID(), type: 'test', project: projectSlug, occurredAt: new Date(now).toISOString(), url, data: {} });
        const status = await post(body, {
          'x-service-event': 'test',
          'x-service-delivery': randomUUID(),
          'x-service-signature': signWebhook(channel.signingSecret, body, Math.floor(now / 1000)),
        });
        return result(true, `${redactUrl(channel.target)} answered ${status}`);
      }
      case 'email': {
        if (!settings.smtp) return result(false, 'email needs SMTP settings (SERVICE_SMTP_HOST, SERVICE_SMTP_FROM)');
        const mailer = new Mailer(settings.smtp);
        try {
          await mailer.send({ to: channel.target, ...emailMessage(message, { projectSlug, ...(settings.dashboardUrl ? { dashboardUrl: settings.dashboardUrl } : {}) }) });
        } finally {
          mailer.close();
        }
        return result(true, `sent to ${channel.target}`);
      }
    }
  } catch (err) {
    return result(false, err instanceof DeliveryError || err instanceof Error ? err.message : String(err));
  }
}

// The settings page's notification channels (the `channels.list` and `channels.sendTest`
// procedures): every channel that may notify the project — the environment's (global), those synced
// from service.yml and the dashboard's own — with credentials shown only to whom may see them, and a
// test message sent to one of them.
import type { NotificationSettings } from '../config/integrations.js';
import { readerChannelTarget } from '../domain/channel-target.js';
import { redactUrl } from '../exporters/notify/transports.js';
import { toIso } from '../../client/src/contract/time.js';
import type { ChannelInput, ChannelRepo } from '../store/channels.js';
import { errors } from '../errors/catalogue.js';
import { sendTestNotification, type SendTestResult, type TestChannel } from './send-test-notification.js';

export interface ProjectChannelsDeps {
  channels: Pick<ChannelRepo, 'list'>;
  notifications: NotificationSettings;
}

type SourcedChannel = TestChannel & { source: 'env' | 'config' | 'settings'; events: string[]; readOnly: boolean };

async function channelsOf(d: ProjectChannelsDeps, projectId: string): Promise<SourcedChannel[]> {
  const n = d.notifications;
  const env: SourcedChannel[] = [];
  const events = n.events ?? [];
  if (n.slackWebhook) env.push({ id: 'env:slack', kind: 'slack', target: n.slackWebhook, signingSecret: null, source: 'env', events, readOnly: true });
  if (n.discordWebhook) env.push({ id: 'env:discord', kind: 'discord', target: n.discordWebhook, signingSecret: null, source: 'env', events, readOnly: true });
  if (n.emailTo) env.push({ id: 'env:email', kind: 'email', target: n.emailTo, signingSecret: null, source: 'env', events, readOnly: true });
  const own = (await d.channels.list(projectId)).map((c) => ({
    id: c.id,
    kind: c.kind,
    target: c.target,
    signingSecret: c.signingSecret,
    source: c.source,
    events: c.events,
    // Config channels are replaced by every CI sync of service.yml: edit them there.
    readOnly: c.source === 'config',
  }));
  return [...env, ...own];
}

/** The channels as the settings page lists them; `admin`: the caller writes them, so sees their credentials. */
export async function projectChannels(d: ProjectChannelsDeps, projectId: string, admin: boolean) {
  return {
    items: (await channelsOf(d, projectId)).map((c) => ({
      id: c.id,
      source: c.source,
      kind: c.kind,
      // A Slack or Discord URL's path is its secret: environment channels show the host only;
      // the project's own show their credentials redacted, except to the admin (who writes them).
      target: c.source === 'env' && c.kind !== 'email' ? redactUrl(c.target) : admin ? c.target : readerChannelTarget(c.kind, c.target),
      events: c.events,
      signed: c.signingSecret !== null && c.signingSecret !== '',
      readOnly: c.readOnly,
    })),
  };
}

/** One test message to one of the project's channels, now; 404 for a channel it does not have. */
export async function sendTestToChannel(d: ProjectChannelsDeps, projectId: string, projectSlug: string, channelId: string): Promise<SendTestResult> {
  const channel = (await channelsOf(d, projectId)).find((c) => c.id === channelId);
  if (!channel) throw errors.notFound(`no channel "${channelId}" in project "${projectSlug}"`);
  return sendTestNotification(channel, projectSlug, d.notifications);
}

/**
 * PUT /v1/notifications/routing: the CI's sync of service.yml's channels replaces the project's
 * config channels; the dashboard's own stay.
 */
export async function syncConfigChannels(channels: Pick<ChannelRepo, 'replaceConfigChannels'>, projectId: string, list: readonly ChannelInput[]): Promise<{ ok: true; channels: number }> {
  const res = await channels.replaceConfigChannels(projectId, list);
  return { ok: true, channels: res.channels };
}

/**
 * GET /v1/notifications/channels: the project's own channels (config and dashboard ones, not the
 * environment's) as a token with `read` sees them: credentials redacted, the signing secret only
 * as whether one is set.
 */
export async function storedChannels(channels: Pick<ChannelRepo, 'list'>, projectId: string) {
  const items = (await channels.list(projectId)).map((c) => ({
    id: c.id,
    source: c.source,
    kind: c.kind,
    target: readerChannelTarget(c.kind, c.target),
    events: c.events,
    signed: c.signingSecret !== null && c.signingSecret !== '',
    createdAt: toIso(c.createdAt),
    updatedAt: toIso(c.updatedAt),
  }));
  return { items };
}

// `notify` exporter: domain events → the six notification types → Slack, Discord, email and signed
// webhooks, from the environment's global channels and each project's own. Best-effort and off the
// critical path: exportEvent only records the deliveries (with their dedupe keys) durably and
// returns; a sender loop delivers them, one at a time per channel so a slow sink holds up nobody
// else, retrying with backoff and dropping with a log line when retries run out.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { NotificationSettings } from '../../config/integrations.js';
import type { NotificationChannelKind, NotificationEventType } from '../../config/service-yml.js';
import { sha256Hex, stableUuid } from '../../../client/src/contract/ids.js';
import {
  channelAccepts,
  describe,
  discordPayload,
  emailMessage,
  retryDelayMs,
  signWebhook,
  slackPayload,
  toNotification,
  webhookPayload,
  type ChannelSpec,
  type MessageContext,
  type Notification,
  type TestRef,
} from '../../domain/notifications.js';
import type { DomainEvent } from '../../domain/events.js';
import type { Host } from '../../pipeline/component.js';
import { BackgroundWorker } from '../../pipeline/helpers/background-worker.js';
import { defineExporter, type RunningEventsExporter } from '../../pipeline/helpers/exporter.js';
import type { Repositories } from '../../store/repositories.js';
import { NotifyStore, type Delivery } from './store.js';
import { DeliveryError, HTTP_TIMEOUT_MS, Mailer, postJson, redactUrl } from './transports.js';

const config = z
  .object({
    /** How long a channel's dedupe key suppresses the same notification (docs/contract.md §9 keys). */
    dedupeWindowHours: z.number().int().min(0).default(168),
    /** Attempts per delivery before it is dropped (with a log line). */
    maxAttempts: z.number().int().min(1).max(20).default(6),
    /** Backoff after the first failure, ×4 per further failure, capped at retryMaxMs. */
    retryInitialMs: z.number().int().min(1).default(2_000),
    retryMaxMs: z.number().int().min(1).default(600_000),
    /** Channels sent to in parallel (each channel one delivery at a time, in order). */
    concurrency: z.number().int().min(1).max(64).default(4),
  })
  .strict();
type NotifyConfig = z.output<typeof config>;

export const notifyExporterFactory = defineExporter({
  type: 'notify',
  description: 'notifications (Slack, Discord, email, signed webhooks) from domain events, deduplicated per channel, delivered in the background',
  configSchema: config,
  startEvents: async (host, cfg, { id, logger }) =>
    new Notifier(host, cfg, logger, await NotifyStore.open(host.extensions, id, host.settings.dataDir, logger), host.extensions.repositories('exporter', id)),
});

/** How long a project's channel list is reused: bursts of events read it once. */
const CHANNELS_TTL_MS = 2_000;
/** How often stale dedupe keys are forgotten. */
const PURGE_EVERY_MS = 3_600_000;

class Notifier implements RunningEventsExporter {
  private readonly settings: NotificationSettings;
  private readonly mailer: Mailer | null;
  private readonly globals: ChannelSpec[];
  private readonly sender: BackgroundWorker;
  /** The delivery being sent per channel id (one at a time per channel). */
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly purgeTimer: NodeJS.Timeout;
  private readonly channelCache = new Map<string, { at: number; value: Promise<ChannelSpec[]> }>();
  private readonly slugs = new Map<string, string>();
  private readonly tests = new Map<string, TestRef>();
  /** Webhook channels already warned about (no secret), so the log says it once. */
  private readonly unsignedWarned = new Set<string>();

  constructor(
    private readonly host: Host,
    private readonly cfg: NotifyConfig,
    private readonly logger: Logger,
    private readonly store: NotifyStore,
    private readonly repos: Pick<Repositories, 'channels' | 'identities' | 'projects'>,
  ) {
    this.settings = host.settings.notifications;
    this.mailer = this.settings.smtp ? new Mailer(this.settings.smtp) : null;
    this.globals = globalChannels(this.settings);
    this.sender = new BackgroundWorker({ pass: () => this.sendDue(), logger });
    // At shutdown in-flight sends are cut short; their deliveries stay queued and go out after a restart.
    this.sender.signal.addEventListener('abort', () => this.mailer?.close(), { once: true });
    this.logger.info(
      { channels: this.globals.map((c) => c.kind), events: this.settings.events ?? 'all', email: Boolean(this.mailer), backlog: this.store.count() },
      'notifications on',
    );
    this.sender.start();
    const purge = (): void => {
      this.store.purge(Date.now() - this.windowMs()).catch((err: unknown) => this.logger.warn({ err }, 'dedupe purge failed'));
    };
    purge();
    this.purgeTimer = setInterval(purge, PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  async shutdown(): Promise<void> {
    clearInterval(this.purgeTimer);
    await this.sender.stop();
  }

  async exportEvent(event: DomainEvent): Promise<void> {
    const n = toNotification(event);
    if (!n) return;
    const channels = (await this.channelsFor(n.projectId)).filter((c) => channelAccepts(c.events, n.type));
    // The same target configured twice (globally and for the project, say) gets one message;
    // the first listing wins, and the channel table (which holds webhook secrets) is read first.
    const unique = new Map<string, ChannelSpec>();
    for (const c of channels) if (!unique.has(c.id)) unique.set(c.id, c);
    const queued = await this.store.enqueue(n, [...unique.values()], Date.now(), this.windowMs());
    if (queued.length === 0) return;
    this.logger.debug({ type: n.type, dedupeKey: n.dedupeKey, channels: queued.map((d) => d.channel.kind) }, 'notification queued');
    this.sender.wake();
  }

  private windowMs(): number {
    return this.cfg.dedupeWindowHours * 3_600_000;
  }

  /** Global channels plus the project's (channel table: config-synced and dashboard; resolved config). */
  private channelsFor(projectId: string): Promise<ChannelSpec[]> {
    const now = Date.now();
    const hit = this.channelCache.get(projectId);
    if (hit && now - hit.at < CHANNELS_TTL_MS) return hit.value;
    const value = this.readProjectChannels(projectId).then((own) => [...this.globals, ...own]);
    value.catch(() => this.channelCache.delete(projectId));
    if (this.channelCache.size > 1000) this.channelCache.clear();
    this.channelCache.set(projectId, { at: now, value });
    return value;
  }

  private async readProjectChannels(projectId: string): Promise<ChannelSpec[]> {
    const host = this.host;
    const [rows, resolved] = await Promise.all([this.repos.channels.list(projectId), host.projectConfig(projectId)]);
    const out: ChannelSpec[] = rows.map((r) =>
      channelSpec(r.kind, r.target, r.events, r.source, r.signingSecret ?? undefined),
    );
    for (const c of resolved.config.notifications.channels) {
      const source = resolved.sources['notifications.channels'] === 'settings' ? 'settings' : 'config';
      out.push(channelSpec(c.kind, c.target, c.events ?? [], source));
    }
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Sender

  /** Starts what is due, at most one delivery per channel; resolves to the wait until the next is due. */
  private async sendDue(): Promise<number> {
    const now = Date.now();
    let wait = 60_000;
    const heads = new Map<string, Delivery>();
    for (const d of this.store.pending()) if (!heads.has(d.channel.id)) heads.set(d.channel.id, d);
    for (const [channelId, d] of heads) {
      if (this.inflight.has(channelId)) continue;
      if (d.nextAt > now) {
        wait = Math.min(wait, d.nextAt - now);
        continue;
      }
      if (this.inflight.size >= this.cfg.concurrency) break;
      const task = this.attempt(d).finally(() => {
        this.inflight.delete(channelId);
        this.sender.wake();
      });
      this.inflight.set(channelId, task);
      this.sender.track(task);
    }
    return wait;
  }

  private async attempt(d: Delivery): Promise<void> {
    const store = this.store;
    const n = d.notification;
    const where = { channel: d.channel.kind, target: describeTarget(d.channel), source: d.channel.source, type: n.type, dedupeKey: n.dedupeKey, projectId: n.projectId };
    try {
      await this.send(d);
      await store.done(d.seq);
      this.logger.info({ ...where, attempts: d.attempts + 1, latencyMs: Date.now() - d.queuedAt }, 'notification delivered');
    } catch (err) {
      if (this.sender.stopping) return; // left queued: it goes out after the restart
      const e = err instanceof DeliveryError ? err : new DeliveryError(err instanceof Error ? err.message : String(err), false);
      const attempts = d.attempts + 1;
      try {
        if (e.permanent || attempts >= this.cfg.maxAttempts) {
          await store.done(d.seq);
          this.logger.error(
            { ...where, attempts, err: e.message },
            e.permanent ? 'notification refused; dropped' : `notification failed ${attempts} times; dropped`,
          );
        } else {
          const delay = retryDelayMs(attempts, this.cfg.retryInitialMs, this.cfg.retryMaxMs);
          await store.reschedule({ ...d, attempts, nextAt: Date.now() + delay, lastError: e.message });
          this.logger.warn({ ...where, attempts, retryInMs: delay, err: e.message }, 'notification failed; will retry');
        }
      } catch (storeErr) {
        this.logger.error({ err: storeErr, ...where }, 'cannot record a failed notification');
      }
    }
  }

  private async send(d: Delivery): Promise<void> {
    const { channel } = d;
    const n = await this.enrich(d.notification);
    const ctx: MessageContext = { projectSlug: await this.slug(n.projectId), dashboardUrl: this.settings.dashboardUrl };
    const message = describe(n, ctx);
    const post = (body: string, headers: Record<string, string> = {}): Promise<number> =>
      postJson(channel.target, body, { headers, allowPrivate: this.settings.allowPrivateWebhooks, timeoutMs: HTTP_TIMEOUT_MS, signal: this.sender.signal });
    switch (channel.kind) {
      case 'slack':
        await post(JSON.stringify(slackPayload(message)));
        return;
      case 'discord':
        await post(JSON.stringify(discordPayload(message, n.occurredAt)));
        return;
      case 'webhook': {
        // Unsigned would be worse than not sending: the receiver could not tell it came from us.
        if (!channel.secret) {
          if (!this.unsignedWarned.has(channel.id)) this.logger.warn({ target: redactUrl(channel.target) }, 'webhook channel has no signing secret; not delivered');
          this.unsignedWarned.add(channel.id);
          throw new DeliveryError('webhook channel has no signing secret', true);
        }
        const body = JSON.stringify(webhookPayload(n, ctx));
        await post(body, {
          'x-service-event': n.type,
          'x-service-delivery': stableUuid('delivery', n.eventId, channel.id),
          'x-service-signature': signWebhook(channel.secret, body, Math.floor(Date.now() / 1000)),
        });
        return;
      }
      case 'email':
        if (!this.mailer) throw new DeliveryError('email channel but no SMTP settings (SERVICE_SMTP_HOST, SERVICE_SMTP_FROM)', true);
        if (this.sender.stopping) throw new DeliveryError('aborted by shutdown', false);
        await this.mailer.send({ to: channel.target, ...emailMessage(message, ctx) });
        return;
    }
  }

  /** Test names for events that carry only the id (quarantine, RCA). */
  private async enrich(n: Notification): Promise<Notification> {
    const d = n.data;
    const test = d.type === 'quarantine_changed' || d.type === 'rca_ready' ? d.test : null;
    if (!test || test.title) return n;
    const key = `${n.projectId}:${test.testId}`;
    let found = this.tests.get(key);
    if (!found) {
      const row = await this.repos.identities.get(n.projectId, test.testId);
      if (!row) return n;
      found = { testId: row.id, filePath: row.filePath, suite: row.suite, title: row.title };
      if (this.tests.size > 5000) this.tests.clear();
      this.tests.set(key, found);
    }
    return { ...n, data: { ...d, test: found } as Notification['data'] };
  }

  private async slug(projectId: string): Promise<string> {
    const known = this.slugs.get(projectId);
    if (known) return known;
    for (const p of await this.repos.projects.list()) this.slugs.set(p.id, p.slug);
    return this.slugs.get(projectId) ?? projectId;
  }
}

/** The same kind and target is the same channel, wherever it was configured. */
function channelSpec(
  kind: NotificationChannelKind,
  target: string,
  events: readonly NotificationEventType[],
  source: ChannelSpec['source'],
  secret?: string,
): ChannelSpec {
  return { id: `${kind}:${sha256Hex(`${kind}\u0000${target}`).slice(0, 16)}`, kind, target, events: events.length > 0 ? [...events] : null, secret, source };
}

function globalChannels(s: NotificationSettings): ChannelSpec[] {
  const events = s.events ?? [];
  const out: ChannelSpec[] = [];
  if (s.slackWebhook) out.push(channelSpec('slack', s.slackWebhook, events, 'env'));
  if (s.discordWebhook) out.push(channelSpec('discord', s.discordWebhook, events, 'env'));
  if (s.emailTo && s.smtp) out.push(channelSpec('email', s.emailTo, events, 'env'));
  return out;
}

function describeTarget(c: ChannelSpec): string {
  return c.kind === 'email' ? c.target : redactUrl(c.target);
}

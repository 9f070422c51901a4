// Notification routing (docs/contract.md §9): PUT /v1/notifications/routing replaces the project's
// config-managed channels (what service.yml declares; the reporter syncs it on every run), and
// GET /v1/notifications/channels lists every channel of the project without secrets: no signing
// secret, and webhook targets with their credentials (userinfo, secret query values and path
// segments) redacted (src/domain/channel-target.ts); the admin sees them whole in the settings.
import { z } from 'zod';
import { MAX_CONFIG_CHANNELS, NOTIFICATION_CHANNEL_KINDS, NOTIFICATION_EVENT_TYPES, channelSchema } from '../../config/service-yml.js';
import { CHANNEL_SOURCES, type ChannelRepo } from '../../store/channels.js';
import { storedChannels, syncConfigChannels } from '../../usecases/project-channels.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

/** Strict (unknown keys are errors naming the path), at most 50, kind + target unique. */
export const routingBodySchema = z
  .strictObject({
    channels: z.array(channelSchema).max(MAX_CONFIG_CHANNELS, { error: `at most ${MAX_CONFIG_CHANNELS} channels` }),
  })
  .superRefine((body, ctx) => {
    const seen = new Map<string, number>();
    body.channels.forEach((ch, i) => {
      const key = `${ch.kind}\u0000${ch.target}`;
      const first = seen.get(key);
      if (first === undefined) seen.set(key, i);
      else ctx.addIssue({ code: 'custom', path: ['channels', i], message: `duplicate of channels.${first} (same kind and target)` });
    });
  });

const channelView = z.object({
  id: z.string(),
  source: z.enum(CHANNEL_SOURCES),
  kind: z.enum(NOTIFICATION_CHANNEL_KINDS),
  target: z.string(),
  events: z.array(z.enum(NOTIFICATION_EVENT_TYPES)),
  /** Whether a webhook signing secret is set; the secret itself is never shown. */
  signed: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export function notificationRoutes(channels: ChannelRepo): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'PUT',
      url: '/v1/notifications/routing',
      summary: "Replace the project's config-managed notification channels",
      tags: ['notifications'],
      auth: { kind: 'token', anyOf: ['ingest'] },
      body: routingBodySchema,
      response: z.object({ ok: z.literal(true), channels: z.number().int() }),
      handler: ({ body, principal }) => syncConfigChannels(channels, principal!.projectId, body.channels),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/notifications/channels',
      summary: 'Notification channels of the project, config-managed and dashboard ones',
      tags: ['notifications'],
      auth: { kind: 'token', anyOf: ['read'] },
      response: z.object({ items: z.array(channelView) }),
      handler: ({ principal }) => storedChannels(channels, principal!.projectId),
    }),
  ];
}

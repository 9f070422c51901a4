// Procedures of the session, the project picker and the settings page (policy, notification
// channels, tokens, badges).
import { effectiveAiRca } from '../../config/ai.js';
import { badgesResponseSchema } from '../../domain/pr-schemas.js';
import { toIso } from '../../domain/time.js';
import { redactUrl } from '../../exporters/notify/transports.js';
import { readerChannelTarget } from '../../domain/channel-target.js';
import { UUID_RE } from '../../domain/ids.js';
import { SCOPES } from '../../store/projects.js';
import { effectiveScopes } from '../auth.js';
import { errors } from '../../errors.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';
import { restHandler } from './rest-handler.js';
import { sendTestNotification, type TestChannel } from './send-test.js';
import { patchProjectSettings } from '../../usecases/project-settings.js';

type Source = 'default' | 'file' | 'settings' | 'env';

function valueAt(config: unknown, key: string): unknown {
  let v: unknown = config;
  for (const part of key.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
  return v;
}

export function projectRouter(d: TrpcDeps, p: ProcedureKinds) {
  const badges = restHandler(() => d.routes(), 'GET', '/v1/badges', badgesResponseSchema);

  async function slugOf(projectId: string): Promise<string> {
    const project = await d.projects.byId(projectId);
    if (!project) throw errors.notFound('project not found');
    return project.slug;
  }

  /**
   * A key's value as the instance applies it, as `flakehouse config` shows it: `ai.rca` is off without
   * an AI provider whatever is configured, so the page says false, with the configured value and why.
   */
  function applied(key: string, value: unknown): { value: unknown; configured?: unknown; note?: string } {
    if (key !== 'ai.rca' || typeof value !== 'boolean') return { value };
    const rca = effectiveAiRca(value, d.ai);
    return rca.reason ? { value: rca.value, configured: value, note: rca.reason } : { value };
  }

  /** The effective policy as the settings page lists it: each key, its value and where it comes from. */
  async function policy(projectId: string) {
    const [resolved, state, slug] = await Promise.all([d.projectConfigs.get(projectId), d.projectConfigs.settings(projectId), slugOf(projectId)]);
    const keys = Object.entries(resolved.sources as Record<string, Source>)
      .sort(([a], [b]) => a.localeCompare(b))
      // Environment values win over everything and cannot be changed here: shown read-only.
      .map(([key, source]) => ({ key, ...applied(key, valueAt(resolved.config, key)), source, readOnly: source === 'env' }));
    return {
      project: slug,
      keys,
      /** What was set for this project (absent keys inherit). */
      settings: state.settings,
      retention: resolved.retention,
      version: state.version,
      updatedAt: state.updatedAt === null ? null : toIso(state.updatedAt),
    };
  }

  /** Every channel that may notify the project: environment (global), service.yml-synced, and the dashboard's own. */
  async function channelsOf(projectId: string): Promise<(TestChannel & { source: 'env' | 'config' | 'settings'; events: string[]; readOnly: boolean })[]> {
    const n = d.notifications;
    const env: (TestChannel & { source: 'env'; events: string[]; readOnly: boolean })[] = [];
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

  return {
    session: {
      me: p.signedIn.input(PROCEDURES['session.me'].input).query(async ({ ctx }) => {
        const c = ctx.caller;
        const via = c.session ? ('session' as const) : ('bearer' as const);
        const expiresAt = c.session ? toIso(c.session.expiresAt) : null;
        if (c.kind === 'admin') return { principal: { kind: 'admin' as const, projectId: null, projectSlug: null, scopes: [...SCOPES] }, via, expiresAt };
        const projectSlug = await slugOf(c.principal.projectId);
        return { principal: { kind: 'project' as const, projectId: c.principal.projectId, projectSlug, scopes: effectiveScopes(c.principal) }, via, expiresAt };
      }),
    },
    projects: {
      list: p.admin.input(PROCEDURES['projects.list'].input).query(async () => ({
        items: (await d.projects.list()).map(({ id, slug, name, createdAt }) => ({ id, slug, name, createdAt })),
      })),
    },
    settings: {
      get: p.read.input(PROCEDURES['settings.get'].input).query(({ ctx }) => policy(ctx.projectId)),
      update: p.adminProject.input(PROCEDURES['settings.update'].input).mutation(async ({ ctx, input }) => {
        // As PATCH /v1/admin/projects/:slug/settings: validated (400 naming the path) and written.
        await patchProjectSettings({ projects: d.projects, configs: d.projectConfigs }, ctx.projectSlug, input.patch);
        return policy(ctx.projectId);
      }),
    },
    channels: {
      list: p.read.input(PROCEDURES['channels.list'].input).query(async ({ ctx }) => ({
        items: (await channelsOf(ctx.projectId)).map((c) => ({
          id: c.id,
          source: c.source,
          kind: c.kind,
          // A Slack or Discord URL's path is its secret: environment channels show the host only;
          // the project's own show their credentials redacted, except to the admin (who writes them).
          target: c.source === 'env' && c.kind !== 'email' ? redactUrl(c.target) : ctx.caller.kind === 'admin' ? c.target : readerChannelTarget(c.kind, c.target),
          events: c.events,
          signed: c.signingSecret !== null && c.signingSecret !== '',
          readOnly: c.readOnly,
        })),
      })),
      sendTest: p.adminProject.input(PROCEDURES['channels.sendTest'].input).mutation(async ({ ctx, input }) => {
        const channel = (await channelsOf(ctx.projectId)).find((c) => c.id === input.channelId);
        if (!channel) throw errors.notFound(`no channel "${input.channelId}" in project "${ctx.projectSlug}"`);
        return sendTestNotification(channel, ctx.projectSlug, d.notifications);
      }),
    },
    tokens: {
      list: p.adminProject.input(PROCEDURES['tokens.list'].input).query(async ({ ctx }) => ({ items: await d.projects.listTokens(ctx.projectId) })),
      create: p.adminProject
        .input(PROCEDURES['tokens.create'].input)
        .mutation(async ({ ctx, input }) => d.projects.createToken(ctx.projectId, [...new Set(input.scopes)])),
      revoke: p.admin.input(PROCEDURES['tokens.revoke'].input).mutation(async ({ input }) => {
        if (!UUID_RE.test(input.tokenId) || !(await d.projects.revokeToken(input.tokenId.toLowerCase()))) throw errors.notFound('token not found');
        d.auth.forget(input.tokenId.toLowerCase());
        // Its dashboard sessions end now (each request re-checks the token anyway).
        d.sessions?.endToken(input.tokenId.toLowerCase());
        return { revoked: true as const };
      }),
    },
    badges: {
      get: p.read.input(PROCEDURES['badges.get'].input).query(({ ctx }) => badges(ctx.principal)),
    },
  };
}

// Procedures of the session, the project picker and the settings page (policy, notification
// channels, tokens, badges).
import { toIso } from '../../../client/src/contract/time.js';
import { SCOPES } from '../../store/projects.js';
import { effectiveScopes } from '../auth.js';
import { errors } from '../../errors/catalogue.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';
import { projectBadges } from '../../usecases/project-badges.js';
import { projectChannels, sendTestToChannel } from '../../usecases/project-channels.js';
import { projectPolicy, updateProjectPolicy } from '../../usecases/project-policy.js';
import { createProjectToken, projectTokens, revokeProjectToken } from '../../usecases/project-tokens.js';
import { listProjects } from '../../usecases/projects.js';

export function projectRouter(d: TrpcDeps, p: ProcedureKinds) {

  // Read inside each call: the router's shape is read without dependencies (the OpenAPI document).
  const u = () => d.useCases;
  async function slugOf(projectId: string): Promise<string> {
    const project = await u().projects.byId(projectId);
    if (!project) throw errors.notFound('project not found');
    return project.slug;
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
      list: p.admin.input(PROCEDURES['projects.list'].input).query(() => listProjects(u())),
    },
    settings: {
      get: p.read.input(PROCEDURES['settings.get'].input).query(({ ctx }) => projectPolicy(u().policy, ctx.projectId)),
      update: p.adminProject
        .input(PROCEDURES['settings.update'].input)
        .mutation(({ ctx, input }) => updateProjectPolicy(u(), { slug: ctx.projectSlug, id: ctx.projectId }, input.patch)),
    },
    channels: {
      list: p.read.input(PROCEDURES['channels.list'].input).query(({ ctx }) => projectChannels(u().channels, ctx.projectId, ctx.caller.kind === 'admin')),
      sendTest: p.adminProject.input(PROCEDURES['channels.sendTest'].input).mutation(({ ctx, input }) => sendTestToChannel(u().channels, ctx.projectId, ctx.projectSlug, input.channelId)),
    },
    tokens: {
      list: p.adminProject.input(PROCEDURES['tokens.list'].input).query(({ ctx }) => projectTokens(u().tokens, ctx.projectId)),
      create: p.adminProject.input(PROCEDURES['tokens.create'].input).mutation(({ ctx, input }) => createProjectToken(u().tokens, ctx.projectId, input.scopes)),
      revoke: p.admin.input(PROCEDURES['tokens.revoke'].input).mutation(({ input }) => revokeProjectToken(u().tokens, input.tokenId)),
    },
    badges: {
      get: p.read.input(PROCEDURES['badges.get'].input).query(({ ctx }) => projectBadges(u().badges, ctx.projectId)),
    },
  };
}

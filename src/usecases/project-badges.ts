// A project's README badges as `flakehouse badge` and the settings page list them: the badge token
// and each variant's paths (GET /v1/badges and the `badges.get` procedure).
import { BADGE_LABELS, BADGE_VARIANTS } from '../../client/src/contract/badge.js';
import type { BadgesResponse } from '../../client/src/contract/pr-schemas.js';
import type { ProjectRepo } from '../store/projects.js';
import { errors } from '../errors/catalogue.js';

export interface ProjectBadgesDeps {
  projects: Pick<ProjectRepo, 'byId'>;
  /** SERVICE_PUBLIC_API_URL: where badge URLs point when the CLI has no setting of its own. */
  publicApiUrl?: string;
}

export async function projectBadges(d: ProjectBadgesDeps, projectId: string): Promise<BadgesResponse> {
  const project = await d.projects.byId(projectId);
  if (!project) throw errors.notFound('project not found');
  return {
    project: project.slug,
    badgeToken: project.badgeToken,
    publicApiUrl: d.publicApiUrl ?? null,
    badges: BADGE_VARIANTS.map((variant) => ({
      variant,
      label: BADGE_LABELS[variant],
      svg: `/badge/${project.badgeToken}/${variant}.svg`,
      json: `/badge/${project.badgeToken}/${variant}.json`,
    })),
  };
}

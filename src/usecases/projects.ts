// The instance's projects, as the admin lists them (GET /v1/admin/projects, the project picker's
// `projects.list` procedure).
import type { ProjectRepo } from '../store/projects.js';

export async function listProjects(d: { projects: Pick<ProjectRepo, 'list'> }) {
  return { items: (await d.projects.list()).map(({ id, slug, name, createdAt }) => ({ id, slug, name, createdAt })) };
}

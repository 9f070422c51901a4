// A project's tokens (the admin routes under /v1/admin and the settings page's `tokens.*`
// procedures): listed, created (the secret shown once) and revoked.
import { UUID_RE } from '../../client/src/contract/ids.js';
import type { ProjectRepo, Scope } from '../store/projects.js';
import { errors } from '../errors/catalogue.js';

export interface ProjectTokensDeps {
  projects: Pick<ProjectRepo, 'listTokens' | 'createToken' | 'revokeToken'>;
  /** Forgets what the API holds of a revoked token (its cached principal, its dashboard sessions). */
  onRevoked: (tokenId: string) => void;
}

export function projectTokens(d: ProjectTokensDeps, projectId: string) {
  return d.projects.listTokens(projectId).then((items) => ({ items }));
}

/** A new token with these scopes (each once); its secret is in this answer only. */
export function createProjectToken(d: ProjectTokensDeps, projectId: string, scopes: readonly Scope[]) {
  return d.projects.createToken(projectId, [...new Set(scopes)]);
}

/** Revokes the token: refused from now on; 404 when there is no such token. */
export async function revokeProjectToken(d: ProjectTokensDeps, tokenId: string): Promise<{ revoked: true }> {
  const id = tokenId.toLowerCase();
  if (!UUID_RE.test(id) || !(await d.projects.revokeToken(id))) throw errors.notFound('token not found');
  d.onRevoked(id);
  return { revoked: true as const };
}

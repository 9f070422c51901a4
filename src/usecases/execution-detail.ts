// The execution page (the `execution.get` procedure): one execution with its artifacts and its
// root-cause report. An id outside the project is 404.
import { artifactViews } from '../artifacts/links.js';
import type { ArtifactSigner } from '../artifacts/s3.js';
import { UUID_RE } from '../../client/src/contract/ids.js';
import type { ExecutionRepo } from '../store/executions.js';
import type { RcaRepo } from '../store/rca.js';
import { errors } from '../errors/catalogue.js';

export interface ExecutionDetailDeps {
  executions: Pick<ExecutionRepo, 'get'>;
  rca: Pick<RcaRepo, 'get'>;
  /** Signs artifact download URLs; null: refs without URLs. */
  artifacts: ArtifactSigner | null;
}

export async function executionDetail(d: ExecutionDetailDeps, projectId: string, executionId: string) {
  const e = UUID_RE.test(executionId) ? await d.executions.get(projectId, executionId.toLowerCase()) : null;
  if (!e) throw errors.notFound('execution not found');
  const [artifacts, rca] = await Promise.all([artifactViews(projectId, e.artifacts, d.artifacts), d.rca.get(projectId, e.id)]);
  return { ...e, artifacts, rca };
}

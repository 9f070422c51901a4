// Root-cause analyses (docs/contract.md §6). The AI stage (exporters/rca) writes one analysis per error
// cluster in `rca_analyses`; a failing execution's report is its cluster's finished analysis, so an
// execution of a known cluster has a report at once and no model is asked twice. Also the daily
// token usage per project and the days a budget ran out (migration 010).
import { stableUuid } from '../../client/src/contract/ids.js';
import type { HistoryStatus, RcaHistoryEntry } from '../domain/rca.js';
import { toIso } from '../../client/src/contract/time.js';
import type { Store } from './client.js';
import { toNumber } from './numbers.js';
import { chTime } from './time.js';

export interface SimilarPast {
  rcaId: string;
  executionId: string;
  summary: string;
  createdAt: string;
}

export interface RcaReport {
  id: string;
  executionId: string;
  signatureId: string | null;
  clusterId: string | null;
  summary: string;
  likelyCause: string;
  suggestedAction: string;
  /** 0..1 */
  confidence: number;
  /** Analyses of similar earlier clusters that the model was shown. */
  similarPast: SimilarPast[];
  llmModel: string;
  /** Input + output tokens the provider counted for the analysis (retries included). */
  tokenCost: number;
  createdAt: string;
}

export type AnalysisStatus = 'pending' | 'done' | 'failed' | 'skipped';

export interface RcaAnalysis {
  projectId: string;
  clusterId: string;
  id: string;
  signatureId: string;
  executionId: string;
  testId: string;
  status: AnalysisStatus;
  summary: string;
  likelyCause: string;
  suggestedAction: string;
  confidence: number;
  similarPast: SimilarPast[];
  provider: string;
  llmModel: string;
  inputTokens: number;
  outputTokens: number;
  calls: number;
  error: string;
  queuedAt: number;
  completedAt: number | null;
}

/** A cluster with a failing execution in a run: what a new analysis starts from. */
export interface FailingCluster {
  clusterId: string;
  signatureId: string;
  executionId: string;
  testId: string;
}

export interface FailureContext {
  testId: string;
  filePath: string;
  suite: string;
  title: string;
  errorType: string;
  errorMessage: string;
  errorStack: string;
  commitSha: string;
  branch: string;
  startedAt: number;
}

export interface StoredSignature {
  errorType: string;
  normalizedMessage: string;
  frames: string[];
  sketch: Uint32Array;
}

export interface SignatureCandidate extends StoredSignature {
  signatureId: string;
  clusterId: string;
}

/** An analysis waiting for the model. */
export type PendingAnalysis = Pick<RcaAnalysis, 'projectId' | 'clusterId' | 'id' | 'signatureId' | 'executionId' | 'testId' | 'queuedAt'>;

/** The analysis id of a cluster: stable, so a redelivered event or a restart names the same one. */
export function analysisId(projectId: string, clusterId: string): string {
  return stableUuid('rca.analysis', projectId, clusterId);
}

interface AnalysisDbRow {
  project_id: string;
  cluster_id: string;
  id: string;
  signature_id: string;
  execution_id: string;
  test_id: string;
  status: AnalysisStatus;
  summary: string;
  likely_cause: string;
  suggested_action: string;
  confidence: number;
  similar_past: string;
  provider: string;
  llm_model: string;
  input_tokens: number | string;
  output_tokens: number | string;
  calls: number | string;
  error: string;
  queued_ms: number | string;
  completed_ms: number | string | null;
}

const ANALYSIS_COLUMNS = `project_id, cluster_id, id, signature_id, execution_id, test_id, status, summary, likely_cause,
  suggested_action, confidence, similar_past, provider, llm_model, input_tokens, output_tokens, calls, error,
  toUnixTimestamp64Milli(queued_at) AS queued_ms, toUnixTimestamp64Milli(completed_at) AS completed_ms`;

function toAnalysis(r: AnalysisDbRow): RcaAnalysis {
  let similarPast: SimilarPast[] = [];
  try {
    similarPast = r.similar_past ? (JSON.parse(r.similar_past) as SimilarPast[]) : [];
  } catch {
    similarPast = [];
  }
  return {
    projectId: r.project_id,
    clusterId: r.cluster_id,
    id: r.id,
    signatureId: r.signature_id,
    executionId: r.execution_id,
    testId: r.test_id,
    status: r.status,
    summary: r.summary,
    likelyCause: r.likely_cause,
    suggestedAction: r.suggested_action,
    confidence: Number(r.confidence),
    similarPast,
    provider: r.provider,
    llmModel: r.llm_model,
    inputTokens: toNumber(r.input_tokens),
    outputTokens: toNumber(r.output_tokens),
    calls: toNumber(r.calls),
    error: r.error,
    queuedAt: toNumber(r.queued_ms),
    completedAt: r.completed_ms === null ? null : toNumber(r.completed_ms),
  };
}

export class RcaRepo {
  constructor(private readonly store: Store) {}

  private t(name: string): string {
    return this.store.table(name);
  }

  /** Whether the execution is stored under this project (another project's is "unknown"). */
  async executionExists(projectId: string, executionId: string): Promise<boolean> {
    // The `id` bloom filter skips the granules of other executions within the project's range.
    const rows = await this.store.query<{ ok: number }>(
      `SELECT 1 AS ok FROM ${this.t('executions')} WHERE project_id = {projectId:UUID} AND id = {executionId:UUID} LIMIT 1`,
      { projectId, executionId },
    );
    return rows.length > 0;
  }

  /** The execution's report: its cluster's finished analysis; null while there is none. */
  async get(projectId: string, executionId: string): Promise<RcaReport | null> {
    const [e] = await this.store.query<{ signature_id: string; cluster_id: string }>(
      `SELECT signature_id, cluster_id FROM ${this.t('executions')}
       WHERE project_id = {projectId:UUID} AND id = {executionId:UUID} AND cluster_id != '' LIMIT 1`,
      { projectId, executionId },
    );
    if (!e) return null;
    const a = await this.analysis(projectId, e.cluster_id);
    if (!a || a.status !== 'done') return null;
    return {
      id: stableUuid('rca.report', projectId, executionId),
      executionId,
      signatureId: e.signature_id || null,
      clusterId: e.cluster_id,
      summary: a.summary,
      likelyCause: a.likelyCause,
      suggestedAction: a.suggestedAction,
      confidence: a.confidence,
      similarPast: a.similarPast,
      llmModel: a.llmModel,
      tokenCost: a.inputTokens + a.outputTokens,
      createdAt: toIso(a.completedAt ?? a.queuedAt),
    };
  }

  async analysis(projectId: string, clusterId: string): Promise<RcaAnalysis | null> {
    const rows = await this.store.query<AnalysisDbRow>(
      `SELECT ${ANALYSIS_COLUMNS} FROM ${this.t('rca_analyses')} FINAL
       WHERE project_id = {projectId:UUID} AND cluster_id = {clusterId:String}`,
      { projectId, clusterId },
    );
    return rows[0] ? toAnalysis(rows[0]) : null;
  }

  /** Status of each cluster that has an analysis row. */
  async statuses(projectId: string, clusterIds: readonly string[]): Promise<Map<string, AnalysisStatus>> {
    if (clusterIds.length === 0) return new Map();
    const rows = await this.store.query<{ cluster_id: string; status: AnalysisStatus }>(
      `SELECT cluster_id, status FROM ${this.t('rca_analyses')} FINAL
       WHERE project_id = {projectId:UUID} AND cluster_id IN {clusterIds:Array(String)}`,
      { projectId, clusterIds },
    );
    return new Map(rows.map((r) => [r.cluster_id, r.status]));
  }

  /** The clusters of a run's failing executions, each with its first failing execution. */
  async failingClusters(projectId: string, runId: string): Promise<FailingCluster[]> {
    const rows = await this.store.query<{ cluster_id: string; signature_id: string; execution_id: string; test_id: string }>(
      `SELECT cluster_id, argMin(signature_id, (started_at, id)) AS signature_id, argMin(id, (started_at, id)) AS execution_id,
              argMin(test_id, (started_at, id)) AS test_id
       FROM ${this.t('executions')}
       WHERE project_id = {projectId:UUID} AND run_id = {runId:UUID} AND status IN ('fail', 'flaky') AND cluster_id != ''
       GROUP BY cluster_id ORDER BY min(started_at)`,
      { projectId, runId },
    );
    return rows.map((r) => ({ clusterId: r.cluster_id, signatureId: r.signature_id, executionId: r.execution_id, testId: r.test_id }));
  }

  /** Analyses waiting for the model, oldest first, leaving out the given projects and ids. */
  async pending(limit: number, excludeProjects: readonly string[], excludeIds: readonly string[]): Promise<PendingAnalysis[]> {
    const rows = await this.store.query<AnalysisDbRow>(
      `SELECT ${ANALYSIS_COLUMNS} FROM ${this.t('rca_analyses')} FINAL
       WHERE status = 'pending' AND project_id NOT IN {excludeProjects:Array(UUID)} AND id NOT IN {excludeIds:Array(UUID)}
       ORDER BY queued_at LIMIT {limit:UInt32}`,
      { limit, excludeProjects, excludeIds },
    );
    return rows.map(toAnalysis);
  }

  /** Writes analyses as they now are (queued, finished, failed); the latest write wins. */
  async write(analyses: readonly RcaAnalysis[]): Promise<void> {
    if (analyses.length === 0) return;
    const now = Date.now();
    const rows = analyses.map((a) => ({
      project_id: a.projectId,
      cluster_id: a.clusterId,
      id: a.id,
      signature_id: a.signatureId,
      execution_id: a.executionId,
      test_id: a.testId,
      status: a.status,
      summary: a.summary,
      likely_cause: a.likelyCause,
      suggested_action: a.suggestedAction,
      confidence: a.confidence,
      similar_past: a.similarPast.length > 0 ? JSON.stringify(a.similarPast) : '',
      provider: a.provider,
      llm_model: a.llmModel,
      input_tokens: a.inputTokens,
      output_tokens: a.outputTokens,
      calls: Math.min(a.calls, 255),
      error: a.error.slice(0, 1000),
      queued_at: chTime(a.queuedAt),
      completed_at: a.completedAt === null ? null : chTime(a.completedAt),
      // A finished state always outranks the queued one written before it, also within one millisecond.
      version: now * 10 + (a.status === 'pending' ? 0 : 1),
    }));
    await this.store.insert('rca_analyses', rows, `rca:${analyses[0]!.id}:${analyses[0]!.status}:${now}:${analyses.length}`);
  }

  /** The failing execution an analysis starts from. */
  async failure(projectId: string, executionId: string): Promise<FailureContext | null> {
    const rows = await this.store.query<{
      test_id: string;
      file_path: string;
      suite: string;
      title: string;
      error_type: string;
      error_message: string;
      error_stack: string;
      commit_sha: string;
      branch: string;
      started_ms: number | string;
    }>(
      `SELECT test_id, file_path, suite, title, error_type, error_message, error_stack, commit_sha, branch,
              toUnixTimestamp64Milli(started_at) AS started_ms
       FROM ${this.t('executions')} WHERE project_id = {projectId:UUID} AND id = {executionId:UUID} LIMIT 1`,
      { projectId, executionId },
    );
    const r = rows[0];
    if (!r) return null;
    return {
      testId: r.test_id,
      filePath: r.file_path,
      suite: r.suite,
      title: r.title,
      errorType: r.error_type,
      errorMessage: r.error_message,
      errorStack: r.error_stack,
      commitSha: r.commit_sha,
      branch: r.branch,
      startedAt: toNumber(r.started_ms),
    };
  }

  /** The test's last `limit` executions up to `until`, oldest first. */
  async history(projectId: string, testId: string, until: number, limit: number): Promise<RcaHistoryEntry[]> {
    if (limit <= 0) return [];
    const rows = await this.store.query<{ started_ms: number | string; status: HistoryStatus; attempt: number; commit_sha: string; branch: string }>(
      `SELECT toUnixTimestamp64Milli(started_at) AS started_ms, status, attempt, commit_sha, branch
       FROM ${this.t('executions')}
       WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID} AND started_at <= fromUnixTimestamp64Milli({until:Int64}, 'UTC')
       ORDER BY started_at DESC, attempt DESC LIMIT {limit:UInt32}`,
      { projectId, testId, until, limit },
    );
    return rows
      .map((r) => ({ startedAt: toNumber(r.started_ms), status: r.status, attempt: toNumber(r.attempt), commitSha: r.commit_sha, branch: r.branch }))
      .reverse();
  }

  async signature(projectId: string, signatureId: string): Promise<StoredSignature | null> {
    const rows = await this.store.query<{ error_type: string; normalized_message: string; frames: string[]; sketch: number[] }>(
      `SELECT error_type, normalized_message, frames, sketch FROM ${this.t('error_signatures')}
       WHERE project_id = {projectId:UUID} AND signature_id = {signatureId:String} LIMIT 1`,
      { projectId, signatureId },
    );
    const r = rows[0];
    return r ? { errorType: r.error_type, normalizedMessage: r.normalized_message, frames: r.frames, sketch: Uint32Array.from(r.sketch) } : null;
  }

  /** Signatures of other clusters sharing an LSH band key with the given keys (capped). */
  async candidates(projectId: string, bandKeys: readonly string[], excludeCluster: string): Promise<SignatureCandidate[]> {
    if (bandKeys.length === 0) return [];
    const rows = await this.store.query<{ signature_id: string; cid: string; etype: string; message: string; fr: string[]; sk: number[] }>(
      `SELECT signature_id, any(cluster_id) AS cid, any(error_type) AS etype, any(normalized_message) AS message, any(frames) AS fr, any(sketch) AS sk
       FROM ${this.t('error_signatures')}
       WHERE project_id = {projectId:UUID} AND cluster_id != {excludeCluster:String} AND signature_id IN (
         SELECT DISTINCT signature_id FROM ${this.t('signature_bands')}
         WHERE project_id = {projectId:UUID} AND band_key IN {bandKeys:Array(String)} LIMIT 500)
       GROUP BY signature_id`,
      { projectId, bandKeys, excludeCluster },
    );
    return rows.map((r) => ({
      signatureId: r.signature_id,
      clusterId: r.cid,
      errorType: r.etype,
      normalizedMessage: r.message,
      frames: r.fr,
      sketch: Uint32Array.from(r.sk),
    }));
  }

  /** Finished analyses of the given clusters. */
  async finished(projectId: string, clusterIds: readonly string[]): Promise<RcaAnalysis[]> {
    if (clusterIds.length === 0) return [];
    const rows = await this.store.query<AnalysisDbRow>(
      `SELECT ${ANALYSIS_COLUMNS} FROM ${this.t('rca_analyses')} FINAL
       WHERE project_id = {projectId:UUID} AND cluster_id IN {clusterIds:Array(String)} AND status = 'done'`,
      { projectId, clusterIds },
    );
    return rows.map(toAnalysis);
  }

  // ─── Budget ───────────────────────────────────────────────────────────────────────────────────

  /** Input + output tokens the providers counted for the project on a UTC day ('YYYY-MM-DD'). */
  async tokensUsed(projectId: string, day: string): Promise<number> {
    const rows = await this.store.query<{ used: number | string }>(
      `SELECT sum(input_tokens + output_tokens) AS used FROM ${this.t('ai_token_usage')} FINAL
       WHERE project_id = {projectId:UUID} AND day = {day:Date}`,
      { projectId, day },
    );
    return toNumber(rows[0]?.used ?? 0);
  }

  async recordUsage(u: { projectId: string; callId: string; at: number; day: string; clusterId: string; provider: string; model: string; inputTokens: number; outputTokens: number }): Promise<void> {
    await this.store.insert(
      'ai_token_usage',
      [
        {
          project_id: u.projectId,
          day: u.day,
          call_id: u.callId,
          at: chTime(u.at),
          cluster_id: u.clusterId,
          provider: u.provider,
          llm_model: u.model,
          input_tokens: u.inputTokens,
          output_tokens: u.outputTokens,
        },
      ],
      `ai-usage:${u.callId}`,
    );
  }

  async budgetNoticed(projectId: string, day: string): Promise<boolean> {
    const rows = await this.store.query<{ ok: number }>(
      `SELECT 1 AS ok FROM ${this.t('ai_budget_notices')} WHERE project_id = {projectId:UUID} AND day = {day:Date} LIMIT 1`,
      { projectId, day },
    );
    return rows.length > 0;
  }

  async recordBudgetNotice(projectId: string, day: string, budget: number, spent: number): Promise<void> {
    await this.store.insert(
      'ai_budget_notices',
      [{ project_id: projectId, day, budget, spent, at: chTime(Date.now()) }],
      `ai-budget:${projectId}:${day}`,
    );
  }
}

/**
 * Which of the given executions have a report (their cluster's analysis is done): `hasRca` of the
 * run detail and the test history. Only failures can have one, so callers pass those alone.
 */
export async function executionsWithReport(store: Store, projectId: string, executionIds: readonly string[], testId?: string): Promise<Set<string>> {
  if (executionIds.length === 0) return new Set();
  const rows = await store.query<{ id: string }>(
    `SELECT id FROM ${store.table('executions')}
     WHERE project_id = {projectId:UUID}${testId ? ' AND test_id = {testId:UUID}' : ''} AND id IN {executionIds:Array(UUID)} AND cluster_id != ''
       AND cluster_id IN (SELECT cluster_id FROM ${store.table('rca_analyses')} FINAL WHERE project_id = {projectId:UUID} AND status = 'done')`,
    { projectId, executionIds, ...(testId ? { testId } : {}) },
  );
  return new Set(rows.map((r) => r.id));
}

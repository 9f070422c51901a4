// `rca` exporter: AI root-cause analysis of new error clusters. Best-effort and off the critical
// path: on `run.processed` it only queues, durably in `rca_analyses`, the run's failing clusters
// that have no analysis yet (one analysis per cluster: a known cluster's executions reuse it);
// a background loop then asks the model, a few clusters at a time and one per project, within
// each project's daily token budget. A stalled model delays nothing but its own analysis.
// Results and the budget running out leave as domain events through the outbox.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { DomainEvent } from '../../domain/events.js';
import { stableUuid, uuidv7 } from '../../../client/src/contract/ids.js';
import { bandKeys, estimateJaccard, lshParams } from '../../domain/minhash.js';
import {
  MAX_HISTORY,
  MAX_SIMILAR,
  budgetDecision,
  buildRcaPrompt,
  estimateInputTokens,
  nextUtcDay,
  parseRcaOutput,
  retryPrompt,
  utcDay,
  type RcaInput,
  type RcaPrompt,
  type RcaSimilar,
} from '../../domain/rca.js';
import type { AiSettings } from '../../config/ai.js';
import type { Host } from '../../pipeline/component.js';
import { BackgroundWorker } from '../../pipeline/helpers/background-worker.js';
import { defineExporter, type RunningEventsExporter } from '../../pipeline/helpers/exporter.js';
import { analysisId, type RcaRepo, type PendingAnalysis, type RcaAnalysis, type SimilarPast } from '../../store/rca.js';
import { LlmError, createProvider, type LlmProvider } from './providers.js';

const config = z
  .object({
    /** Model requests in flight at once (across projects; a project has at most one). */
    concurrency: z.number().int().min(1).max(16).default(2),
    /** Ceiling of the answer's tokens (lowered further when the budget has less left). */
    maxOutputTokens: z.number().int().min(256).max(16_000).default(1024),
    /** Executions of the test's history the model is shown. */
    historyLimit: z.number().int().min(0).max(MAX_HISTORY).default(MAX_HISTORY),
    /** Similar past clusters (with their analyses) the model is shown. */
    similarLimit: z.number().int().min(0).max(MAX_SIMILAR).default(MAX_SIMILAR),
    /** How often queued work is looked at when nothing new arrives (budget pauses, errors). */
    pollIntervalMs: z.number().int().min(100).default(60_000),
  })
  .strict();
type RcaConfig = z.output<typeof config>;

export const rcaExporterFactory = defineExporter({
  type: 'rca',
  description: 'AI root-cause analysis of new error clusters (SERVICE_AI_PROVIDER), in the background, within ai.dailyTokenBudget',
  configSchema: config,
  startEvents: (host, cfg, { id, logger }) => {
    const ai = host.settings.ai;
    if (!ai) {
      logger.debug('AI root-cause analysis off (SERVICE_AI_PROVIDER unset)');
      return null;
    }
    return new RcaAnalyzer(host, cfg, logger, ai, host.extensions.repositories('exporter', id).rca);
  },
});

export interface RcaStats {
  queued: number;
  calls: number;
  done: number;
  failed: number;
  tokens: number;
}

const runProcessed = z.object({
  runId: z.string(),
  counts: z.object({ failed: z.number(), flaky: z.number() }).partial().optional(),
});

class RcaAnalyzer implements RunningEventsExporter {
  readonly stats: RcaStats = { queued: 0, calls: 0, done: 0, failed: 0, tokens: 0 };
  private readonly repo: RcaRepo;
  private readonly provider: LlmProvider;
  private readonly threshold: number;
  private readonly worker: BackgroundWorker;
  /** Analyses being worked on, by id → project. */
  private readonly inflight = new Map<string, string>();
  /** Projects whose budget is spent: not looked at again before this time. */
  private readonly pausedUntil = new Map<string, number>();
  /** Analyses whose last try broke on something other than the model (storage): not retried before this time. */
  private readonly retryAt = new Map<string, number>();
  /** `${projectId}:${day}` whose ai.budget_spent went out (the durable record is in the store). */
  private readonly noticed = new Set<string>();

  constructor(
    private readonly host: Host,
    private readonly cfg: RcaConfig,
    private readonly logger: Logger,
    ai: AiSettings,
    repo: RcaRepo,
  ) {
    this.threshold = host.settings.clusterThreshold;
    this.repo = repo;
    this.provider = createProvider(ai);
    this.worker = new BackgroundWorker({ pass: () => this.pass(), logger });
    this.logger.info({ provider: ai.provider, model: ai.model, endpoint: ai.endpoint, timeoutMs: ai.timeoutMs }, 'AI root-cause analysis on');
    this.worker.start();
  }

  async shutdown(): Promise<void> {
    // A request cut short leaves its analysis queued: it runs again after a restart.
    await this.worker.stop();
  }

  async exportEvent(event: DomainEvent): Promise<void> {
    if (event.type !== 'run.processed') return;
    const data = runProcessed.safeParse(event.data);
    if (!data.success) return;
    const counts = data.data.counts;
    if (counts && (counts.failed ?? 0) + (counts.flaky ?? 0) === 0) return;
    const resolved = await this.host.projectConfig(event.projectId);
    if (!resolved.config.ai.rca) return;
    const clusters = await this.repo.failingClusters(event.projectId, data.data.runId);
    if (clusters.length === 0) return;
    const known = await this.repo.statuses(
      event.projectId,
      clusters.map((c) => c.clusterId),
    );
    const now = Date.now();
    // Only clusters never analysed reach the model; a redelivered event finds its rows and adds none.
    const fresh = clusters.filter((c) => {
      const s = known.get(c.clusterId);
      return s === undefined || s === 'skipped';
    });
    if (fresh.length === 0) return;
    await this.repo.write(fresh.map((c) => emptyAnalysis({ projectId: event.projectId, ...c, id: analysisId(event.projectId, c.clusterId), queuedAt: now })));
    this.stats.queued += fresh.length;
    this.logger.debug({ projectId: event.projectId, runId: data.data.runId, clusters: fresh.length }, 'root-cause analyses queued');
    this.worker.wake();
  }

  // ---------------------------------------------------------------------------------------------
  // The background loop

  /** Starts analyses up to the concurrency (one per project); resolves to the wait until something is due. */
  private async pass(): Promise<number> {
    let wait = this.cfg.pollIntervalMs;
    try {
      const now = Date.now();
      for (const [p, until] of this.pausedUntil) if (until <= now) this.pausedUntil.delete(p);
      for (const [id, at] of this.retryAt) if (at <= now) this.retryAt.delete(id);
      for (const until of [...this.pausedUntil.values(), ...this.retryAt.values()]) wait = Math.min(wait, until - now);
      if (this.inflight.size < this.cfg.concurrency) {
        // A project with a request in flight waits: its budget is checked one call at a time.
        const busy = new Set([...this.inflight.values(), ...this.pausedUntil.keys()]);
        const rows = await this.repo.pending(this.cfg.concurrency * 4, [...busy], [...this.inflight.keys(), ...this.retryAt.keys()]);
        for (const row of rows) {
          if (this.inflight.size >= this.cfg.concurrency || this.worker.stopping) break;
          if (busy.has(row.projectId)) continue;
          busy.add(row.projectId);
          this.inflight.set(row.id, row.projectId);
          const task = this.analyze(row)
            .catch((err: unknown) => {
              if (this.retryAt.size > 10_000) this.retryAt.clear();
              this.retryAt.set(row.id, Date.now() + this.cfg.pollIntervalMs);
              if (!this.worker.stopping) this.logger.warn({ err, projectId: row.projectId, clusterId: row.clusterId }, 'root-cause analysis interrupted; stays queued');
            })
            .finally(() => {
              this.inflight.delete(row.id);
              this.worker.wake();
            });
          this.worker.track(task);
        }
      }
    } catch (err) {
      if (!this.worker.stopping) this.logger.warn({ err }, 'cannot read queued root-cause analyses');
    }
    return Math.max(10, wait);
  }

  /** One cluster: context → prompt → budget → model (one retry on an invalid answer) → stored. */
  private async analyze(row: PendingAnalysis): Promise<void> {
    const repo = this.repo;
    const provider = this.provider;
    const { projectId } = row;
    const ai = (await this.host.projectConfig(projectId)).config.ai;
    if (!ai.rca) {
      await repo.write([{ ...emptyAnalysis(row), status: 'skipped', error: 'ai.rca is off for the project', completedAt: Date.now() }]);
      return;
    }
    const day = utcDay(Date.now());
    let used = await repo.tokensUsed(projectId, day);
    const first = budgetDecision({ budget: ai.dailyTokenBudget, used, estimatedInput: 0, maxOutput: this.cfg.maxOutputTokens });
    if (!first.allowed) return this.pause(projectId, day, ai.dailyTokenBudget, used, first.spent);

    const ctx = await this.context(row);
    const base: RcaAnalysis = { ...emptyAnalysis(row), provider: provider.name, llmModel: provider.model };
    if (!ctx) {
      await this.finish({ ...base, status: 'failed', error: 'the failing execution is gone (retention?)' });
      return;
    }
    const initial = buildRcaPrompt(ctx.input);
    let prompt: RcaPrompt = initial;
    const result = { ...base, similarPast: ctx.similarPast };
    let problem = '';
    for (let attempt = 1; attempt <= 2; attempt++) {
      const decision = budgetDecision({ budget: ai.dailyTokenBudget, used, estimatedInput: estimateInputTokens(prompt), maxOutput: this.cfg.maxOutputTokens });
      // Out of budget mid-way (before the retry): the analysis waits for tomorrow's budget.
      if (!decision.allowed) return this.pause(projectId, day, ai.dailyTokenBudget, used, decision.spent);
      let answer;
      const startedAt = Date.now();
      try {
        this.stats.calls++;
        answer = await provider.complete({ prompt, maxTokens: decision.maxTokens, signal: this.worker.signal });
      } catch (err) {
        if (this.worker.stopping) return;
        const e = err instanceof LlmError ? err : new LlmError('network', err instanceof Error ? err.message : String(err));
        this.logger.warn({ projectId, clusterId: row.clusterId, kind: e.kind, err: e.message, ms: Date.now() - startedAt }, 'root-cause analysis failed');
        await this.finish({ ...result, status: 'failed', error: e.message });
        return;
      }
      const tokens = answer.inputTokens + answer.outputTokens;
      used += tokens;
      result.calls++;
      result.inputTokens += answer.inputTokens;
      result.outputTokens += answer.outputTokens;
      result.llmModel = answer.model;
      this.stats.tokens += tokens;
      await repo.recordUsage({
        projectId,
        callId: uuidv7(),
        at: Date.now(),
        day,
        clusterId: row.clusterId,
        provider: provider.name,
        model: answer.model,
        inputTokens: answer.inputTokens,
        outputTokens: answer.outputTokens,
      });
      const parsed = parseRcaOutput(answer.output);
      if (parsed.ok) {
        const done: RcaAnalysis = { ...result, status: 'done', ...parsed.value };
        await this.finish(done);
        this.logger.info({ projectId, clusterId: row.clusterId, model: answer.model, tokens: done.inputTokens + done.outputTokens, ms: Date.now() - startedAt }, 'root-cause analysis stored');
        if (used >= ai.dailyTokenBudget) await this.pause(projectId, day, ai.dailyTokenBudget, used, true);
        return;
      }
      problem = parsed.error;
      this.logger.warn({ projectId, clusterId: row.clusterId, attempt, problem }, 'model answer invalid');
      prompt = retryPrompt(initial, problem);
    }
    await this.finish({ ...result, status: 'failed', error: `invalid_output: ${problem}` });
    if (used >= ai.dailyTokenBudget) await this.pause(projectId, day, ai.dailyTokenBudget, used, true);
  }

  /** Stores a finished analysis; a successful one is announced as `rca.created`. */
  private async finish(a: RcaAnalysis): Promise<void> {
    const completedAt = Date.now();
    await this.repo.write([{ ...a, completedAt }]);
    if (a.status !== 'done') {
      this.stats.failed++;
      return;
    }
    this.stats.done++;
    await this.host.outbox.append([
      {
        id: stableUuid('rca.created', a.projectId, a.clusterId),
        type: 'rca.created',
        projectId: a.projectId,
        occurredAt: completedAt,
        data: {
          rcaId: a.id,
          executionId: a.executionId,
          testIdentityId: a.testId,
          signatureId: a.signatureId,
          clusterId: a.clusterId,
          summary: a.summary,
          likelyCause: a.likelyCause,
          suggestedAction: a.suggestedAction,
          confidence: a.confidence,
          llmModel: a.llmModel,
          tokenCost: a.inputTokens + a.outputTokens,
        },
      },
    ]);
  }

  /**
   * The project's budget does not allow a call today: its analyses wait (re-checked every poll
   * interval, in case the budget is raised), and once per project and UTC day `ai.budget_spent`
   * goes out. A budget of 0 simply keeps RCA off, without notices.
   */
  private async pause(projectId: string, day: string, budget: number, used: number, spent: boolean): Promise<void> {
    const now = Date.now();
    this.pausedUntil.set(projectId, Math.min(nextUtcDay(now), now + this.cfg.pollIntervalMs));
    if (!spent) return;
    const key = `${projectId}:${day}`;
    if (this.noticed.has(key)) return;
    if (!(await this.repo.budgetNoticed(projectId, day))) {
      // Appended before it is recorded: a crash in between sends it twice under the same event id
      // (notify deduplicates by project and day) rather than never.
      await this.host.outbox.append([
        {
          id: stableUuid('ai.budget_spent', projectId, day),
          type: 'ai.budget_spent',
          projectId,
          occurredAt: now,
          data: { day, dailyTokenBudget: budget, tokensSpent: used },
        },
      ]);
      await this.repo.recordBudgetNotice(projectId, day, budget, used);
      this.logger.info({ projectId, day, budget, used }, 'AI token budget spent; root-cause analysis paused until the next UTC day');
    }
    if (this.noticed.size > 10_000) this.noticed.clear();
    this.noticed.add(key);
  }

  /** What the model is shown: the failure, its frames, the test's history, similar analysed clusters. */
  private async context(row: PendingAnalysis): Promise<{ input: RcaInput; similarPast: SimilarPast[] } | null> {
    const repo = this.repo;
    const [failure, signature] = await Promise.all([repo.failure(row.projectId, row.executionId), repo.signature(row.projectId, row.signatureId)]);
    if (!failure) return null;
    const history = await repo.history(row.projectId, failure.testId, failure.startedAt, this.cfg.historyLimit);
    const similar: (RcaSimilar & { past: SimilarPast })[] = [];
    if (signature && this.cfg.similarLimit > 0) {
      // Candidates by LSH band key (the clustering index), ranked by estimated similarity.
      const keys = bandKeys(signature.sketch, lshParams(this.threshold).bands);
      const best = new Map<string, { similarity: number; errorType: string; normalizedMessage: string }>();
      for (const c of await repo.candidates(row.projectId, keys, row.clusterId)) {
        const similarity = estimateJaccard(signature.sketch, c.sketch);
        if ((best.get(c.clusterId)?.similarity ?? -1) < similarity) best.set(c.clusterId, { similarity, errorType: c.errorType, normalizedMessage: c.normalizedMessage });
      }
      for (const a of await repo.finished(row.projectId, [...best.keys()])) {
        const b = best.get(a.clusterId)!;
        similar.push({
          clusterId: a.clusterId,
          errorType: b.errorType,
          normalizedMessage: b.normalizedMessage,
          similarity: b.similarity,
          analysis: { summary: a.summary, likelyCause: a.likelyCause, suggestedAction: a.suggestedAction },
          past: { rcaId: a.id, executionId: a.executionId, summary: a.summary, createdAt: new Date(a.completedAt ?? a.queuedAt).toISOString() },
        });
      }
      similar.sort((a, b) => b.similarity - a.similarity).splice(this.cfg.similarLimit);
    }
    return {
      input: {
        test: { filePath: failure.filePath, suite: failure.suite, title: failure.title },
        branch: failure.branch,
        commitSha: failure.commitSha,
        error: { type: failure.errorType || signature?.errorType || 'Error', message: failure.errorMessage, stack: failure.errorStack },
        frames: signature?.frames ?? [],
        history,
        similar,
      },
      similarPast: similar.map((s) => s.past),
    };
  }
}

function emptyAnalysis(p: PendingAnalysis): RcaAnalysis {
  return {
    projectId: p.projectId,
    clusterId: p.clusterId,
    id: p.id,
    signatureId: p.signatureId,
    executionId: p.executionId,
    testId: p.testId,
    status: 'pending',
    summary: '',
    likelyCause: '',
    suggestedAction: '',
    confidence: 0,
    similarPast: [],
    provider: '',
    llmModel: '',
    inputTokens: 0,
    outputTokens: 0,
    calls: 0,
    error: '',
    queuedAt: p.queuedAt,
    completedAt: null,
  };
}

// The retention sweep (docs/contract.md §10), run by the worker: periodically,
// for each project with a window, raw executions older than the window are deleted, and artifact
// objects older than the (clamped) artifact window. Rollups are never pruned; a project without a
// window keeps everything. Each sweep logs what it removed per project.
import type { Logger } from 'pino';
import type { ArtifactPruner } from '../artifacts/prune.js';
import type { ResolvedServiceConfig } from '../../client/src/contract/config/project-settings.js';
import { cutoffDay, planPrune } from '../../client/src/contract/retention.js';
import type { Store } from '../store/client.js';
import type { Project } from '../store/projects.js';
import { RetentionRepo } from '../store/retention.js';

/** The first sweep comes soon after start (not an hour later), once startup work has settled. */
const FIRST_SWEEP_MS = 30_000;

export interface ProjectSweep {
  projectId: string;
  slug: string;
  executionDays: number | null;
  artifactDays: number | null;
  /** Rows removed from `executions` (whole partitions and row deletes together). */
  executions: number;
  /** Rows removed from `test_recent`, the test page's copy. */
  testRecent: number;
  /** Objects removed from the artifact store; null when no pruner or no artifact window. */
  artifacts: number | null;
}

export interface SweepResult {
  at: number;
  /** Partitions of `executions` dropped whole. */
  droppedPartitions: string[];
  projects: ProjectSweep[];
}

export interface RetentionSweeperOptions {
  store: Store;
  logger: Logger;
  listProjects(): Promise<Project[]>;
  projectConfig(projectId: string): Promise<ResolvedServiceConfig>;
  /** Runs `f` with no lease in flight (PipelineRuntime.exclusive): partition drops must not race an insert. */
  exclusive<T>(f: () => Promise<T>): Promise<T>;
  /** Deletes artifact objects; absent when no bucket is configured. */
  artifacts?: ArtifactPruner | null;
  intervalMs: number;
}

export class RetentionSweeper {
  private readonly repo: RetentionRepo;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(private readonly opts: RetentionSweeperOptions) {
    this.repo = new RetentionRepo(opts.store);
  }

  start(): void {
    this.schedule(Math.min(FIRST_SWEEP_MS, this.opts.intervalMs));
  }

  /** Stops the schedule and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  /** One sweep, after any sweep already running (they never overlap). `now` is for tests. */
  sweep(now = Date.now()): Promise<SweepResult> {
    const next = (this.running ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.run(now));
    this.running = next;
    void next.finally(() => {
      if (this.running === next) this.running = null;
    }).catch(() => undefined);
    return next;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.sweep().then(
        () => this.schedule(this.opts.intervalMs),
        (err: unknown) => {
          this.opts.logger.error({ err }, 'retention sweep failed; retrying at the next interval');
          this.schedule(this.opts.intervalMs);
        },
      );
    }, ms);
    // A pending sweep never keeps the process alive.
    this.timer.unref();
  }

  private async run(now: number): Promise<SweepResult> {
    const { logger } = this.opts;
    const started = Date.now();
    const projects = await this.opts.listProjects();
    const sweeps: ProjectSweep[] = [];
    const cutoffs = new Map<string, string>();
    for (const p of projects) {
      const { retention } = await this.opts.projectConfig(p.id);
      sweeps.push({ projectId: p.id, slug: p.slug, ...retention, executions: 0, testRecent: 0, artifacts: null });
      if (retention.executionDays !== null) cutoffs.set(p.id, cutoffDay(now, retention.executionDays));
    }

    // Partitions are planned and dropped with the worker paused, so no insert lands in between.
    const { plan, droppedPartitions } = await this.opts.exclusive(async () => {
      const plan = planPrune(await this.repo.executionCells(cutoffs));
      for (const id of plan.dropPartitions) await this.repo.dropExecutionPartition(id);
      return { plan, droppedPartitions: plan.dropPartitions };
    });

    for (const s of sweeps) {
      const cutoff = cutoffs.get(s.projectId);
      if (cutoff !== undefined) {
        // Row deletes are conditional on the project and day, so they can run beside the worker.
        if (plan.deleteRows.has(s.projectId)) await this.repo.deleteExecutions(s.projectId, cutoff);
        s.executions = (plan.droppedRows.get(s.projectId) ?? 0) + (plan.deleteRows.get(s.projectId) ?? 0);
        s.testRecent = await this.repo.pruneTestRecent(s.projectId, cutoff);
      }
      if (this.opts.artifacts && s.artifactDays !== null) {
        s.artifacts = await this.opts.artifacts.pruneBefore(s.projectId, Date.parse(`${cutoffDay(now, s.artifactDays)}T00:00:00Z`));
      }
      if (s.executions > 0 || s.testRecent > 0 || (s.artifacts ?? 0) > 0) {
        logger.info(
          { project: s.slug, executionDays: s.executionDays, artifactDays: s.artifactDays, executions: s.executions, testRecent: s.testRecent, artifacts: s.artifacts },
          'retention: pruned',
        );
      }
    }
    const windowed = sweeps.filter((s) => s.executionDays !== null || s.artifactDays !== null).length;
    logger.info(
      {
        projects: projects.length,
        withWindow: windowed,
        droppedPartitions,
        executions: sweeps.reduce((n, s) => n + s.executions, 0),
        testRecent: sweeps.reduce((n, s) => n + s.testRecent, 0),
        artifacts: sweeps.reduce((n, s) => n + (s.artifacts ?? 0), 0),
        ms: Date.now() - started,
      },
      'retention sweep done',
    );
    return { at: now, droppedPartitions, projects: sweeps };
  }
}

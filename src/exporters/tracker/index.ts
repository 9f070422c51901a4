// `tracker` exporter: one GitHub issue per persistently flaky test (docs/contract.md §10). exportEvent folds
// flaky.detected / score.updated into a small durable per-test state and returns; a background
// loop decides (domain/tracker.ts) and talks to GitHub, never on the events dispatcher's path.
// Decisions run when a test's events arrive, on the events' own clock (so a backfilled history is
// judged in its own time), and in a periodic sweep on the wall clock for tests that went quiet:
// nothing fires an event on the day a flake has lasted long enough, or a fixed test stayed fixed.
// Inert without SERVICE_TRACKER_TOKEN; per project it also needs `tracker.enabled`.
// The per-test state is in the storage extension (Host.extensions, src/extensions/); before it,
// the tracker opened an LMDB environment of its own under <data dir>/tracker, moved over once.
import path from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { TrackerSettings } from '../../config/integrations.js';
import type { DomainEvent } from '../../domain/events.js';
import {
  ISSUE_LABEL,
  TRACKER_EVENT_TYPES,
  closeComment,
  issueBody,
  issueMarker,
  issueTitle,
  observe,
  planIssue,
  reopenComment,
  type TrackedTest,
  type TrackerAction,
  type TrackerPolicy,
} from '../../domain/tracker.js';
import type { Host, HostExtensions } from '../../pipeline/component.js';
import type { StorageClient } from '../../pipeline/storage.js';
import { migrateLegacyLmdb } from '../../extensions/migrate.js';
import { BackgroundWorker } from '../../pipeline/helpers/background-worker.js';
import { defineExporter, type RunningEventsExporter } from '../../pipeline/helpers/exporter.js';
import type { Repositories } from '../../store/repositories.js';
import { GitHubIssues } from './github.js';

const config = z
  .object({
    /** How often quiet tests are checked on the wall clock. */
    sweepIntervalMs: z.number().int().min(10).default(3_600_000),
    /** A test whose last event arrived less than this long ago is left to the event-driven check. */
    quietMs: z.number().int().min(0).default(600_000),
  })
  .strict();
type TrackerConfig = z.output<typeof config>;

export const trackerExporterFactory = defineExporter({
  type: 'tracker',
  description: 'a GitHub issue per persistently flaky test: opened after tracker.afterDays, updated, closed after tracker.recoveryDays stable',
  configSchema: config,
  startEvents: async (host, cfg, { id, logger }) => {
    const { token } = host.settings.tracker;
    if (!token) {
      logger.debug('tracker off: SERVICE_TRACKER_TOKEN is not set');
      return null;
    }
    return new Tracker(host, cfg, logger, token, await openTrackerState(host.extensions, id, host.settings.dataDir, logger), host.extensions.repositories('exporter', id));
  },
});

/** The tracker's clients: per-test state by `<projectId>:<testId>`, and its own bookkeeping. */
export interface TrackerState {
  tests: StorageClient<TrackedTest>;
  meta: StorageClient<unknown>;
}

/** The directory the tracker's own LMDB environment had, before the storage extension. */
export function legacyTrackerDir(dataDir: string): string {
  return path.join(dataDir, 'tracker');
}

/** Exporter `id`'s state; first moves over what <data dir>/tracker held (the issues it opened), once. */
export async function openTrackerState(extensions: HostExtensions, id: string, dataDir: string, logger: Logger): Promise<TrackerState> {
  const state: TrackerState = { tests: extensions.storage<TrackedTest>('exporter', id), meta: extensions.storage<unknown>('exporter', id, 'meta') };
  await migrateLegacyLmdb({ dir: legacyTrackerDir(dataDir), logger, marker: state.meta, databases: [{ name: 'tests', into: state.tests }] });
  return state;
}

/** After a failed call, a project's tests wait this long (doubling, capped at the sweep interval). */
const FIRST_BACKOFF_MS = 30_000;
const REPOSITORY_TTL_MS = 600_000;

class Tracker implements RunningEventsExporter {
  private readonly settings: TrackerSettings;
  private readonly tests: StorageClient<TrackedTest>;
  private readonly github: GitHubIssues;
  private readonly worker: BackgroundWorker;
  private readonly dirty = new Set<string>();
  private readonly backoff = new Map<string, { until: number; ms: number }>();
  private readonly repositories = new Map<string, { at: number; value: string | null }>();
  private readonly warned = new Set<string>();
  private nextSweep: number;

  constructor(
    private readonly host: Host,
    private readonly cfg: TrackerConfig,
    private readonly logger: Logger,
    token: string,
    state: TrackerState,
    private readonly repos: Pick<Repositories, 'identities' | 'projects' | 'runs'>,
  ) {
    this.settings = host.settings.tracker;
    this.tests = state.tests;
    this.worker = new BackgroundWorker({ pass: () => this.pass(), logger });
    this.github = new GitHubIssues(this.settings.url, token, this.worker.signal);
    // An issue being opened when the process stopped is settled first (found by its marker, or created).
    for (const { key, value } of this.tests.range()) if (value.opening) this.dirty.add(key);
    this.logger.info({ url: this.settings.url, repository: this.settings.repository ?? '(from runs)', tracked: this.tests.count() }, 'tracker on');
    this.nextSweep = Date.now() + this.cfg.sweepIntervalMs;
    this.worker.start();
  }

  async shutdown(): Promise<void> {
    await this.worker.stop();
  }

  async exportEvent(event: DomainEvent): Promise<void> {
    const db = this.tests;
    if (!TRACKER_EVENT_TYPES.has(event.type)) return;
    const testId = event.data.testIdentityId;
    if (typeof testId !== 'string') return;
    const key = `${event.projectId}:${testId}`;
    const prev = db.get(key) ?? null;
    const next = observe(prev, event, Date.now());
    if (!next || next === prev) return;
    await db.set(key, next);
    this.dirty.add(key);
    this.worker.wake();
  }

  /** The tests whose events arrived, plus (each sweep interval) quiet ones; resolves to the wait until the next sweep. */
  private async pass(): Promise<number> {
    const work: { key: string; clock: 'events' | 'wall' }[] = [...this.dirty].map((key) => ({ key, clock: 'events' as const }));
    this.dirty.clear();
    if (Date.now() >= this.nextSweep) {
      this.nextSweep = Date.now() + this.cfg.sweepIntervalMs;
      const quietBefore = Date.now() - this.cfg.quietMs;
      for (const { key, value } of this.tests.range()) {
        if (value.receivedAt <= quietBefore && (value.issue?.open || value.candidate)) work.push({ key, clock: 'wall' });
      }
    }
    for (const w of work) {
      if (this.worker.stopping) break;
      await this.reconcile(w.key, w.clock);
    }
    return this.nextSweep - Date.now();
  }

  private async reconcile(key: string, clock: 'events' | 'wall'): Promise<void> {
    const t = this.tests.get(key);
    if (!t) return;
    const backoff = this.backoff.get(t.projectId);
    if (backoff && backoff.until > Date.now()) return;
    try {
      const policy = await this.policy(t.projectId);
      if (!policy) return;
      const now = clock === 'wall' ? Math.max(Date.now(), t.lastEventAt) : t.lastEventAt;
      const action: TrackerAction | null = t.opening && !t.issue ? 'open' : planIssue(t, policy, now);
      if (!action) return;
      await this.apply(key, t, action, policy);
      this.backoff.delete(t.projectId);
    } catch (err) {
      if (this.worker.stopping) return;
      const ms = Math.min(this.cfg.sweepIntervalMs, (backoff?.ms ?? FIRST_BACKOFF_MS / 2) * 2);
      this.backoff.set(t.projectId, { until: Date.now() + ms, ms });
      // The next event of the test, or the next sweep, after the pause tries again.
      this.logger.warn({ err: err instanceof Error ? err.message : String(err), projectId: t.projectId, testId: t.testId, retryInMs: ms }, 'tracker sync failed; will retry');
    }
  }

  /** The project's tracker policy, or null when the tracker is off for it. */
  private async policy(projectId: string): Promise<TrackerPolicy | null> {
    const { tracker } = (await this.host.projectConfig(projectId)).config;
    return tracker.enabled ? { afterDays: tracker.afterDays, recoveryDays: tracker.recoveryDays } : null;
  }

  private async apply(key: string, tracked: TrackedTest, action: TrackerAction, policy: TrackerPolicy): Promise<void> {
    const gh = this.github;
    const t = await this.named(key, tracked);
    const ctx = { projectSlug: await this.slug(t.projectId), testUrl: this.testUrl(t), policy };
    const where = { projectId: t.projectId, testId: t.testId };
    if (action === 'open') {
      const repository = t.opening?.repository ?? (await this.repository(t.projectId));
      if (!repository) {
        if (!this.warned.has(t.projectId)) this.logger.warn(where, 'tracker: no repository (set SERVICE_TRACKER_REPOSITORY or report `repository` with runs); no issue opened');
        this.warned.add(t.projectId);
        return;
      }
      // Recorded before the POST: after a crash between the two, the issue is looked up, not filed twice.
      let existing = null;
      if (t.opening) existing = await gh.findByMarker(repository, ISSUE_LABEL, issueMarker(t.testId));
      else await this.patch(key, { opening: { repository, at: Date.now() } });
      const issue = existing ?? (await gh.create(repository, { title: issueTitle(t), body: issueBody(t, ctx), labels: [ISSUE_LABEL] }));
      await this.patch(key, { opening: null, issue: { repository, number: issue.number, url: issue.html_url ?? null, open: true, score: t.score } });
      this.logger.info({ ...where, repository, issue: issue.number }, existing ? 'tracker issue found again' : 'tracker issue opened');
      return;
    }
    const issue = t.issue!;
    if (action === 'reopen') {
      await gh.update(issue.repository, issue.number, { state: 'open', state_reason: 'reopened', title: issueTitle(t), body: issueBody(t, ctx) });
      await gh.comment(issue.repository, issue.number, reopenComment(t));
      await this.patch(key, { issue: { ...issue, open: true, score: t.score } });
      this.logger.info({ ...where, issue: issue.number }, 'tracker issue reopened');
    } else if (action === 'update') {
      await gh.update(issue.repository, issue.number, { title: issueTitle(t), body: issueBody(t, ctx) });
      await this.patch(key, { issue: { ...issue, score: t.score } });
      this.logger.debug({ ...where, issue: issue.number, score: t.score }, 'tracker issue updated');
    } else {
      await gh.update(issue.repository, issue.number, { state: 'closed', state_reason: 'completed', body: issueBody(t, ctx) });
      await gh.comment(issue.repository, issue.number, closeComment(t, policy));
      await this.patch(key, { issue: { ...issue, open: false, score: t.score } });
      this.logger.info({ ...where, issue: issue.number }, 'tracker issue closed');
    }
  }

  /** The test with its names: score.updated carries only the id, and may be all the tracker saw yet. */
  private async named(key: string, t: TrackedTest): Promise<TrackedTest> {
    if (t.title) return t;
    const row = await this.repos.identities.get(t.projectId, t.testId);
    if (!row) return t;
    const names = { filePath: row.filePath, suite: row.suite, title: row.title };
    await this.tests.transaction(() => {
      const cur = this.tests.get(key);
      if (cur && !cur.title) void this.tests.set(key, { ...cur, ...names });
    });
    return { ...t, ...names };
  }

  /** Writes tracker-owned fields over the latest state (events may have moved the rest meanwhile). */
  private async patch(key: string, fields: Partial<Pick<TrackedTest, 'issue' | 'opening'>>): Promise<void> {
    const db = this.tests;
    await db.transaction(() => {
      const cur = db.get(key);
      if (cur) void db.set(key, { ...cur, ...fields });
    });
  }

  private testUrl(t: TrackedTest): string | null {
    const base = this.host.settings.notifications.dashboardUrl;
    return base ? `${base}/projects/${encodeURIComponent(this.slugs.get(t.projectId) ?? t.projectId)}/tests/${t.testId}` : null;
  }

  private readonly slugs = new Map<string, string>();

  private async slug(projectId: string): Promise<string> {
    const known = this.slugs.get(projectId);
    if (known) return known;
    for (const p of await this.repos.projects.list()) this.slugs.set(p.id, p.slug);
    return this.slugs.get(projectId) ?? projectId;
  }

  /** SERVICE_TRACKER_REPOSITORY, else the repository the project's newest runs report. */
  private async repository(projectId: string): Promise<string | null> {
    if (this.settings.repository) return this.settings.repository;
    const hit = this.repositories.get(projectId);
    if (hit && Date.now() - hit.at < REPOSITORY_TTL_MS) return hit.value;
    const value = await this.repos.runs.latestRepository(projectId);
    this.repositories.set(projectId, { at: Date.now(), value });
    return value;
  }
}

// What the last `flakehouse report` (or runner reporter) sent, per repository, so that `summary`,
// `gate` and `comment` run outside CI look up the same commit instead of asking for one. Kept in
// SERVICE_BUFFER_DIR (beside the buffered runs, out of the user's work tree) as one small JSON
// file keyed by repository root; a lost race between parallel shards only loses an equal record.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PLACEHOLDER_COMMIT, type BatchResource } from '../contract/batch.js';

export const LAST_REPORT_FILE = 'last-report.json';
/** Repositories remembered per buffer dir; the least recently reported are forgotten first. */
const MAX_REPOSITORIES = 50;

export interface LastReport {
  commitSha: string;
  branch: string;
  prNumber?: number;
  baseBranch?: string;
  /** The server and project it went to: another server's commit means nothing to this one. */
  endpoint: string;
  project: string | null;
  reportedAt: string;
}

interface StateFile {
  version: 1;
  /** Repository root (the directory holding `.git`, else the working directory) → last report. */
  repositories: Record<string, LastReport>;
}

/** The nearest directory at or above `dir` holding `.git`; `dir` itself when there is none. */
export function repositoryRootOf(dir: string): string {
  const start = path.resolve(dir);
  for (let d = start; ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, '.git'))) return d;
    if (path.dirname(d) === d) return start;
  }
}

export function lastReportFromResource(resource: BatchResource, target: { endpoint: string; project: string | undefined }, now: number): LastReport {
  const r: LastReport = { commitSha: resource.commitSha, branch: resource.branch, endpoint: target.endpoint, project: target.project ?? null, reportedAt: new Date(now).toISOString() };
  if (resource.prNumber !== undefined) r.prNumber = resource.prNumber;
  if (resource.baseBranch !== undefined) r.baseBranch = resource.baseBranch;
  return r;
}

/** Records `report` for the repository of `cwd`. Throws on I/O errors; the caller warns. */
export function writeLastReport(bufferDir: string, cwd: string, report: LastReport): void {
  const state = readState(bufferDir);
  const repositories = { ...state.repositories, [repositoryRootOf(cwd)]: report };
  const kept = Object.entries(repositories)
    .sort(([, a], [, b]) => b.reportedAt.localeCompare(a.reportedAt))
    .slice(0, MAX_REPOSITORIES);
  fs.mkdirSync(bufferDir, { recursive: true, mode: 0o700 });
  const file = path.join(bufferDir, LAST_REPORT_FILE);
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(3).toString('hex')}`;
  fs.writeFileSync(tmp, JSON.stringify({ version: 1, repositories: Object.fromEntries(kept) } satisfies StateFile), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** The last report for the repository of `cwd`, or undefined (none, or an unreadable file). */
export function readLastReport(bufferDir: string, cwd: string): LastReport | undefined {
  return readState(bufferDir).repositories[repositoryRootOf(cwd)];
}

function readState(bufferDir: string): StateFile {
  try {
    const parsed = JSON.parse(fs.readFileSync(path.join(bufferDir, LAST_REPORT_FILE), 'utf8')) as Partial<StateFile>;
    if (parsed.version === 1 && typeof parsed.repositories === 'object' && parsed.repositories !== null) return { version: 1, repositories: parsed.repositories };
  } catch {
    // Missing or damaged: the commands fall back to asking for a commit.
  }
  return { version: 1, repositories: {} };
}

export type CommitFromLastReport = { ok: true; report: LastReport } | { ok: false; reason: string };

/**
 * Whether `summary`/`gate` may use the recorded report: only one sent to the same server and
 * project, and never the placeholder commit, which every commit-less run shares.
 */
export function commitFromLastReport(report: LastReport | undefined, target: { endpoint: string; project: string | undefined }): CommitFromLastReport {
  if (report === undefined) return { ok: false, reason: 'no `flakehouse report` has run in this repository on this machine' };
  if (report.endpoint !== target.endpoint || report.project !== (target.project ?? null)) {
    return { ok: false, reason: `the last \`flakehouse report\` here (${report.reportedAt}) went to ${report.endpoint}${report.project ? ` (project ${report.project})` : ''}, not to this server` };
  }
  if (report.commitSha === PLACEHOLDER_COMMIT) {
    return {
      ok: false,
      reason: `the last \`flakehouse report\` here (${report.reportedAt}) had no commit and filed its run under the placeholder ${PLACEHOLDER_COMMIT}, which every run without a commit shares; set SERVICE_COMMIT_SHA when reporting`,
    };
  }
  return { ok: true, report };
}

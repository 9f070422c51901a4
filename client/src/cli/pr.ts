// `flakehouse summary | comment | gate | badge`: bring the results back into the pull request.
//
// CI must not break because Flakehouse (or GitHub) is unreachable: a failed call is a warning and
// exit 0, unless --strict. Only the gate's `block` verdict exits 1; bad flags exit 2.
import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { BADGE_VARIANTS, type BadgeVariant } from '../contract/badge.js';
import { STRICTNESS, type Strictness } from '../contract/gate.js';
import { commentMarkdown, gateText, isStickyComment } from '../contract/pr-markdown.js';
import { BASE_BRANCH_RE, COMMIT_SHA_RE, badgesResponseSchema, gateResponseSchema, summaryResponseSchema, type GateBody, type SummaryBody } from '../contract/pr-schemas.js';
import type { CiDetection } from '../reporter/ci-detect.js';
import { commitFromLastReport, readLastReport, type LastReport } from '../reporter/last-report.js';
import { detectRunCi } from '../reporter/send.js';
import { loadReporterSettings, type ReporterSettings } from '../reporter/settings.js';
import type { CliIo } from './io.js';

export const PR_COMMANDS = ['summary', 'comment', 'gate', 'badge'] as const;
export type PrCommand = (typeof PR_COMMANDS)[number];

/** Long enough for a busy server, short enough that a black-holed one does not hold CI for its whole timeout. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Pages of 100 comments read while looking for the sticky one. */
const MAX_COMMENT_PAGES = 50;
const DEFAULT_GITHUB_API = 'https://api.github.com';
/** In CI the report was accepted moments ago and may still be in the worker: wait this long for it. */
const CI_WAIT_S = 30;
/** A commit taken from a `flakehouse report` this recent may still be in the worker: wait as in CI. */
const RECENT_REPORT_MS = 10 * 60_000;
const MAX_WAIT_S = 600;

class PrUsageError extends Error {}

/** A call that failed for a reason outside this process: the server or GitHub. */
class RemoteError extends Error {}

interface Context {
  env: NodeJS.ProcessEnv;
  cwd: string;
  settings: ReporterSettings;
  ci: CiDetection;
  /** Set by commitOf when the commit came from the last `flakehouse report` (outside CI). */
  lastReport?: LastReport;
  out: (text: string) => void;
  warn: (text: string) => void;
  /** Progress and errors, to stderr as they are. */
  err: (text: string) => void;
}

export async function prCommand(command: PrCommand, args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  try {
    const ctx: Context = {
      env,
      cwd,
      settings: loadReporterSettings({ env, cwd }),
      ci: detectRunCi(env),
      out: (text) => io.stdout.write(text),
      err: (text) => io.stderr.write(text),
      warn: (text) => io.stderr.write(env.GITHUB_ACTIONS === 'true' ? `::warning title=Flakehouse::${text.replace(/%/g, '%25').replace(/\r?\n/g, '%0A')}\n` : `flakehouse: warning: ${text}\n`),
    };
    switch (command) {
      case 'summary':
        return await summary(ctx, args);
      case 'comment':
        return await comment(ctx, args);
      case 'gate':
        return await gate(ctx, args);
      case 'badge':
        return await badge(ctx, args);
    }
  } catch (err) {
    if (err instanceof PrUsageError) {
      io.stderr.write(`flakehouse ${command}: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

function flags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    // node:util parseArgs throws TypeErrors with ERR_PARSE_ARGS_* codes for unknown or malformed flags.
    throw new PrUsageError(`${(err as Error).message} (see flakehouse help)`);
  }
}

// ---------------------------------------------------------------------------------------------
// Flakehouse API

async function api<T>(ctx: Context, urlPath: string, schema: z.ZodType<T>): Promise<{ status: number; body: T | null }> {
  const { endpoint, token } = ctx.settings;
  if (!token) throw new RemoteError('SERVICE_TOKEN is not set: the summary, gate and badge need a project token (scope ingest or read)');
  let res: Response;
  try {
    res = await fetch(`${endpoint}${urlPath}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (err) {
    throw new RemoteError(`cannot reach Flakehouse at ${endpoint}: ${causeOf(err)}`);
  }
  const text = await res.text();
  const json = jsonOrUndefined(text);
  if (res.status === 404) return { status: 404, body: null };
  if (!res.ok) {
    const e = z.object({ error: z.string(), message: z.string().optional() }).safeParse(json);
    // Something else at that address (a proxy, an object store) may echo the Authorization header back.
    const detail = e.success ? `${e.data.error}${e.data.message ? `: ${e.data.message}` : ''}` : text.split(token).join('[token]').slice(0, 200);
    throw new RemoteError(`Flakehouse answered ${res.status} to GET ${urlPath.split('?')[0]}: ${detail}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new RemoteError(`Flakehouse sent an unexpected answer to GET ${urlPath.split('?')[0]} (is the server older than this CLI?)`);
  return { status: res.status, body: parsed.data };
}

function causeOf(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return cause ?? (err instanceof Error ? err.message : String(err));
}

function commitOf(ctx: Context, flag: string | undefined): string {
  const sha = flag ?? ctx.ci.commitSha ?? ctx.settings.commitSha ?? commitOfLastReport(ctx);
  if (!COMMIT_SHA_RE.test(sha)) throw new PrUsageError(`--commit: expected 7 to 40 hex characters, got "${sha}"`);
  return sha.toLowerCase();
}

/**
 * Outside CI, the commit the last `flakehouse report` in this repository sent (client/src/reporter/last-report.ts),
 * so `report` then `summary` on a laptop needs no flags; without one, says exactly what to pass.
 */
function commitOfLastReport(ctx: Context): string {
  const how = 'pass --commit SHA (e.g. --commit "$(git rev-parse HEAD)") or set SERVICE_COMMIT_SHA';
  if (ctx.ci.provider !== 'local') throw new PrUsageError(`no commit: ${ctx.ci.provider} did not provide one; ${how}`);
  const found = commitFromLastReport(readLastReport(ctx.settings.bufferDir, ctx.cwd), ctx.settings);
  if (!found.ok) throw new PrUsageError(`no commit: no CI system was detected, SERVICE_COMMIT_SHA is unset and ${found.reason} (looked in ${ctx.settings.bufferDir}, SERVICE_BUFFER_DIR); ${how}`);
  const r = found.report;
  ctx.lastReport = r;
  ctx.err(`flakehouse: commit ${r.commitSha.slice(0, 12)} on ${r.branch}, from the last \`flakehouse report\` here (${r.reportedAt}); pass --commit to look up another\n`);
  return r.commitSha;
}

function baseOf(ctx: Context, flag: string | undefined): string | undefined {
  const b = flag ?? ctx.ci.baseBranch ?? ctx.lastReport?.baseBranch;
  if (b !== undefined && !BASE_BRANCH_RE.test(b)) throw new PrUsageError(`--base: "${b}" is not a branch name (letters, digits, _ . / -)`);
  return b;
}

async function fetchSummary(ctx: Context, sha: string): Promise<SummaryBody | null> {
  const res = await api(ctx, `/v1/runs/summary?commitSha=${sha}`, summaryResponseSchema);
  return res.body?.summary ?? null;
}

/** --wait SECONDS; default 30 in CI (CI or GITHUB_ACTIONS set) or after a recent local `report`, where it ran just before; else 0. */
function waitOf(ctx: Context, flag: string | undefined): number {
  if (flag === undefined) {
    const justReported = ctx.lastReport !== undefined && Date.now() - Date.parse(ctx.lastReport.reportedAt) < RECENT_REPORT_MS;
    return ctx.env.CI || ctx.env.GITHUB_ACTIONS === 'true' || justReported ? CI_WAIT_S : 0;
  }
  if (!/^\d+$/.test(flag) || Number(flag) > MAX_WAIT_S) throw new PrUsageError(`--wait: expected whole seconds from 0 to ${MAX_WAIT_S}, got "${flag}"`);
  return Number(flag);
}

/**
 * Asks until the commit's results are there or `waitS` has passed: a 202 from `report` means the
 * batch is durable, not yet processed.
 */
async function untilFound<T>(ctx: Context, sha: string, waitS: number, once: () => Promise<T | null>, complete: (found: T) => boolean = () => true): Promise<T | null> {
  const deadline = Date.now() + waitS * 1000;
  let told = false;
  // A run is usually processed within a second of its 202: ask again soon, then once a second.
  let pauseMs = 200;
  for (;;) {
    const found = await once();
    // Found but still arriving (a large run sent in parts): a verdict now would judge half a run.
    const whole = found !== null && complete(found);
    if (whole || Date.now() >= deadline) {
      if (found !== null && !whole) ctx.err(`flakehouse: warning: a run of commit ${sha.slice(0, 12)} is still arriving; judging the part received so far\n`);
      return found;
    }
    if (!told) {
      ctx.err(
        found === null
          ? `flakehouse: no results for commit ${sha.slice(0, 12)} yet; waiting up to ${waitS} s for them to be processed\n`
          : `flakehouse: a run of commit ${sha.slice(0, 12)} is still arriving; waiting up to ${waitS} s for the rest\n`,
      );
      told = true;
    }
    await new Promise((r) => setTimeout(r, Math.min(pauseMs, Math.max(0, deadline - Date.now()))));
    pauseMs = Math.min(pauseMs * 2, 1000);
  }
}

async function fetchGate(ctx: Context, sha: string, baseBranch: string | undefined, strictness: Strictness): Promise<{ gate: GateBody; markdown: string } | null> {
  const q = new URLSearchParams({ commitSha: sha, strictness });
  if (baseBranch) q.set('baseBranch', baseBranch);
  const res = await api(ctx, `/v1/runs/gate?${q.toString()}`, gateResponseSchema);
  return res.body?.found ? { gate: res.body.gate, markdown: res.body.markdown } : null;
}

/** The comment body: the summary, classified by the gate when the gate answers. */
async function commentBody(ctx: Context, sha: string, baseBranch: string | undefined, waitS: number): Promise<{ markdown: string; summary: SummaryBody; gate: GateBody | null } | null> {
  const summary = await untilFound(ctx, sha, waitS, () => fetchSummary(ctx, sha), (found) => found.complete);
  if (!summary) return null;
  let gate: GateBody | null = null;
  try {
    gate = (await fetchGate(ctx, sha, baseBranch, 'new'))?.gate ?? null;
  } catch (err) {
    if (!(err instanceof RemoteError)) throw err;
    ctx.warn(`the gate did not answer (${err.message}); classifying by score only`);
  }
  return { markdown: commentMarkdown({ summary, gate, dashboardProjectUrl: await dashboardProjectUrl(ctx) }), summary, gate };
}

/** `SERVICE_DASHBOARD_URL/projects/<slug>`, the shape of the dashboard's deep links (src/domain/notifications.ts). */
async function dashboardProjectUrl(ctx: Context, knownSlug?: string): Promise<string | undefined> {
  const dash = ctx.env.SERVICE_DASHBOARD_URL?.trim().replace(/\/+$/, '');
  if (!dash) return undefined;
  let slug = knownSlug ?? ctx.settings.project;
  // The token's project, when SERVICE_PROJECT / service.yml do not name it; links are not worth failing for.
  if (slug === undefined) slug = await api(ctx, '/v1/badges', badgesResponseSchema).then((r) => r.body?.project, () => undefined);
  return slug ? `${dash}/projects/${encodeURIComponent(slug)}` : dash;
}

/** A remote failure: a warning and exit 0 (CI goes on), or exit 1 with --strict. */
function remoteFailure(ctx: Context, strict: boolean | undefined, message: string): number {
  if (strict) {
    ctx.err(`flakehouse: ${message}\n`);
    return 1;
  }
  ctx.warn(`${message} (not failing the build; pass --strict to fail it)`);
  return 0;
}

function notIngested(ctx: Context, strict: boolean | undefined, sha: string): number {
  return remoteFailure(ctx, strict, `no test results for commit ${sha.slice(0, 12)} have reached Flakehouse (did \`flakehouse report\` run for it?)`);
}

// ---------------------------------------------------------------------------------------------
// Commands

async function summary(ctx: Context, args: string[]): Promise<number> {
  const { values: v } = flags(() =>
    parseArgs({ args, strict: true, options: { commit: { type: 'string' }, base: { type: 'string' }, json: { type: 'boolean' }, strict: { type: 'boolean' }, wait: { type: 'string' } } }),
  );
  const sha = commitOf(ctx, v.commit);
  const baseBranch = baseOf(ctx, v.base);
  try {
    const body = await commentBody(ctx, sha, baseBranch, waitOf(ctx, v.wait));
    if (!body) return notIngested(ctx, v.strict, sha);
    ctx.out(v.json ? `${JSON.stringify({ summary: body.summary, gate: body.gate, markdown: body.markdown }, null, 2)}\n` : body.markdown);
    return 0;
  } catch (err) {
    if (err instanceof RemoteError) return remoteFailure(ctx, v.strict, err.message);
    throw err;
  }
}

async function gate(ctx: Context, args: string[]): Promise<number> {
  const { values: v } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: { commit: { type: 'string' }, base: { type: 'string' }, strictness: { type: 'string' }, json: { type: 'boolean' }, strict: { type: 'boolean' }, wait: { type: 'string' } },
    }),
  );
  const strictness = v.strictness ?? 'new';
  if (!STRICTNESS.includes(strictness as Strictness)) throw new PrUsageError(`--strictness: expected one of ${STRICTNESS.join(', ')}, got "${strictness}"`);
  const sha = commitOf(ctx, v.commit);
  const baseBranch = baseOf(ctx, v.base);
  const waitS = waitOf(ctx, v.wait);
  let verdict: { gate: GateBody; markdown: string } | null;
  try {
    verdict = await untilFound(ctx, sha, waitS, () => fetchGate(ctx, sha, baseBranch, strictness as Strictness), (found) => found.gate.complete);
  } catch (err) {
    if (err instanceof RemoteError) return remoteFailure(ctx, v.strict, `the gate could not be checked: ${err.message}`);
    throw err;
  }
  if (!verdict) return notIngested(ctx, v.strict, sha);
  ctx.out(v.json ? `${JSON.stringify(verdict.gate, null, 2)}\n` : gateText(verdict.gate));
  // The job's summary page shows the verdict without opening the log.
  const stepSummary = ctx.env.GITHUB_STEP_SUMMARY;
  if (stepSummary) {
    try {
      appendFileSync(stepSummary, `${verdict.markdown}\n`);
    } catch (err) {
      ctx.warn(`cannot write GITHUB_STEP_SUMMARY: ${(err as Error).message}`);
    }
  }
  return verdict.gate.verdict === 'block' ? 1 : 0;
}

async function comment(ctx: Context, args: string[]): Promise<number> {
  const { values: v } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: { commit: { type: 'string' }, base: { type: 'string' }, pr: { type: 'string' }, repo: { type: 'string' }, strict: { type: 'boolean' }, wait: { type: 'string' } },
    }),
  );
  const token = ctx.env.GITHUB_TOKEN?.trim();
  if (!token) {
    ctx.out('flakehouse comment: GITHUB_TOKEN is not set, so no comment was posted. In GitHub Actions pass `GITHUB_TOKEN: ${{ github.token }}` with `permissions: pull-requests: write`; `flakehouse summary` prints the same text.\n');
    return 0;
  }
  const prRaw = v.pr ?? (ctx.ci.prNumber !== undefined ? String(ctx.ci.prNumber) : undefined);
  const repository = v.repo ?? ctx.ci.repository ?? ctx.env.GITHUB_REPOSITORY?.trim();
  if (prRaw === undefined || !repository) {
    ctx.out(`flakehouse comment: this is not a pull request build (${prRaw === undefined ? 'no pull request number' : 'no repository'}), so there is nothing to comment on. Pass --pr N --repo OWNER/NAME to comment anyway.\n`);
    return 0;
  }
  if (!/^[1-9]\d{0,9}$/.test(prRaw)) throw new PrUsageError(`--pr: expected a pull request number, got "${prRaw}"`);
  if (!/^[\w.-]+\/[\w.-]+$/.test(repository)) throw new PrUsageError(`--repo: expected OWNER/NAME, got "${repository}"`);
  const sha = commitOf(ctx, v.commit);
  const baseBranch = baseOf(ctx, v.base);
  const waitS = waitOf(ctx, v.wait);

  let body: Awaited<ReturnType<typeof commentBody>>;
  try {
    body = await commentBody(ctx, sha, baseBranch, waitS);
  } catch (err) {
    if (err instanceof RemoteError) return remoteFailure(ctx, v.strict, `no comment posted: ${err.message}`);
    throw err;
  }
  if (!body) return notIngested(ctx, v.strict, sha);

  const apiUrl = (ctx.env.GITHUB_API_URL?.trim() || DEFAULT_GITHUB_API).replace(/\/+$/, '');
  try {
    const r = await upsertComment({ apiUrl, token, repository, prNumber: Number(prRaw) }, body.markdown);
    const where = r.url ? ` ${r.url}` : ` (id ${r.id})`;
    ctx.out(`flakehouse comment: ${r.action === 'unchanged' ? 'comment already up to date' : `${r.action} comment`} on ${repository}#${prRaw}${where}\n`);
    return 0;
  } catch (err) {
    if (err instanceof RemoteError) return remoteFailure(ctx, v.strict, `no comment posted: ${err.message}`);
    throw err;
  }
}

async function badge(ctx: Context, args: string[]): Promise<number> {
  const { values: v } = flags(() => parseArgs({ args, strict: true, options: { variant: { type: 'string' }, json: { type: 'boolean' } } }));
  if (v.variant !== undefined && !BADGE_VARIANTS.includes(v.variant as BadgeVariant)) {
    throw new PrUsageError(`--variant: expected one of ${BADGE_VARIANTS.join(', ')}, got "${v.variant}"`);
  }
  const res = await api(ctx, '/v1/badges', badgesResponseSchema);
  if (!res.body) throw new Error('the server has no badge route (is it older than this CLI?)');
  const info = res.body;
  const publicUrl = ctx.env.SERVICE_PUBLIC_API_URL?.trim() || info.publicApiUrl || undefined;
  const baseUrl = (publicUrl ?? ctx.settings.endpoint).replace(/\/+$/, '');
  if (!publicUrl) ctx.warn(`SERVICE_PUBLIC_API_URL is not set: the badge URLs use ${baseUrl}, which must be reachable from wherever the README is read`);
  const dashboard = await dashboardProjectUrl(ctx, info.project);
  const badges = info.badges
    .filter((b) => v.variant === undefined || b.variant === v.variant)
    .map((b) => {
      const svg = `${baseUrl}${b.svg}`;
      const json = `${baseUrl}${b.json}`;
      const image = `![${b.label}](${svg})`;
      return { variant: b.variant, svg, json, shields: `https://img.shields.io/endpoint?url=${encodeURIComponent(json)}`, markdown: dashboard ? `[${image}](${dashboard}/flaky)` : image };
    });
  if (v.json) ctx.out(`${JSON.stringify({ project: info.project, badges }, null, 2)}\n`);
  else ctx.out(`${badges.map((b) => b.markdown).join('\n')}\n`);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// GitHub REST API: one sticky comment per pull request, found by its hidden marker.

interface GithubTarget {
  apiUrl: string;
  token: string;
  repository: string;
  prNumber: number;
}

const commentSchema = z.object({ id: z.number(), body: z.string().nullable().optional(), html_url: z.string().optional() });

async function github(t: GithubTarget, method: string, url: string, body?: unknown): Promise<{ json: unknown; link: string | null }> {
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${t.token}`,
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
        'user-agent': 'flakehouse-cli',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    throw new RemoteError(`cannot reach GitHub at ${t.apiUrl}: ${causeOf(err)}`);
  }
  const text = await res.text();
  const json = jsonOrUndefined(text);
  if (!res.ok) {
    const m = z.object({ message: z.string() }).safeParse(json);
    const hint = res.status === 403 || res.status === 404 ? ' (the token needs `pull-requests: write`; pull requests from forks get a read-only token)' : '';
    throw new RemoteError(`GitHub answered ${res.status} to ${method} ${new URL(url).pathname}: ${m.success ? m.data.message : text.slice(0, 200)}${hint}`);
  }
  return { json, link: res.headers.get('link') };
}

/** The `rel="next"` URL of a Link header, only on the API's own origin (the token goes with it). */
export function nextLink(link: string | null, apiUrl: string): string | null {
  if (!link) return null;
  for (const part of link.split(',')) {
    const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (m?.[1] && URL.canParse(m[1]) && new URL(m[1]).origin === new URL(apiUrl).origin) return m[1];
  }
  return null;
}

export async function upsertComment(t: GithubTarget, body: string): Promise<{ action: 'created' | 'updated' | 'unchanged'; id: number; url?: string }> {
  const repo = t.repository.split('/').map(encodeURIComponent).join('/');
  let url: string | null = `${t.apiUrl}/repos/${repo}/issues/${t.prNumber}/comments?per_page=100`;
  let existing: z.infer<typeof commentSchema> | undefined;
  for (let page = 0; url && page < MAX_COMMENT_PAGES && !existing; page++) {
    const res = await github(t, 'GET', url);
    const list = z.array(commentSchema).safeParse(res.json);
    if (!list.success) throw new RemoteError('GitHub sent an unexpected list of comments');
    existing = list.data.find((c) => isStickyComment(c.body));
    url = nextLink(res.link, t.apiUrl);
  }
  if (existing) {
    // Editing with the same text would only bump "edited" on the comment.
    if (existing.body?.trim() === body.trim()) return { action: 'unchanged', id: existing.id, url: existing.html_url };
    const res = await github(t, 'PATCH', `${t.apiUrl}/repos/${repo}/issues/comments/${existing.id}`, { body });
    const c = commentSchema.safeParse(res.json);
    return { action: 'updated', id: existing.id, url: c.success ? c.data.html_url : existing.html_url };
  }
  const res = await github(t, 'POST', `${t.apiUrl}/repos/${repo}/issues/${t.prNumber}/comments`, { body });
  const c = commentSchema.safeParse(res.json);
  if (!c.success) throw new RemoteError('GitHub sent an unexpected answer to the new comment');
  return { action: 'created', id: c.data.id, url: c.data.html_url };
}

/** A response body as JSON, or undefined when it is empty or not JSON (a proxy's HTML page). */
function jsonOrUndefined(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}

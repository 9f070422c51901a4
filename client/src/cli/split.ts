// `flakehouse split --total N --index I [--build-id ID] <files or globs…>`: prints the test files of
// shard I (0-based) of N, one per line, balanced by the files' recent durations (POST /v1/splits).
// stdout carries only the files, so `vitest run $(flakehouse split …)` works; notes go to stderr.
//
// Every shard of a build gets the same plan: the first call of the build stores it on the server
// and the others read it, keyed by the build id (--build-id, SERVICE_BUILD_ID, else the CI's own run
// id). A split never fails a build because of Flakehouse: when the server cannot be reached, refuses,
// or answers something unusable, the files are split by name (round-robin over the sorted list),
// which every shard computes alike, with a warning, and the exit code is 0.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ConfigError } from '../contract/config/errors.js';
import { MAX_SPLIT_TOTAL, coversExactly, splitByName } from '../contract/split.js';
import { detectCi, type CiDetection } from '../reporter/ci-detect.js';
import { repositoryRoot, relativePath } from '../reporter/collect.js';
import { expandReportPatterns } from '../reporter/expand-patterns.js';
import { loadReporterSettings } from '../reporter/settings.js';
import type { CliIo } from './io.js';
import { readRefusal } from './refusal.js';
import { UsageError } from './usage-error.js';

export const SPLIT_USAGE = 'usage: flakehouse split --total N --index I [--build-id ID] <test files or globs…>';

/** A split is on the critical path of every shard: wait this long for the plan, then split by name. */
const REQUEST_TIMEOUT_MS = 20_000;

const planSchema = z.object({
  planId: z.string().nullable(),
  source: z.enum(['created', 'stored', 'computed']),
  shards: z.array(z.array(z.string())),
  estimatedMs: z.array(z.number()),
  unknownFiles: z.array(z.string()),
  defaultMs: z.number(),
});
type Plan = z.output<typeof planSchema>;

/** The build id of this CI run: the provider's own run id, shared by every job (shard) of the run. */
export function buildIdFromCi(ci: CiDetection): string | undefined {
  // The run id alone, without GitHub's run attempt: "re-run failed jobs" then gets the plan the
  // first attempt stored, so the re-run shards run exactly the files the failed ones ran (with the
  // attempt in the key a re-run would be planned afresh and could skip or repeat files).
  return ci.provider !== 'local' && ci.runId ? `${ci.provider}:${ci.runId}` : undefined;
}

export async function splitCommand(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { total: { type: 'string' }, index: { type: 'string' }, 'build-id': { type: 'string' } }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`split: ${err instanceof Error ? err.message : String(err)}\n${SPLIT_USAGE}`);
  }
  const { values, positionals } = parsed;
  const total = intFlag('--total', values.total, 1, MAX_SPLIT_TOTAL);
  const index = intFlag('--index', values.index, 0, total - 1);
  if (positionals.length === 0) throw new UsageError(`split: name the test files to split (files or globs)\n${SPLIT_USAGE}`);
  const note = (line: string): void => void io.stderr.write(`flakehouse: ${line}\n`);
  const warn = (text: string): void =>
    void io.stderr.write(env.GITHUB_ACTIONS === 'true' ? `::warning title=Flakehouse split::${text.replace(/%/g, '%25').replace(/\r?\n/g, '%0A')}\n` : `flakehouse: warning: ${text}\n`);

  // Files: as given, or what a glob matches below cwd. A directory is not expanded: it would take
  // fixtures and helpers along with the tests; a glob says which files are tests.
  const patterns: string[] = [];
  for (const p of positionals) {
    if (fs.statSync(path.resolve(cwd, p), { throwIfNoEntry: false })?.isDirectory()) warn(`${JSON.stringify(p)} is a directory, skipped: name its test files with a glob, e.g. '${p.replace(/\/+$/, '')}/**/*.test.ts'`);
    else patterns.push(p);
  }
  const { files: absolute, unmatched } = expandReportPatterns(patterns, cwd);
  for (const p of unmatched) warn(`${JSON.stringify(p)} matched no file`);
  if (absolute.length === 0) throw new UsageError('split: no test file matched; nothing to split');

  // Printed relative to cwd (what the runner is given); sent relative to the repository root, the
  // way the reporters store file paths, so the server finds the files' history.
  const root = repositoryRoot(cwd);
  const printed = new Map<string, string>();
  for (const abs of absolute) printed.set(relativePath(abs, root).normalize('NFC'), toPosix(path.relative(cwd, abs)));
  const keys = [...printed.keys()];
  const print = (shard: readonly string[]): void => {
    const out = shard.map((k) => printed.get(k)!);
    if (out.length > 0) io.stdout.write(`${out.join('\n')}\n`);
  };

  const buildId = values['build-id']?.trim() || env.SERVICE_BUILD_ID?.trim() || buildIdFromCi(detectCi(env));
  if (!buildId) warn('no build id (no CI run id found; pass --build-id or set SERVICE_BUILD_ID): this shard is planned from the current timings and the plan is not shared with the other shards');

  const got = await fetchPlan({ env, cwd, body: { buildId: buildId ?? null, total, index, files: keys } });
  let plan: Plan | undefined;
  if (!got.ok) warn(`${got.problem}; splitting by file name instead`);
  else if (got.plan.shards.length !== total || !coversExactly(got.plan.shards, keys)) warn('Flakehouse answered a plan that does not hold exactly these files; splitting by file name instead');
  else plan = got.plan;

  if (!plan) {
    const shard = splitByName(keys, total)[index]!;
    note(`shard ${index} of ${total} (0-based): ${shard.length} of ${keys.length} files, split by name`);
    print(shard);
    return 0;
  }
  const shard = plan.shards[index]!;
  const how =
    plan.source === 'stored'
      ? `the plan an earlier shard of build ${buildId} stored`
      : plan.source === 'created'
        ? `a new plan for build ${buildId}, stored for its other shards`
        : 'a plan from the current timings, not stored';
  note(`shard ${index} of ${total} (0-based): ${shard.length} of ${keys.length} files, ~${seconds(plan.estimatedMs[index] ?? 0)} expected (slowest shard ~${seconds(Math.max(...plan.estimatedMs))}); ${how}`);
  if (plan.unknownFiles.length > 0) note(`${plan.unknownFiles.length} file(s) without recent history planned at the median, ${seconds(plan.defaultMs)} each`);
  if (shard.length === 0) warn(`shard ${index} has no file (${keys.length} files over ${total} shards)`);
  print(shard);
  return 0;
}

type Fetched = { ok: true; plan: Plan } | { ok: false; problem: string };

async function fetchPlan(opts: { env: NodeJS.ProcessEnv; cwd: string; body: { buildId: string | null; total: number; index: number; files: string[] } }): Promise<Fetched> {
  let endpoint: string;
  let token: string | undefined;
  try {
    ({ endpoint, token } = loadReporterSettings({ env: opts.env, cwd: opts.cwd }));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { ok: false, problem: `the reporter settings are invalid (${err.message})` };
  }
  if (!token) return { ok: false, problem: 'SERVICE_TOKEN is not set, so Flakehouse cannot be asked for a plan' };
  let res: Response;
  try {
    res = await fetch(`${endpoint}/v1/splits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(opts.body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    return { ok: false, problem: `cannot reach Flakehouse at ${endpoint} (${causeOf(err)})` };
  }
  if (!res.ok) {
    const r = await readRefusal(res);
    // Something else at that address may echo the Authorization header back.
    const detail = (r.ours ? `${r.code}${r.message ? `: ${r.message}` : ''}` : `${r.code} ${r.message}`).split(token).join('[token]').slice(0, 300);
    return { ok: false, problem: `Flakehouse refused the split (${res.status} ${detail.trim()})` };
  }
  const parsed = planSchema.safeParse(await res.json().catch(() => undefined));
  if (!parsed.success) return { ok: false, problem: `Flakehouse at ${endpoint} sent an unexpected answer to POST /v1/splits (is the server older than this CLI?)` };
  return { ok: true, plan: parsed.data };
}

function intFlag(name: string, raw: string | undefined, min: number, max: number): number {
  if (raw === undefined) throw new UsageError(`split: ${name} is required\n${SPLIT_USAGE}`);
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`split: ${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

function causeOf(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
  return cause ?? (err instanceof Error ? err.message : String(err));
}

function seconds(ms: number): string {
  return ms >= 60_000 ? `${(ms / 60_000).toFixed(1)} min` : `${(ms / 1000).toFixed(1)} s`;
}

function toPosix(p: string): string {
  return p.split(path.sep).join('/');
}

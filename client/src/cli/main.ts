// The `flakehouse` command of the client package: what runs on a CI machine or a laptop and talks
// HTTP to a Flakehouse server (reporting, the PR commands, the board, quarantine, SQL, export, the
// admin API, config). Exit codes: 0 ok, 1 failure, 2 usage or configuration error.
//
// The server's CLI (src/main/cli.ts, what bin/flakehouse.js runs) is this `main` with a CliHost:
// its own commands (`serve`, `validate`), its version, and what `config` adds on a server. The
// client package's bin (bin.ts) runs it without one, and those commands answer that they need the
// server.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../contract/config/errors.js';
import { resolveProjectConfig, type ProjectSettings } from '../contract/config/project-settings.js';
import { readServerAddress } from '../contract/config/server-address.js';
import type { LoadedServiceConfig } from '../contract/config/service-yml.js';
import type { RetentionWindows } from '../contract/retention.js';
import { SCOPES, type Scope } from '../contract/tokens.js';
import { loadServiceConfig } from '../reporter/service-config.js';
import { processIo, type CliIo } from './io.js';
import type { StoredSettingsReader } from './project-settings.js';
import { needsServer, UsageError } from './usage-error.js';

/** One command: its arguments after the name, the environment, the working directory, the streams; resolves to the exit code. */
export type CliCommand = (args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo) => Promise<number>;

/** What the server's CLI adds to the client's commands (src/main/cli.ts). */
export interface CliHost {
  /** Its own commands (`serve`, `validate`), by name. */
  commands: Readonly<Record<string, CliCommand>>;
  /** Their lines of the usage, listed before the client's. */
  usage: string;
  /** `flakehouse --version`: the version of the package the command came in. */
  version(): string;
  /** What `config` shows on a server: its own settings (redacted), and the keys it applies otherwise. */
  describeServer(env: NodeJS.ProcessEnv, cwd: string, loaded: LoadedServiceConfig): { server: unknown; effective: Record<string, EffectiveValue> };
  /** `config --project` when the server does not answer: the project's settings read from storage. */
  storedSettings: StoredSettingsReader;
  /** Errors of the caller's making besides UsageError and ConfigError (exit 2, the message alone). */
  isUsageError(err: unknown): boolean;
}

/** A key whose configured value this instance does not apply, and why (`ai.rca` without an AI provider). */
export interface EffectiveValue {
  value: unknown;
  reason: string;
}

/** The server's commands, which the client package leaves out. */
export const SERVER_COMMANDS = ['serve', 'validate'] as const;

const CLIENT_USAGE = `  config [--json] [--project SLUG] print the config file in use, whether a token is set, and the resolved config
                                   with each key's source; --project adds that project's settings layer
  project create SLUG [--name N]   create a project (admin API)
  token create --project SLUG --scopes ingest,read,quarantine [--json]
                                   create a project token, printed once (admin API)
  token revoke ID                  revoke a token (admin API)
  dead list [--limit N] [--cursor C] [--json] | show ID | requeue ID | drop ID
                                   jobs parked after their last attempt (admin API): list them, show one with its
                                   batch (JSON), send one back to the queue, or drop it (releases its idempotency key)
  identities merge-junit-twins --project SLUG [--dry-run] [--json]
                                   merge the project's tests stored twice, under the pre-fix JUnit reading and the
                                   reporters' names, into the reporters' one (admin API; the server also does it at start)
  report [--strict] [--root DIR] [--json] [--attach GLOB]… FILES|GLOBS…
                                   send JUnit XML reports as one run (SERVICE_TOKEN, SERVICE_ENDPOINT); exits 0
                                   on delivery problems (the run is buffered and replayed) unless --strict;
                                   --attach uploads matching files as artifacts of the tests they name
  run [--junit GLOB]… [--root DIR] [--attach GLOB]… -- <test command…>
                                   run the tests with their output streamed, report their results (the reporters'
                                   or the JUnit files the command wrote) and exit 0 when every failing test is
                                   quarantined (the muted failures are printed and stored as such); else, and when
                                   Flakehouse cannot be reached or there are no results, with the command's own code;
                                   --verify-new N [--verify-budget S] [--verify-max-new M] re-runs tests new to the base
                                   branch N times, --verify-fix [--verify-fix-runs N] the tests of "Fixes-flaky:" trailers
                                   (runner filters for vitest/jest/playwright/pytest, or --rerun 'cmd {file} {name}');
                                   a failed proof exits non-zero and blocks the gate
  summary [--commit SHA] [--base BRANCH] [--wait S] [--json] [--strict]
                                   print the pull request comment (markdown) for the commit CI detected
  comment [--commit SHA] [--pr N] [--repo OWNER/NAME] [--base BRANCH] [--wait S] [--strict]
                                   create or update the one Flakehouse comment on the pull request (GITHUB_TOKEN)
  gate [--base BRANCH] [--strictness new|any|off] [--commit SHA] [--wait S] [--json] [--strict]
                                   new failures versus known flakes; exits 1 only when the verdict is block
  badge [--variant health|flakes|quarantined|worst] [--json]
                                   print README badge markdown (SERVICE_PUBLIC_API_URL)
  export [--out FILE] [--json]     download the project's data as gzipped NDJSON (SERVICE_TOKEN with the read scope)
  sql ["SELECT …"] [--format table|csv|tsv|json|jsonl|FORMAT] [--admin] [--database DB]
                                   run a read-only SQL query (SERVICE_TOKEN with the sql scope, or --admin);
                                   an aligned table by default; the query from stdin when none is given
  flaky [--state flaky|broken|quarantined|new|fixed|healthy|all] [--limit N] [--sort S] [--file F] [--owner O] [--json]
                                   the board in the terminal, worst first (SERVICE_TOKEN with the read scope)
  quarantine TEST --reason "…" | --release | --auto [--json]
                                   quarantine a test by hand, release it, or hand it back to automatic quarantine;
                                   TEST is an id, a title or file::title (ambiguous: lists the candidates, exit 2)
  --version, -v                    print the version
  split --total N --index I [--build-id ID] FILES|GLOBS…
                                   print shard I's (0-based) test files, balanced by their recent durations; every
                                   shard of a build gets one plan (build id from the CI run); by name when unreachable
  summary, comment and gate wait up to --wait seconds for the commit's results (default 30 in CI, else 0) and
  exit 0 with a warning when Flakehouse or GitHub cannot be reached, unless --strict.`;

const ADMIN_NOTE = `The admin commands call the running server at SERVICE_ENDPOINT (default http://127.0.0.1:$SERVICE_PORT)
with SERVICE_ADMIN_TOKEN, or the token the server generated in <SERVICE_DATA_DIR>/admin-token.`;

/** `flakehouse help`: the host's commands (the server's) first, then the client's. */
export function usage(hostUsage = ''): string {
  return `usage: flakehouse <command> [options]\n\ncommands:\n${hostUsage ? `${hostUsage}\n` : ''}${CLIENT_USAGE}\n\n${ADMIN_NOTE}${hostUsage ? '' : `\n${SERVER_COMMANDS.join(' and ')} are the server's: run them where the Flakehouse server is installed.`}`;
}

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd(), io: CliIo = processIo(), host?: CliHost): Promise<number> {
  const [command, ...rest] = argv;
  try {
    const own = command !== undefined && host && Object.hasOwn(host.commands, command) ? host.commands[command] : undefined;
    if (own) return await own(rest, env, cwd, io);
    switch (command) {
      case 'serve':
      case 'validate':
        throw new UsageError(needsServer(`\`flakehouse ${command}\``));
      case 'config':
        return await config(rest, env, cwd, io, host);
      case 'project':
        return await project(rest, env, cwd, io);
      // Each command's module is loaded when it runs: `report` runs in every CI job and pays only
      // for what it uses (no OpenTelemetry SDK, no PR rules, no SQL).
      case 'report':
        return await (await import('./report.js')).report(rest, env, cwd, io);
      case 'run':
        return await (await import('./run.js')).runWrapped(rest, env, cwd, io);
      case 'token':
        return await token(rest, env, cwd, io);
      case 'dead':
        return await dead(rest, env, cwd, io);
      case 'identities':
        return await identities(rest, env, cwd, io);
      case 'summary':
      case 'comment':
      case 'gate':
      case 'badge':
        return await (await import('./pr.js')).prCommand(command, rest, env, cwd, io);
      case 'export':
        return await (await import('./export.js')).exportCommand(rest, env, cwd, io);
      case 'sql':
        return await (await import('./sql.js')).sqlCommand(rest, env, cwd, io);
      case 'split':
        return await (await import('./split.js')).splitCommand(rest, env, cwd, io);
      case 'flaky':
        return await (await import('./flaky.js')).flakyCommand(rest, env, cwd, io);
      case 'quarantine':
        return await (await import('./quarantine.js')).quarantineCommand(rest, env, cwd, io);
      case 'version':
      case '--version':
      case '-v':
        io.stdout.write(`${host ? host.version() : (await import('./version.js')).cliVersion()}\n`);
        return 0;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.stdout.write(`${usage(host?.usage)}\n`);
        return command === undefined ? 2 : 0;
      default:
        io.stderr.write(`flakehouse: unknown command "${command}"\n\n${usage(host?.usage)}\n`);
        return 2;
    }
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError || host?.isUsageError(err)) {
      io.stderr.write(`flakehouse: ${err instanceof Error ? err.message : String(err)}\n`);
      return 2;
    }
    io.stderr.write(`flakehouse: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

async function config(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo, host: CliHost | undefined): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean' }, project: { type: 'string' } }, strict: true });
  let loaded = loadServiceConfig({ env, cwd });
  let project: { slug: string; settingsFrom: 'api' | 'storage'; settings: ProjectSettings; retention: RetentionWindows } | undefined;
  if (values.project !== undefined) {
    // The project's settings layer between service.yml and the environment (cli/project-settings.ts).
    const base = loaded;
    const { fetchProjectSettings, ProjectSettingsError } = await import('./project-settings.js');
    let fetched;
    try {
      fetched = await fetchProjectSettings(env, cwd, values.project, base, host?.storedSettings);
    } catch (err) {
      if (err instanceof ProjectSettingsError) throw new UsageError(`config --project: ${err.message}`);
      throw err;
    }
    const resolved = resolveProjectConfig(base, fetched.settings);
    loaded = { ...base, config: resolved.config, sources: resolved.sources };
    project = { slug: values.project, settingsFrom: fetched.via, settings: fetched.settings, retention: resolved.retention };
  }
  // On a server: its own settings, and the keys it does not apply as configured.
  const onServer = host?.describeServer(env, cwd, loaded);
  const token = env.SERVICE_TOKEN;
  const { describeReporterSettings, loadReporterSettings } = await import('../reporter/settings.js');
  const { detectRunCi } = await import('../reporter/send.js');
  const reporter = describeReporterSettings(loadReporterSettings({ env, cwd, service: loaded }));
  const effective = onServer?.effective ?? {};
  const out = {
    file: loaded.file,
    token: token ? { present: true, value: redactToken(token) } : { present: false },
    config: loaded.config,
    sources: loaded.sources,
    effective,
    ...(project ? { project } : {}),
    ...(onServer ? { server: onServer.server } : {}),
    reporter,
    ci: detectRunCi(env),
  };
  if (values.json) io.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  else {
    io.stdout.write(`config file: ${out.file ?? '(none; defaults and environment only)'}\n`);
    io.stdout.write(`SERVICE_TOKEN: ${out.token.present ? `set (${out.token.value})` : 'not set'}\n`);
    if (project) io.stdout.write(`project settings: ${project.slug} (read from ${project.settingsFrom === 'api' ? 'the server' : 'storage'})\n`);
    for (const [key, source] of Object.entries(loaded.sources)) {
      const configured = JSON.stringify(getPath(loaded.config, key));
      const e = effective[key];
      io.stdout.write(e ? `  ${key} = ${JSON.stringify(e.value)}  (${source}: ${configured}; ${e.reason})\n` : `  ${key} = ${configured}  (${source})\n`);
    }
    io.stdout.write(`reporter:\n`);
    for (const [key, value] of Object.entries(out.reporter)) io.stdout.write(`  ${key} = ${JSON.stringify(value)}\n`);
    io.stdout.write(`CI detected: ${JSON.stringify(out.ci)}\n`);
  }
  return 0;
}

/** A token as `config` shows it: its first characters, never the secret. */
export function redactToken(token: string): string {
  return token.length <= 8 ? '[redacted]' : `${token.slice(0, 6)}…[redacted]`;
}

function getPath(obj: unknown, dotted: string): unknown {
  let cur: unknown = obj;
  for (const k of dotted.split('.')) cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[k] : undefined;
  return cur;
}

async function project(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'create') throw new UsageError('usage: flakehouse project create SLUG [--name NAME]');
  const { values, positionals } = parseArgs({ args: rest, options: { name: { type: 'string' }, json: { type: 'boolean' } }, allowPositionals: true, strict: true });
  const slug = positionals[0];
  if (!slug) throw new UsageError('usage: flakehouse project create SLUG [--name NAME]');
  const res = await adminCall(env, cwd, 'POST', '/v1/admin/projects', { slug, name: values.name });
  if (values.json) io.stdout.write(`${JSON.stringify(res)}\n`);
  else io.stdout.write(`created project ${String(res.slug)} (${String(res.id)})\n`);
  return 0;
}

async function token(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'revoke') {
    const id = rest[0];
    if (!id) throw new UsageError('usage: flakehouse token revoke ID');
    await adminCall(env, cwd, 'DELETE', `/v1/admin/tokens/${encodeURIComponent(id)}`);
    io.stdout.write(`revoked ${id}\n`);
    return 0;
  }
  if (sub !== 'create') throw new UsageError('usage: flakehouse token create --project SLUG --scopes ingest,read,quarantine [--json]');
  const { values } = parseArgs({ args: rest, options: { project: { type: 'string' }, scopes: { type: 'string' }, json: { type: 'boolean' } }, strict: true });
  if (!values.project) throw new UsageError('token create: --project SLUG is required');
  const scopes = (values.scopes ?? 'ingest').split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = scopes.filter((s) => !SCOPES.includes(s as Scope));
  if (unknown.length > 0) throw new UsageError(`token create: unknown scope ${unknown.join(', ')} (known: ${SCOPES.join(', ')})`);
  const res = await adminCall(env, cwd, 'POST', `/v1/admin/projects/${encodeURIComponent(values.project)}/tokens`, { scopes });
  if (values.json) io.stdout.write(`${JSON.stringify({ ...res, project: values.project })}\n`);
  else {
    io.stdout.write(`token for project ${values.project} with scopes ${(res.scopes as string[]).join(', ')} (id ${String(res.id)}); shown once:\n\n`);
    io.stdout.write(`  SERVICE_TOKEN=${String(res.token)}\n`);
  }
  return 0;
}

/** An item of GET /v1/admin/dead-jobs. */
interface DeadJobItem {
  id: string;
  projectId: string;
  projectSlug: string | null;
  source: string;
  attempts: number;
  executions: number;
  sizeBytes: number;
  diedAt: string;
  frozenLeaseId: string | null;
  lastError: string;
}

const DEAD_USAGE = 'usage: flakehouse dead list [--limit N] [--cursor C] [--json] | dead show ID | dead requeue ID | dead drop ID';

async function dead(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'list') {
    const { values } = parseArgs({ args: rest, options: { limit: { type: 'string' }, cursor: { type: 'string' }, json: { type: 'boolean' } }, strict: true });
    const query = new URLSearchParams();
    if (values.limit !== undefined) query.set('limit', values.limit);
    if (values.cursor !== undefined) query.set('cursor', values.cursor);
    const q = query.toString();
    const res = await adminCall(env, cwd, 'GET', `/v1/admin/dead-jobs${q ? `?${q}` : ''}`);
    if (values.json) {
      io.stdout.write(`${JSON.stringify(res)}\n`);
      return 0;
    }
    const items = res.items as DeadJobItem[];
    if (items.length === 0) {
      io.stdout.write('no dead jobs\n');
      return 0;
    }
    const rows = items.map((d) => [
      d.id,
      d.projectSlug ?? d.projectId,
      d.source,
      String(d.attempts),
      String(d.executions),
      String(d.sizeBytes),
      d.diedAt,
      d.frozenLeaseId ? `lease ${d.frozenLeaseId.slice(0, 8)}` : '',
      oneLine(d.lastError, 80),
    ]);
    io.stdout.write(table(['ID', 'PROJECT', 'SOURCE', 'ATTEMPTS', 'EXECUTIONS', 'BYTES', 'DIED', 'FROZEN', 'LAST ERROR'], rows));
    if (typeof res.nextCursor === 'string') io.stdout.write(`more: flakehouse dead list --cursor ${res.nextCursor}\n`);
    return 0;
  }
  const id = rest[0];
  if (!id || rest.length > 1 || (sub !== 'show' && sub !== 'requeue' && sub !== 'drop')) throw new UsageError(DEAD_USAGE);
  const path = `/v1/admin/dead-jobs/${encodeURIComponent(id)}`;
  if (sub === 'show') {
    io.stdout.write(`${JSON.stringify(await adminCall(env, cwd, 'GET', path), null, 2)}\n`);
    return 0;
  }
  const res = sub === 'requeue' ? await adminCall(env, cwd, 'POST', `${path}/requeue`) : await adminCall(env, cwd, 'DELETE', path);
  const ids = res.jobIds as string[];
  const lease = typeof res.frozenLeaseId === 'string' ? ` (frozen lease ${res.frozenLeaseId}: its dead jobs go together)` : '';
  io.stdout.write(`${sub === 'requeue' ? 'requeued' : 'dropped'} ${ids.join(', ')}${lease}\n`);
  if (sub === 'drop') io.stdout.write('idempotency keys released: the batches can be sent again\n');
  return 0;
}

const IDENTITIES_USAGE = 'usage: flakehouse identities merge-junit-twins --project SLUG [--dry-run] [--json]';

/** A pair of POST /v1/admin/identities/merge-junit-twins. */
interface TwinPairItem {
  from: { testIdentityId: string; filePath: string; suite: string; title: string };
  into: { testIdentityId: string; filePath: string; suite: string; title: string };
  quarantineCarried: boolean;
}

async function identities(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'merge-junit-twins') throw new UsageError(IDENTITIES_USAGE);
  const { values, positionals } = parseArgs({ args: rest, options: { project: { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } }, strict: true, allowPositionals: true });
  if (!values.project || positionals.length > 0) throw new UsageError(IDENTITIES_USAGE);
  const dryRun = values['dry-run'] === true;
  const query = new URLSearchParams({ project: values.project, dryRun: String(dryRun) });
  const res = await adminCall(env, cwd, 'POST', `/v1/admin/identities/merge-junit-twins?${query.toString()}`);
  if (values.json) {
    io.stdout.write(`${JSON.stringify(res)}\n`);
    return 0;
  }
  const pairs = res.pairs as TwinPairItem[];
  const name = (t: TwinPairItem['from']): string => `${t.filePath} | ${t.suite} | ${t.title}`;
  for (const p of pairs) io.stdout.write(`${name(p.from)}  →  ${name(p.into)}${p.quarantineCarried ? '  (quarantine carried)' : ''}\n`);
  io.stdout.write(dryRun ? `${pairs.length} pair(s) would be merged (dry run: nothing changed)\n` : `${String(res.merged)} pair(s) merged\n`);
  return 0;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

async function adminCall(env: NodeJS.ProcessEnv, cwd: string, method: string, urlPath: string, body?: unknown): Promise<Record<string, unknown>> {
  const settings = readServerAddress(env, cwd);
  const service = loadServiceConfig({ env, cwd });
  const base = (env.SERVICE_ENDPOINT || service.config.endpoint || `http://127.0.0.1:${settings.port || 8080}`).replace(/\/+$/, '');
  let admin = settings.adminToken;
  const file = path.join(settings.dataDir, 'admin-token');
  if (!admin && existsSync(file)) admin = readFileSync(file, 'utf8').trim();
  if (!admin) throw new UsageError(`no admin token: set SERVICE_ADMIN_TOKEN (or run the server once so it writes ${file})`);
  let res: Response;
  try {
    res = await fetch(`${base}${urlPath}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    throw new Error(`cannot reach the server at ${base}: ${(err as Error).message}. Is \`flakehouse serve\` running?`);
  }
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    /* non-JSON error page */
  }
  if (!res.ok) throw new Error(`${method} ${urlPath}: ${res.status} ${typeof json.error === 'string' ? json.error : ''} ${typeof json.message === 'string' ? json.message : text}`.trim());
  return json;
}

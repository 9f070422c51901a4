// CODEOWNERS and notification routing, synced on every report so the server attributes tests to
// owners and routes alerts as the repository says today. Both are best-effort: a failed sync is a
// warning, never a failed report.
import fs from 'node:fs';
import path from 'node:path';
import type { DeliveryOutcome } from './deliver.js';

/** Where GitHub and GitLab look, in their order. */
export const CODEOWNERS_LOCATIONS = ['CODEOWNERS', '.github/CODEOWNERS', 'docs/CODEOWNERS'] as const;
/** The server's limit for PUT /v1/codeowners. */
export const MAX_CODEOWNERS_CHARS = 200_000;

/**
 * The CODEOWNERS file to sync: the explicit one (SERVICE_CODEOWNERS_FILE), else the first of
 * CODEOWNERS_LOCATIONS found walking up from `rootDir`. The walk stops at the repository root
 * (the directory holding `.git`), since a CODEOWNERS above it belongs to something else.
 */
export function findCodeowners(rootDir: string): string | undefined {
  let dir = path.resolve(rootDir);
  for (;;) {
    for (const loc of CODEOWNERS_LOCATIONS) {
      const file = path.join(dir, loc);
      if (fs.statSync(file, { throwIfNoEntry: false })?.isFile()) return file;
    }
    if (fs.existsSync(path.join(dir, '.git'))) return undefined;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export type PutJson = (urlPath: string, body: unknown) => Promise<DeliveryOutcome>;

export interface SyncResult {
  /** What happened, for the log: `synced CODEOWNERS (…)`, or why not. */
  line: string;
  ok: boolean;
}

export async function syncCodeowners(put: PutJson, opts: { explicitFile: string | undefined; rootDir: string; cwd: string }): Promise<SyncResult | undefined> {
  const file = opts.explicitFile ?? findCodeowners(opts.rootDir);
  if (file === undefined) return undefined;
  const shown = path.relative(opts.cwd, file) || file;
  let content: string;
  try {
    content = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    const why = opts.explicitFile !== undefined ? ` (SERVICE_CODEOWNERS_FILE)` : '';
    return { ok: false, line: `warning: cannot read ${shown}${why}: ${code}; owners were not synced` };
  }
  if (content.trim().length > MAX_CODEOWNERS_CHARS) {
    return { ok: false, line: `warning: ${shown} is over ${MAX_CODEOWNERS_CHARS} characters; owners were not synced` };
  }
  // Only a file that exists, was read, and is empty gets here empty: the repository really says
  // "no owners", so clearing is deliberate (the server refuses empty content without allowEmpty).
  const empty = content.trim().length === 0;
  const res = await put(empty ? '/v1/codeowners?allowEmpty=true' : '/v1/codeowners', { content });
  if (!res.ok) return { ok: false, line: `warning: could not sync ${shown}: ${res.message}` };
  return { ok: true, line: empty ? `synced owners from ${shown} (empty: every owner cleared)` : `synced owners from ${shown}` };
}

/** Channels of service.yml → PUT /v1/notifications/routing (replaces the project's config channels). */
export async function syncRouting(put: PutJson, opts: { configFile: string | null; channels: readonly unknown[]; cwd: string }): Promise<SyncResult | undefined> {
  // Without a config file there is nothing to say about routing; sending [] would delete what a
  // config-bearing run synced earlier.
  if (opts.configFile === null) return undefined;
  const shown = path.relative(opts.cwd, opts.configFile) || opts.configFile;
  const res = await put('/v1/notifications/routing', { channels: opts.channels });
  if (!res.ok) return { ok: false, line: `warning: could not sync notification channels of ${shown}: ${res.message}` };
  return { ok: true, line: `synced ${opts.channels.length} notification channel(s) from ${shown}` };
}

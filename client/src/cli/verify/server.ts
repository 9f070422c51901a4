// The server side of `flakehouse run --verify-new` / `--verify-fix`: POST /v1/tests/known, which
// of the run's tests (by fingerprint) were seen on the base branch, and their test ids.
import { ConfigError } from '../../contract/config/errors.js';
import { loadReporterSettings } from '../../reporter/settings.js';

const TIMEOUT_MS = 15_000;

export interface KnownAnswer {
  ok: true;
  /** Fingerprints seen on the branch. */
  seen: Set<string>;
  /** Fingerprint → the server's test id (null: never ingested). */
  ids: Map<string, string | null>;
}

export type KnownResult = KnownAnswer | { ok: false; problem: string };

export async function fetchKnownTests(fingerprints: readonly string[], branch: string, ctx: { env: NodeJS.ProcessEnv; cwd: string }): Promise<KnownResult> {
  let settings;
  try {
    settings = loadReporterSettings({ env: ctx.env, cwd: ctx.cwd });
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, problem: `the reporter is misconfigured: ${err.message}` };
    throw err;
  }
  if (settings.token === undefined) return { ok: false, problem: 'SERVICE_TOKEN is not set' };
  let res: Response;
  try {
    res = await fetch(`${settings.endpoint}/v1/tests/known`, {
      method: 'POST',
      headers: { authorization: `Bearer ${settings.token}`, accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({ branch, fingerprints }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
      redirect: 'error',
    });
  } catch (err) {
    return { ok: false, problem: `cannot reach ${settings.endpoint}: ${(err as Error).message}` };
  }
  const text = await res.text();
  if (res.status !== 200) return { ok: false, problem: `${settings.endpoint} refused POST /v1/tests/known: ${res.status} ${text.slice(0, 300)}` };
  try {
    const body = JSON.parse(text) as { tests: { fingerprint: string; testIdentityId: string | null; seenOnBranch: boolean }[] };
    return {
      ok: true,
      seen: new Set(body.tests.filter((t) => t.seenOnBranch).map((t) => t.fingerprint)),
      ids: new Map(body.tests.map((t) => [t.fingerprint, t.testIdentityId])),
    };
  } catch (err) {
    return { ok: false, problem: `an answer of POST /v1/tests/known that is not JSON: ${(err as Error).message}` };
  }
}

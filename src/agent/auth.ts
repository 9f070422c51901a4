// Sender authentication of the agent, after the Collector's `bearertokenauth` extension: one token,
// SERVICE_AGENT_TOKEN (or one generated into <data dir>/agent-token), presented as
// `Authorization: Bearer <token>`. There are no projects here (no store): every sender is the
// agent's one principal, with the ingest scope, in the fixed project AGENT_PROJECT_ID; the gateway
// puts every forwarded run in the project of SERVICE_GATEWAY_TOKEN.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { Authenticator, bearer } from '../api/auth.js';
import { errors } from '../errors/catalogue.js';
import { sha256Hex } from '../../client/src/contract/ids.js';
import type { ProjectRepo, TokenPrincipal } from '../store/projects.js';

/**
 * The project id of every job the agent accepts. It names no project at the gateway (the
 * gateway's token does); the forwarding exporters seed their trace and span ids with it, so it
 * must never change between versions of the agent: a job re-sent after an upgrade keeps its ids.
 */
export const AGENT_PROJECT_ID = 'agent';

export const AGENT_TOKEN_FILE = 'agent-token';

const PRINCIPAL: TokenPrincipal = { tokenId: 'agent', projectId: AGENT_PROJECT_ID, scopes: ['ingest'] };

/**
 * The route table's authenticator (src/api/route.ts) with the agent's token in place of the
 * project tokens: token routes (ingest) take the agent token, admin routes the admin token.
 */
export class AgentAuthenticator extends Authenticator {
  private readonly digest: Buffer;

  constructor(token: string, adminToken: string | undefined) {
    // The project repository is only read by the two methods overridden below: there is none.
    super(null as unknown as ProjectRepo, adminToken);
    this.digest = Buffer.from(sha256Hex(token));
  }

  override async authenticate(header: string | undefined): Promise<TokenPrincipal> {
    const token = bearer(header);
    if (!token) throw errors.unauthorized();
    // Compared as digests of equal length, in constant time.
    if (!timingSafeEqual(Buffer.from(sha256Hex(token)), this.digest)) throw errors.unauthorized('the token is not this agent\'s (SERVICE_AGENT_TOKEN)');
    return PRINCIPAL;
  }

  override async authenticateHash(): Promise<TokenPrincipal> {
    // Dashboard sessions keep a token's hash; the agent has no dashboard.
    throw errors.unauthorized();
  }
}

/**
 * SERVICE_AGENT_TOKEN, else the token kept in <data dir>/agent-token (0600), generated and
 * announced once on the first start, as the daemon announces its bootstrap token.
 */
export function resolveAgentToken(opts: { token?: string; dataDir: string; announce: (line: string) => void; logger: Logger }): { token: string; file?: string } {
  if (opts.token) return { token: opts.token };
  const file = path.join(opts.dataDir, AGENT_TOKEN_FILE);
  if (existsSync(file)) {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept) return { token: kept, file };
    opts.logger.warn({ file }, 'the agent token file is empty: generating a new token');
  }
  // The form of a project token: a log line that holds it by mistake is redacted (src/domain/log-redaction.ts).
  const token = `fh_${randomBytes(24).toString('hex')}`;
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  opts.announce('');
  opts.announce('Flakehouse agent: generated the token senders present (Authorization: Bearer …):');
  opts.announce('');
  opts.announce(`  SERVICE_TOKEN=${token}`);
  opts.announce('');
  opts.announce(`It is shown once and saved to ${file} (mode 0600); set SERVICE_AGENT_TOKEN to choose your own.`);
  opts.announce('');
  return { token, file };
}

/** SERVICE_ADMIN_TOKEN, else the one kept in <data dir>/admin-token (0600), as the daemon does: the CLI's admin commands read it. */
export function resolveAdminToken(opts: { token?: string; dataDir: string; logger: Logger }): string {
  if (opts.token) return opts.token;
  const file = path.join(opts.dataDir, 'admin-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const token = `fha_${randomBytes(24).toString('hex')}`;
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  opts.logger.info({ file }, 'generated an admin token (set SERVICE_ADMIN_TOKEN to choose your own)');
  return token;
}

// Bearer-token authentication. Tokens are looked up by SHA-256; results are cached briefly so the
// ingest hot path does not query storage per request (a revocation takes effect within the TTL,
// at once in the process that revoked it).
import { timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../../client/src/contract/ids.js';
import type { ProjectRepo, Scope, TokenPrincipal } from '../store/projects.js';
import { TOKEN_RE } from '../../client/src/contract/tokens.js';
import { errors } from '../errors/catalogue.js';

const TTL_MS = 10_000;
const MAX_CACHE = 10_000;

export class Authenticator {
  private readonly cache = new Map<string, { principal: TokenPrincipal | null; expires: number }>();

  constructor(
    private readonly projects: ProjectRepo,
    private readonly adminToken: string | undefined,
  ) {}

  async authenticate(header: string | undefined): Promise<TokenPrincipal> {
    const token = bearer(header);
    if (!token || !TOKEN_RE.test(token)) throw errors.unauthorized();
    return this.authenticateHash(sha256Hex(token));
  }

  /** The principal of the token with this SHA-256 (a dashboard session keeps only the hash): 401 once it is revoked. */
  async authenticateHash(hash: string): Promise<TokenPrincipal> {
    const now = Date.now();
    const hit = this.cache.get(hash);
    let principal: TokenPrincipal | null;
    if (hit && hit.expires > now) principal = hit.principal;
    else {
      const row = await this.projects.principalByHash(hash);
      principal = row && !row.revoked ? { tokenId: row.tokenId, projectId: row.projectId, scopes: row.scopes } : null;
      if (this.cache.size >= MAX_CACHE) this.cache.clear();
      this.cache.set(hash, { principal, expires: now + TTL_MS });
    }
    if (!principal) throw errors.unauthorized('the token is unknown or revoked');
    return principal;
  }

  /** Drops cached principals of a token (after revoke) so the change is immediate here. */
  forget(tokenId: string): void {
    for (const [hash, entry] of this.cache) if (entry.principal?.tokenId === tokenId) this.cache.delete(hash);
  }

  /** Whether `token` is the admin token (false when the admin API is disabled). */
  isAdminToken(token: string): boolean {
    return this.adminToken !== undefined && safeEqual(token, this.adminToken);
  }

  authenticateAdmin(header: string | undefined): void {
    const token = bearer(header);
    if (!this.adminToken) throw errors.unauthorized('the admin API is disabled: set SERVICE_ADMIN_TOKEN');
    if (!token || !safeEqual(token, this.adminToken)) throw errors.unauthorized();
  }
}

/** A token with no scopes is ingest-only (docs/contract.md §5). */
export function effectiveScopes(p: TokenPrincipal): Scope[] {
  return p.scopes.length === 0 ? ['ingest'] : p.scopes;
}

export function requireAnyScope(p: TokenPrincipal, scopes: readonly Scope[]): void {
  const have = effectiveScopes(p);
  if (!scopes.some((s) => have.includes(s))) throw errors.insufficientScope(scopes.join('" or "'));
}

/** The token of an `Authorization: Bearer <token>` header. */
export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(sha256Hex(a));
  const bb = Buffer.from(sha256Hex(b));
  return timingSafeEqual(ab, bb);
}
